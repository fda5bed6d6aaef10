"""Where a task's graded tests go in its tree, and how they run: the repository's own runner finding
them where it finds its own tests (:mod:`~agentic_rubrics.sandbox.testlogs`).

- ``pytest``: ``agentic_rubrics_tests/`` at the tree's root, run with the library's pytest command
  (its durations read too);
- ``django``: ``tests/agentic_rubrics_tests/``, a test app of Django's own suite (an ``__init__.py``
  added), run as the harness runs Django (``./tests/runtests.py --verbosity 2 --settings=test_sqlite
  --parallel 1 agentic_rubrics_tests``), read with ``parse_log_django``;
- ``sympy``: ``sympy/agentic_rubrics_tests/tests/`` (``test_*.py`` under ``sympy/``, which ``bin/test``
  collects and executes), run with ``bin/test -C --verbose <files>``.

Each folder is in one of :data:`~agentic_rubrics.test_infra.GRADED_FOLDERS`: a candidate touching one is refused (``tampers_with_tests``), and the
script replaces the folder with the graded files whatever a candidate left there. The test writer writes its file
where that runner finds it in its own workspace (:attr:`Layout.writer_file`) and runs it with
:attr:`Layout.writer_run`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from agentic_rubrics.sandbox.testlogs import Runner, command, run_command, runner_for
from agentic_rubrics.sandbox.testrun import RunCommand
from agentic_rubrics.test_infra import GRADED_FOLDER

WRITTEN = "test_issue.py"
"""The file the test writer writes (its name in the graded folder)."""


@dataclass(frozen=True)
class Layout:
    """One runner's place for the graded tests and its commands."""

    runner: Runner
    folder: str
    """The graded folder, relative to the tree's root (its last part :data:`GRADED_FOLDER`)."""
    writer_file: str
    """Where the test writer writes :data:`WRITTEN` in its workspace."""
    writer_run: str
    """The command the writer runs its file with (in its workspace, ``python`` on its PATH)."""
    extra: dict[str, str] = field(default_factory=dict)
    """Files added beside the graded ones (name -> text): what makes the folder the runner's."""

    def command(self, python: str, names: list[str]) -> RunCommand | None:
        """The run of the graded folder's ``names`` under ``python`` (``None``: the library's own
        pytest command, :func:`~agentic_rubrics.sandbox.testrun.script`'s default)."""
        if self.runner == "pytest":
            return None
        if self.runner == "django":
            text = command("django", python, [self.folder])
        else:
            tests = sorted(n for n in names if n.startswith("test_") and n.endswith(".py"))
            text = command(self.runner, python, [f"{self.folder}/{n}" for n in tests])
        return run_command(self.runner, text)


_DJANGO_APP = f"tests/{GRADED_FOLDER}"
_SYMPY_DIR = f"sympy/{GRADED_FOLDER}/tests"
LAYOUTS: dict[str, Layout] = {
    "pytest": Layout("pytest", GRADED_FOLDER, WRITTEN, f"python -m pytest -q {WRITTEN}"),
    "django": Layout(
        "django",
        _DJANGO_APP,
        f"{_DJANGO_APP}/{WRITTEN}",
        "python tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 "
        + GRADED_FOLDER,
        extra={"__init__.py": ""},
    ),
    "sympy": Layout(
        "sympy",
        _SYMPY_DIR,
        f"{_SYMPY_DIR}/{WRITTEN}",
        f"python bin/test -C --verbose {shlex.quote(f'{_SYMPY_DIR}/{WRITTEN}')}",
    ),
}
"""Each runner's layout."""


def layout_for(repo: str | None) -> Layout:
    """The layout of ``owner/name``'s runner (pytest's for a repository without a runner of its own)."""
    runner = runner_for(repo or "")
    return LAYOUTS.get(runner, LAYOUTS["pytest"])
