"""The shell script one test run is, the same in every runner (bubblewrap, docker, SWE-ReX), and what is
staged for it: the candidate graded in the SWE-bench harness's order, its test infrastructure
neutralised.

In order, inside the sandbox, in the tree's root:

1. the variables of :data:`~agentic_rubrics.test_infra.PYTEST_ENV` are unset and plugin autoload is
   turned off (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``);
2. the base version of every path to put back (``restore.list``: the candidate's
   :func:`~agentic_rubrics.test_infra.neutralised_paths` and every file the test patch touches) is
   kept aside;
3. the candidate is applied like the harness (``git apply``, then ``patch --batch --fuzz=5 -p1``);
4. when ``patch`` applied it (``git apply`` reads the diff as :mod:`~agentic_rubrics.test_infra`
   does, and writes nothing when it fails), a file pytest or Python reads at start-up
   (:data:`~agentic_rubrics.test_infra.START_UP_NAMES`, a top-level module or package) that ``patch``
   wrote, changed or removed although the diff does not name it (``named.list``: a diff read
   otherwise) refuses the candidate (``tampers_with_tests``);
5. every path of ``restore.list`` is put back to its base version, removed when the base has none: the
   repository's own conftests and config load, the candidate's do not, and the test patch's files are
   as the harness's ``git checkout <base> -- <files>`` / ``rm -f <new files>`` leaves them
   (``swebench/harness/test_spec/python.py``, ``make_eval_script_list_py``);
6. the test files are copied into the graded folder (:data:`~agentic_rubrics.test_infra.GRADED_FOLDER`
   at the root, or where the repository's runner finds it, :mod:`~agentic_rubrics.sandbox.testlayout`) (after the
   candidate, as the harness adds its tests after it), and the test patch applied;
7. the tests run, their status lines and the output's tail are printed.

A candidate whose diff touches the graded folder is refused before anything runs
(:func:`plan`: ``tampers_with_tests``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

from agentic_rubrics.test_infra import (
    GRADED_FOLDER,
    PYTEST_ENV,
    START_UP_NAMES,
    InfraKind,
    infra_changes,
    kinds_of,
    neutralised_paths,
    touched_paths,
)

STAGE = "/stage"
"""Where the staged files (patches, path lists, tests) are bound read-only inside a bubblewrap sandbox."""
TAMPERS = "tampers_with_tests"
"""The reason of a candidate refused for what it does to the tests (the graded folder, or a start-up
file its diff does not name)."""
_NAMES = " -o ".join(f"-name {shlex.quote(n)}" for n in START_UP_NAMES)
_SCRIPT = """set -u
cd {workdir}
root=$(pwd -P)
unset {unset}
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
keep={keep}
rm -rf "$keep" && mkdir -p "$keep/base" || {{ echo "@@STAGE failed"; exit 0; }}
startup_files() {{
  {{ find . \\( -name .git -o -name node_modules \\) -prune -o \\( -type f -o -type l \\) \\( {names} \\) -print
    find . -maxdepth 1 \\( -type f -o -type l \\) -name '*.py' -print
    find . -mindepth 2 -maxdepth 2 \\( -type f -o -type l \\) -name __init__.py -print
  }} 2>/dev/null | LC_ALL=C sort -u | while IFS= read -r f; do
    printf '%s %s\\n' "$(cksum < "$f" 2>/dev/null | tr ' ' -)" "$f"
  done
}}
inside() {{ case "$(realpath -m -- "$1")" in "$root"/*) return 0;; esac; return 1; }}
while IFS= read -r -d '' p; do
  if inside "$p" && {{ [ -e "$p" ] || [ -L "$p" ]; }}; then
    mkdir -p -- "$keep/base/$(dirname -- "$p")" && cp -RP -- "$p" "$keep/base/$p" || {{ echo "@@STAGE failed"; exit 0; }}
  fi
done < {stage}/restore.list
applied=none
if [ -s {stage}/candidate.diff ]; then
  if git apply --whitespace=nowarn {stage}/candidate.diff >/dev/null 2>&1; then applied=git_apply
  else
    startup_files | LC_ALL=C sort > "$keep/before"
    patch --batch --fuzz=5 -p1 -i {stage}/candidate.diff >/dev/null 2>&1 || {{ echo "@@APPLY failed"; exit 0; }}
    applied=patch_fuzz
    startup_files | LC_ALL=C sort > "$keep/after"
    LC_ALL=C comm -3 "$keep/before" "$keep/after" | sed 's/^\\t//' | cut -d' ' -f2- | LC_ALL=C sort -u > "$keep/changed"
    while IFS= read -r f; do
      grep -qxzF -- "${{f#./}}" {stage}/named.list || {{ echo "@@APPLY unlisted"; exit 0; }}
    done < "$keep/changed"
  fi
fi
while IFS= read -r -d '' p; do
  inside "$p" || continue
  rm -rf -- "$p"
  if [ -e "$keep/base/$p" ] || [ -L "$keep/base/$p" ]; then
    mkdir -p -- "$(dirname -- "$p")" && cp -RP -- "$keep/base/$p" "$p" || {{ echo "@@STAGE failed"; exit 0; }}
  fi
done < {stage}/restore.list
{copy_tests}if [ -s {stage}/test.diff ]; then
  git apply --whitespace=nowarn {stage}/test.diff >/dev/null 2>&1 || {{ echo "@@TESTPATCH failed"; exit 0; }}
fi
echo "@@APPLY $applied"
{exports}{command} > {log} 2>&1
echo "@@EXIT $?"
echo "@@TIMES"
times
grep -E {lines} {log} | head -n 20000 | cut -c1-400
echo "@@TAIL"
tail -c {tail} {log}
"""
_COPY_TESTS = (
    'rm -rf {dir} && mkdir -p "$(dirname {dir})" && cp -r {stage}/tests {dir} 2>/dev/null'
    ' || {{ echo "@@STAGE failed"; exit 0; }}\n'
)


@dataclass(frozen=True)
class RunPlan:
    """What one candidate's run puts back, what its diff names, and whether it runs at all."""

    infra: tuple[InfraKind, ...]
    """The kinds of test infrastructure the candidate changes (what its rows record)."""
    restore: tuple[str, ...]
    """The paths put back to their base version after the candidate is applied."""
    named: tuple[str, ...]
    """Every path the candidate's diff names."""
    refused: str | None = None
    """``tampers_with_tests`` when the candidate touches the graded folder (it is not run)."""


def plan(
    patch: str,
    *,
    graded: bool,
    test_patch: str = "",
    read_base: Callable[[str], str | None] | None = None,
) -> RunPlan:
    """The run's plan for ``patch`` (``graded``: test files are copied into the graded folder;
    ``read_base``: a base-tree file's text, to place a config file's hunks in their sections)."""
    changes = infra_changes(patch, read_base)
    kinds = tuple(kinds_of(changes))
    restore = dict.fromkeys([*neutralised_paths(changes), *touched_paths(test_patch)])
    refused = TAMPERS if graded and "graded_folder" in kinds else None
    return RunPlan(kinds, tuple(restore), tuple(touched_paths(patch)), refused)


def staged(patch: str, test_patch: str, run_plan: RunPlan) -> dict[str, bytes]:
    """The stage's files but the tests (name -> content): the patches and the two path lists
    (NUL-separated: a path may hold any character but NUL)."""

    def listed(paths: tuple[str, ...]) -> bytes:
        return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)

    return {
        "candidate.diff": patch.encode("utf-8", "surrogateescape"),
        "test.diff": test_patch.encode("utf-8", "surrogateescape"),
        "restore.list": listed(run_plan.restore),
        "named.list": listed(run_plan.named),
    }


def script_text(
    command: str,
    lines: str,
    *,
    tail: int,
    tests: bool,
    stage: str,
    workdir: str,
    log: str,
    keep: str,
    exports: str = "",
    folder: str = GRADED_FOLDER,
) -> str:
    """The script (module docstring): ``command`` in the tree's root, its log at ``log``, the
    lines matching ``lines`` (``grep -E``) and ``tail`` characters printed; ``keep``: a folder the
    run may write its copies in; ``tests``: copy ``<stage>/tests`` into the graded folder
    (``folder``: where the runner finds it, :mod:`~agentic_rubrics.sandbox.testlayout`)."""
    copy = _COPY_TESTS.format(stage=stage, dir=shlex.quote(folder)) if tests else ""
    return _SCRIPT.format(
        workdir=shlex.quote(workdir),
        unset=" ".join(PYTEST_ENV),
        keep=shlex.quote(keep),
        names=_NAMES,
        stage=stage,
        copy_tests=copy,
        exports=exports,
        command=command,
        log=shlex.quote(log),
        lines=shlex.quote(lines),
        tail=tail,
    )


def tree_reader(tree: object, max_bytes: int = 1 << 20) -> Callable[[str], str | None]:
    """A reader of base-tree files under ``tree`` (a local path), never outside it, ``None`` for a
    file it cannot read or one over ``max_bytes``."""
    from pathlib import Path

    base = Path(str(tree)).resolve()

    def read(path: str) -> str | None:
        try:
            target = (base / path).resolve()
            if not target.is_relative_to(base) or target.stat().st_size > max_bytes:
                return None
            return target.read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            return None

    return read
