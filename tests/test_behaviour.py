"""A candidate that changes no behaviour of the program: its normal form, read on the tree or from the
diff, its verdicts (every functional item checked 0, ``no_behaviour_change``), its rank (with the empty
patches) and every guarded selector's pick."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.judge.judges import ChecksJudge
from agentic_rubrics.pipeline.verifiers.rubric_judging import judge_task
from agentic_rubrics.rank.scoring import TIER_EMPTY_PATCH, score_candidate
from agentic_rubrics.rank.selectors import get_selector
from agentic_rubrics.rank.selectors.guard import fixes_nothing, guarded
from agentic_rubrics.rubric.behaviour import diff_behaviour, tree_behaviour
from agentic_rubrics.rubric.checks_repo import RepoAnalyses, decide
from agentic_rubrics.rubric.file import parse_rubric
from agentic_rubrics.rubric.guard import guard_of
from agentic_rubrics.rubric.postimage import analyze_patch
from agentic_rubrics.rubric.postimage.behaviour import compare, fingerprints
from agentic_rubrics.types import Candidate, Check, Rubric, Task, Verdict

from .conftest import git

MakeRepo = Callable[[dict[str, bytes | str]], tuple[Path, Callable[..., str]]]

BASE = '''\
import os


def fold(a, b=1):
    """Add b to a."""
    total = a + b
    if total > 3:
        return total
    return os.path.join("x", str(total))


class Calendar:
    def roll(self, day):
        return day
'''
LINE = "    total = a + b\n"

# each of these changes nothing a test or a user can observe: its normal form is the base's
NO_OPS = {
    "pass": LINE.replace("    total", "    pass\n    total"),
    "issue_words": '    "fold breaks on negative numbers: fixed"\n' + LINE,
    "ellipsis": "    ...\n" + LINE,
    "comment": "    total = a + b  # the fix\n",
    "reformat": "    total = (\n        a\n        + b\n    )\n",
    "dead_branch": LINE + "    if False:\n        total = abs(total)\n",
    "folded_branch": LINE + "    if 0 > 1 and not 2 - 2 == 0:\n        total = abs(total)\n",
    "type_checking": "    if TYPE_CHECKING:\n        import sys\n" + LINE,
    "while_false": "    while 0:\n        a = -a\n" + LINE,
    "dead_store": "    unused = 5\n" + LINE,
    "unused_inner_def": "    def helper():\n        return abs(a)\n" + LINE,
    "empty_try": "    try:\n        pass\n    except Exception:\n        raise ValueError\n" + LINE,
    "empty_if": "    if a is None:\n        pass\n" + LINE,
    "assert_true": "    assert True\n" + LINE,
    "empty_loop": "    for x in ():\n        a = x\n" + LINE,
    "constant_ifexp": "    total = a + b if 1 else a - b\n",
}
# each of these changes what the code does
REAL = {
    "call": "    total = abs(a) + b\n",
    "guard": "    if a is None:\n        a = 0\n" + LINE,
    "assert": "    assert a >= 0\n" + LINE,
    "print": "    print(a)\n" + LINE,
    "branch_on_a_value": "    if a > 1:\n        a = 1\n" + LINE,
    "attribute_statement": "    a.real\n" + LINE,
    "store_then_read": "    unused = 5\n    total = a + b + unused\n",
}


def _with(line: str) -> str:
    return BASE.replace(LINE, line)


@pytest.mark.parametrize("name", sorted(NO_OPS))
def test_a_change_without_effect_leaves_the_normal_form_as_it_was(name: str) -> None:
    found = compare(BASE, _with(NO_OPS[name]))
    assert found.changed is False and found.symbols == ()


@pytest.mark.parametrize("name", sorted(REAL))
def test_a_change_of_behaviour_is_one_and_names_its_definition(name: str) -> None:
    assert compare(BASE, _with(REAL[name])) == compare(BASE, _with(REAL[name]))
    found = compare(BASE, _with(REAL[name]))
    assert found.changed is True and found.symbols == ("fold",)


def test_renaming_a_local_is_the_same_code_but_a_parameter_is_not() -> None:
    assert compare(BASE, BASE.replace("total", "subtotal")).changed is False
    renamed = BASE.replace("(a, b=1)", "(x, b=1)").replace("a + b", "x + b")
    assert compare(BASE, renamed).symbols == ("fold",)
    # a function that reads its own frame keeps its names: renaming one may change what it does
    frame = BASE.replace(LINE, "    total = a + b\n    print(locals())\n")
    assert compare(frame, frame.replace("total", "subtotal")).changed is True


def test_module_level_definitions_and_default_values_are_behaviour() -> None:
    assert compare(BASE, BASE + "\n\ndef extra():\n    return 2\n").symbols == ("<module>", "extra")
    assert compare(BASE, BASE.replace("b=1", "b=2")).symbols == ("fold",)
    assert compare(BASE, BASE.replace("return day", "return day + 1")).symbols == ("Calendar.roll",)
    assert compare(BASE, BASE.replace("import os\n", "import os\nimport sys\n")).symbols == (
        "<module>",
    )
    # a module-level store is never dead: another module may import the name
    assert compare(BASE, BASE + "\nFLAG = False\n").changed is True


def test_what_cannot_be_parsed_is_not_decided() -> None:
    assert compare(BASE, BASE + "\ndef broken(:\n").changed is None
    assert compare("x = 1\n", "x = \0\n").changed is None
    deep = "x = " + "(" * 100_000 + ")" * 100_000 + "\n"
    assert fingerprints(deep) is None
    assert compare(None, "'''A new module that only documents.'''\n").changed is False
    assert compare(BASE, None).changed is True


# --------------------------------------------------------------------------- from the diff alone


def _diff(path: str, removed: list[str], added: list[str]) -> str:
    body = "".join(f"-{x}\n" for x in removed) + "".join(f"+{x}\n" for x in added)
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,{len(removed) + 1} +1,{len(added) + 1} @@\n def f():\n{body}"
    )


def test_the_diff_alone_proves_only_comments_blank_lines_pass_and_layout() -> None:
    assert diff_behaviour(_diff("pkg/m.py", [], ["    pass"])) is False
    assert diff_behaviour(_diff("pkg/m.py", [], ["    # fixed", ""])) is False
    assert diff_behaviour(_diff("pkg/m.py", ["    x = a+b"], ["    x = a + b  # spaced"])) is False
    assert diff_behaviour(_diff("pkg/m.py", ["    x = a + b"], ["    x = a - b"])) is True
    # the same line moved out of its block (a resolved SWE-bench fix did exactly this)
    moved = _diff("pkg/m.py", ["        notify()"], ["    # always notify", "    notify()"])
    assert diff_behaviour(moved) is True
    # the same lines in another order: a resolved SWE-bench fix (django-16116) moved an early exit
    # before the writes, which the added and removed lines alone read as no change
    reordered = (
        "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n"
        "@@ -1,4 +1,4 @@\n def f():\n+    if check:\n+        exit(1)\n     write()\n"
        "-    if check:\n-        exit(1)\n"
    )
    assert diff_behaviour(reordered) is True
    # a string may be a docstring or an argument: the diff cannot tell, so it counts
    assert diff_behaviour(_diff("pkg/m.py", [], ['    "fixed the bug"'])) is True
    assert diff_behaviour(_diff("tests/test_m.py", [], ["    assert False"])) is False
    assert diff_behaviour(_diff("docs/usage.rst", [], ["Fixed."])) is False
    assert diff_behaviour(_diff("pkg/data.json", [], ['  "k": 1'])) is None
    assert diff_behaviour("not a diff at all") is None


# --------------------------------------------------------------------------- on the tree


@pytest.fixture
def tree(git_repo: MakeRepo) -> tuple[Path, Callable[[dict[str, str]], str]]:
    repo, diff = git_repo(
        {"pkg/__init__.py": "", "pkg/mod.py": BASE, "tests/test_mod.py": "def test(): pass\n"}
    )

    def edit(files: dict[str, str]) -> str:
        for rel, content in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(content)
        patch = diff()
        git(repo, "reset", "-q", "--hard")
        git(repo, "clean", "-qfd")
        return patch

    return repo, edit


def test_on_the_tree_tests_and_docs_are_not_the_program(
    tree: tuple[Path, Callable[[dict[str, str]], str]],
) -> None:
    repo, edit = tree
    noop = edit({"pkg/mod.py": _with(NO_OPS["issue_words"]), "README.md": "Fixed.\n"})
    result = analyze_patch(repo, noop)
    assert [f.behaviour for f in result.files if f.python] == ["unchanged"]
    assert tree_behaviour(result) is False
    tests_only = edit({"tests/test_mod.py": "def test(): assert False\n"})
    assert tree_behaviour(analyze_patch(repo, tests_only)) is False
    real = edit({"pkg/mod.py": _with(REAL["call"])})
    assert tree_behaviour(analyze_patch(repo, real)) is True
    data = edit({"pkg/mod.py": _with(NO_OPS["pass"]), "pkg/table.csv": "a,b\n"})
    assert tree_behaviour(analyze_patch(repo, data)) is None  # who reads the data is not known
    moved = edit({"pkg/mod.py": ""}) and None  # a rename changes the module's import name
    git(repo, "mv", "pkg/mod.py", "pkg/moved.py")
    moved = git(repo, "diff", "--cached", "-M")
    git(repo, "reset", "-q", "--hard")
    assert tree_behaviour(analyze_patch(repo, moved)) is True


def test_the_changes_behaviour_check_reads_the_definition_not_the_lines(
    tree: tuple[Path, Callable[[dict[str, str]], str]],
) -> None:
    repo, edit = tree

    def check(patch: str, arg: Any, **scope: Any) -> int | None:
        got = decide(
            Check.model_validate({"changes_behaviour": arg, **scope}), analyze_patch(repo, patch)
        )
        return got.value

    noop, real = (
        edit({"pkg/mod.py": _with(NO_OPS["pass"])}),
        edit({"pkg/mod.py": _with(REAL["call"])}),
    )
    # changes_function says the pass touches fold; changes_behaviour says it changes nothing
    touched = decide(
        Check.model_validate({"changes_function": "pkg/mod.py::fold"}), analyze_patch(repo, noop)
    )
    assert touched.value == 1
    assert check(noop, "pkg/mod.py::fold") == 0 and check(real, "pkg/mod.py::fold") == 1
    assert check(real, ["pkg/mod.py::Calendar.roll", "pkg/mod.py::fold"]) == 1
    assert check(real, "pkg/mod.py::Calendar") == 0
    assert check(noop, True) == 0 and check(real, True) == 1
    assert check(real, True, not_in="pkg/*") == 0


# --------------------------------------------------------------------------- verdicts and rank

RUBRIC = """\
metadata: {task_summary: t, underlying_bug: b}
axes:
  file_change_rubrics:
    - {id: FC1, description: Modifies pkg/mod.py, weight: 3, check: {touches: pkg/mod.py}}
    - {id: FC2, description: Changes fold, weight: 2, check: {changes_function: 'pkg/mod.py::fold'}}
  spec_alignment_rubrics:
    - {id: SA1, description: Handles negative values in fold, weight: 3}
  integrity_rubrics:
    - {id: IN1, description: Applies to the base tree, weight: 3, gate: true, check: {applies: true}}
    - {id: IN2, description: Leaves the tests alone, weight: 2, check: {not_touches: tests/}}
  runtime_rubrics:
    - {id: RT1, description: Parses, weight: 3, check: {parses: true}}
"""


class RecordingJudge:
    """A judge that answers 1 for every item it is asked, and records which items it was asked."""

    name = "recording"

    def __init__(self) -> None:
        self.asked: dict[str, list[str]] = {}

    async def judge(
        self,
        *,
        instance_id: str,
        issue: str,
        rubric: Rubric,
        candidate_id: str,
        patch: str,
        repeat: int = 0,
    ) -> list[Verdict]:
        self.asked[candidate_id] = [i.id for _, i in rubric.items()]
        return await ChecksJudge().judge(
            instance_id=instance_id,
            issue=issue,
            rubric=rubric,
            candidate_id=candidate_id,
            patch=patch,
            repeat=repeat,
        )


def _score(rubric: Rubric, rows: list[Verdict], cid: str, patch: str) -> Any:
    mine = [v for v in rows if v.candidate_id == cid]
    return score_candidate(
        rubric, mine, instance_id="t-1", candidate_id=cid, empty_patch=not patch.strip()
    )


@pytest.mark.parametrize("basis", ["tree", "diff"])
def test_a_no_op_fails_every_functional_item_and_ranks_with_the_empty_patches(
    tree: tuple[Path, Callable[[dict[str, str]], str]], basis: str
) -> None:
    repo, edit = tree
    rubric, _ = parse_rubric(RUBRIC, "rubrics.yaml")
    real = edit({"pkg/mod.py": _with(REAL["guard"])})
    noop = edit({"pkg/mod.py": _with(NO_OPS["pass"])})
    task = Task(
        instance_id="t-1",
        problem_statement="fold breaks on negative numbers",
        candidates=[Candidate(id="real", patch=real), Candidate(id="noop", patch=noop)],
    )
    judge = RecordingJudge()
    analyses = RepoAnalyses(repo) if basis == "tree" else None
    rows = asyncio.run(
        judge_task(task, rubric, judge, repeats=1, concurrency=2, repository=analyses)
    )
    assert asyncio.run(guard_of(noop, analyses)).basis == basis
    # the no-op is asked only what it may harm; its functional items are checked 0 with the reason
    assert judge.asked["noop"] == ["IN1", "IN2"] and len(judge.asked["real"]) == 6
    functional = {
        v.item_id: v for v in rows if v.candidate_id == "noop" and v.axis != "integrity_rubrics"
    }
    assert set(functional) == {"FC1", "FC2", "SA1", "RT1"}
    assert {(v.origin, v.value, v.reason) for v in functional.values()} == {
        ("checked", 0, "no_behaviour_change")
    }
    nothing, fix = _score(rubric, rows, "noop", noop), _score(rubric, rows, "real", real)
    assert nothing.no_behaviour_change and nothing.decision == "reject"
    assert nothing.reasons == ["no_behaviour_change"] and nothing.rank_tier == TIER_EMPTY_PATCH
    assert not fix.no_behaviour_change and fix.rank_value > nothing.rank_value


class _Ranked:
    """A task as a selector reads it at report time."""

    def __init__(self, scores: dict[str, Any], baselines: dict[str, Any]) -> None:
        self.instance_id = "t-1"
        self.scores = scores
        self.baselines = baselines


def test_every_selector_but_random_ranks_what_fixes_nothing_last(
    tree: tuple[Path, Callable[[dict[str, str]], str]],
) -> None:
    rubric, _ = parse_rubric(RUBRIC, "rubrics.yaml")
    scores = {
        c: score_candidate(rubric, [], instance_id="t-1", candidate_id=c, empty_patch=c == "empty")
        for c in ("real", "noop", "empty", "unknown")
    }
    guard = {
        "real": {"behaviour": "changed", "basis": "tree"},
        "noop": {"behaviour": "unchanged", "basis": "tree"},
        "empty": {"behaviour": None, "basis": "diff"},
        "unknown": {"behaviour": None, "basis": "diff"},
    }
    task = _Ranked(scores, {"guard": guard})
    assert fixes_nothing(task) == {"noop", "empty"}
    ranking = {"real": 0.1, "noop": 0.9, "empty": 0.8, "unknown": 0.2}
    consistency = get_selector("self_consistency")
    assert guarded(consistency, task, ranking) == {
        "real": 0.1,
        "noop": None,
        "empty": None,
        "unknown": 0.2,
    }
    assert guarded(get_selector("random"), task, ranking) == ranking
    # a run folder written before the guard existed: nothing is demoted but what its scores say
    assert fixes_nothing(_Ranked(scores, {})) == {"empty"}


def test_a_candidate_that_changes_how_tests_run_fails_integrity_and_ranks_below_the_clean(
    tree: tuple[Path, Callable[[dict[str, str]], str]],
) -> None:
    repo, edit = tree
    rubric, _ = parse_rubric(RUBRIC, "rubrics.yaml")
    real = edit({"pkg/mod.py": _with(REAL["guard"])})
    hook = "def pytest_collection_modifyitems(items):\n    for i in items:\n        i.runtest = lambda: None\n"
    forced = edit({"pkg/mod.py": _with(REAL["guard"]), "conftest.py": hook})
    task = Task(
        instance_id="t-1",
        problem_statement="fold breaks on negative numbers",
        candidates=[Candidate(id="real", patch=real), Candidate(id="forced", patch=forced)],
    )
    judge = RecordingJudge()
    rows = asyncio.run(
        judge_task(task, rubric, judge, repeats=1, concurrency=2, repository=RepoAnalyses(repo))
    )
    guard = asyncio.run(guard_of(forced, RepoAnalyses(repo)))
    assert guard.infra == ("conftest",) and guard.changed is True
    # its integrity items are not asked: the checks decide them
    assert judge.asked["forced"] == ["FC1", "FC2", "SA1", "RT1"]
    integrity = {
        v.item_id: v for v in rows if v.candidate_id == "forced" and v.axis == "integrity_rubrics"
    }
    assert {(v.origin, v.value, v.reason) for v in integrity.values()} == {
        ("checked", 0, "tampers_with_tests")
    }
    held, fix = _score(rubric, rows, "forced", forced), _score(rubric, rows, "real", real)
    assert (
        held.tampers_with_tests
        and held.decision == "reject"
        and held.reasons[0] == "tampers_with_tests"
    )
    assert fix.rank_value > held.rank_value > 0
    # every guarded selector: below every clean candidate, its order among the held kept
    scores = {
        "real": fix,
        "forced": held,
        "other": fix.model_copy(update={"candidate_id": "other"}),
    }
    ranked = _Ranked(
        scores,
        {"guard": {"forced": {"behaviour": "changed", "basis": "tree", "infra": ["conftest"]}}},
    )
    got = guarded(
        get_selector("self_consistency"), ranked, {"real": 0.2, "forced": 0.9, "other": 0.1}
    )
    assert got["forced"] is not None and got["forced"] < got["other"] < got["real"]
