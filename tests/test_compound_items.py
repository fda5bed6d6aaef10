"""The compound-item lint: an item that checks two things is a warning; one criterion is not.

Crafted items of both kinds (the shapes docs/spec.md names), the warning as ``validate`` prints it,
and every rubric the shipped explorers write for the bundled tasks (static, issue-only static, the
fake agent) and the stored run folder's: all single criteria, none flagged.
"""

from __future__ import annotations

import asyncio
import re
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import load_examples
from agentic_rubrics.explore.issue_static import build_issue_rubric
from agentic_rubrics.explore.static import StaticExplorer
from agentic_rubrics.rubric.compound import compound_items, compound_reason
from agentic_rubrics.rubric.file import load_rubric, parse_rubric
from agentic_rubrics.sandbox import LocalCopySandbox
from agentic_rubrics.testing.agent import rubric_yaml
from agentic_rubrics.types import Rubric

from .conftest import item, rubric

DATA = Path(__file__).parent / "data"

COMPOUND = {
    "Raises ValueError and keeps the message": "'and keeps'",
    "Raises ValueError as well as a warning": "'as well as'",
    "Validates the header; rejects empty names": "';'",
    "Handles both None and empty strings and returns the default": "'and returns'",
    "Adds a regression test and updates the changelog": "'and updates'",
    "Returns the cached value and does not call the API again": "'and does not'",
    "Closes the file, releases the lock": "', releases'",
    "Fixes count_windows while keeping the public signature": "'while keeping'",
    "Fixes the parser and also updates the docs": "'and also'",
    "Requires (1) a new flag and (2) a default of False": "(1), (2)",
    "Checks a) the header b) the body": "(a), (b)",
    "Keeps the old API in addition to the new one": "'in addition to'",
    "Raises ParseError but keeps the line number": "'but keeps'",
    "Parses the value then strips trailing whitespace": "'then strips'",
    "Modifies parse() along with its tests": "'along with'",
    "Logs a warning and never raises": "'and never raises'",
    "Returns a list and no longer mutates the input": "'and no longer'",
    "Handles errors by raising ParseError and logging the line": "'and logging'",
    "Accepts None and treats it as empty": "'and treats'",
}
"""Two requirements a candidate can meet one without the other, and the words that join them."""

SINGLE = [
    # one predicate over a coordinated object: one requirement over one domain
    "Handles both None and empty strings in parse()",
    "Keeps public names and signatures",
    "Leaves packaging and dependency files unchanged",
    "Keeps imports and exports unchanged",
    "Preserves the order of keys and values",
    "Supports reading and writing the config",
    "Handles leading and trailing whitespace",
    "Rejects negative and zero step sizes",
    "Reads from both stdin and files",
    # a disjunction: either part satisfies it
    "Raises ValueError or returns None",
    "Removes or renames no function, class or variable the repository still uses",
    # a constraint on the one change, an annotation, a list of names or paths
    "Handles the input the issue describes without an exception",
    "Changes executable code in envfile/lexer.py or envfile/parser.py, not only comments",
    "Modifies durata/iso.py (holds located code, traceback frame, called by parse_iso)",
    "Modifies one of bankdays/calendar.py, bankdays/holidays.py",
    "Changes code inside one of _components, parse_iso, _number",
    "Changes at most 4 non-test files, tests excluded",
    "Updates callers, including the CLI",
    "Adds a test that fails before the fix and passes after it",
    # code and quoted messages are not prose
    "Raises `ValueError('a and keeps b')` on bad input",
    'Raises ValueError with the message "x and removes y; z w"',
]


@pytest.mark.parametrize("description", sorted(COMPOUND))
def test_a_compound_item_is_flagged_with_the_words_that_join_it(description: str) -> None:
    reason = compound_reason(description)
    assert reason is not None and COMPOUND[description] in reason, reason


@pytest.mark.parametrize("description", SINGLE)
def test_a_single_criterion_is_not_flagged(description: str) -> None:
    assert compound_reason(description) is None


def test_the_warning_names_the_item_its_line_and_the_fix(tmp_path: Path) -> None:
    r = rubric(
        spec_alignment=[
            item("SA1", description="Raises ValueError and keeps the message"),
            item("SA2", description="Handles both None and empty strings in parse()"),
            item("SA3", description="Keeps the old API as well as the new one"),
        ]
    )
    assert compound_items(r) == {
        "SA1": "joins two requirements with 'and keeps'",
        "SA3": "adds a requirement with 'as well as'",
    }
    from agentic_rubrics.rubric.file import write_rubric

    path = tmp_path / "rubrics.yaml"
    write_rubric(r, path)
    _, warnings = load_rubric(path)
    found = [w for w in warnings if "compound item" in w.message]
    assert [w.message.split(":")[0] for w in found] == ["SA1", "SA3"]
    text = path.read_text().splitlines()
    for w in found:
        assert w.severity == "warning" and w.line is not None
        assert re.search(r"description: .*(keeps the message|as well as)", text[w.line - 1])
        assert w.message.endswith("split it, one criterion per item")
    done = CliRunner().invoke(app, ["validate", str(path)])
    assert done.exit_code == 0 and "SA1: compound item: joins two requirements" in done.output
    assert CliRunner().invoke(app, ["validate", "--strict", str(path)]).exit_code == 1


def test_a_hostile_description_is_read_in_one_pass() -> None:
    """Unclosed quotes, parentheses and backticks by the ten thousand: each scan stops at the next
    mark, so the text is read a bounded number of times (a quadratic scan would not end here)."""
    text = "Keeps " + "( ' ` \" ; , and " * 30_000
    assert compound_reason(text) is not None  # "X; Y" all the same
    assert compound_reason("Keeps " + "names and " * 30_000 + "signatures") is None


def _static_rubrics() -> list[tuple[str, Rubric]]:
    async def explore(example: object) -> Rubric:
        task = example.task.model_copy(update={"repo_path": str(example.repo_dir)})  # type: ignore[attr-defined]
        async with LocalCopySandbox(example.repo_dir) as sandbox:  # type: ignore[attr-defined]
            found, _ = await StaticExplorer().explore(task, sandbox)
            return found

    out = []
    for example in load_examples():
        iid = example.task.instance_id
        out += [(f"static {iid}", asyncio.run(explore(example)))]
        out += [(f"issue-only {iid}", build_issue_rubric(example.task))]
    return out


def test_no_rubric_the_shipped_explorers_write_is_flagged(tmp_path: Path) -> None:
    """Every item they write is one criterion (a path list or a comma of file names is no second
    predicate): the lint must not cry wolf on the rubrics users see first."""
    written = _static_rubrics()
    for path, symbol in ((None, None), ("pagewise/windows.py", None), ("a/b.py", "Table.width")):
        written.append((f"fake agent {path}", parse_rubric(rubric_yaml("s", path, symbol))[0]))
    with tarfile.open(DATA / "run_folder_16721ff.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    for path in sorted(tmp_path.glob("run/rubrics/*/rubrics.yaml")):
        written.append((str(path), load_rubric(path)[0]))
    items = sum(len(list(r.items())) for _, r in written)
    assert len(written) == 25 and items > 400
    assert {name: compound_items(r) for name, r in written if compound_items(r)} == {}
