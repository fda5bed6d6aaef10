"""The static explorer's grounding: traceback frames, call chains, quoted messages, expected exceptions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agentic_rubrics.explore.codeindex import CodeIndex
from agentic_rubrics.explore.static import StaticExplorer
from agentic_rubrics.rubric.check_verdicts import check_verdicts
from agentic_rubrics.rubric.checks_repo import RepoAnalyses
from agentic_rubrics.sandbox import LocalCopySandbox
from agentic_rubrics.types import Rubric, Task

FILES = {
    "shop/__init__.py": "from shop.api import checkout\n",
    "shop/api.py": (
        "from shop import pricing\n\n\n"
        "def checkout(cart):\n"
        "    total = pricing.total(cart)\n"
        "    return round(total, 2)\n\n\n"
        "def refund(order):\n"
        "    return -order\n"
    ),
    "shop/pricing.py": (
        "def total(cart):\n"
        "    return sum(_line(item) for item in cart)\n\n\n"
        "def _line(item):\n"
        "    if item['qty'] < 0:\n"
        "        raise ValueError(f\"negative quantity for {item['sku']!r}\")\n"
        "    return item['price'] * item['qty'] * (1 - item.get('discount', 0))\n"
    ),
    "shop/errors.py": "class PricingError(ValueError):\n    pass\n",
    "tests/test_api.py": "from shop import checkout\n\n\ndef test_empty():\n    assert checkout([]) == 0\n",
}


def rubric_for(tmp_path: Path, issue: str) -> Rubric:
    repo = tmp_path / "repo"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    task = Task(instance_id="shop-1", problem_statement=issue, repo_path=str(repo))

    async def go() -> Rubric:
        async with LocalCopySandbox(repo) as sb:
            rubric, _ = await StaticExplorer().explore(task, sb)
            return rubric

    return asyncio.run(go())


def checks_of(rubric: Rubric) -> dict[str, dict[str, object]]:
    return {i.id: i.check.model_dump() for _, i in rubric.items() if i.check is not None}


TRACEBACK = """checkout() crashes on a returned item

```
Traceback (most recent call last):
  File "/home/me/app/main.py", line 3, in <module>
    checkout(cart)
  File "/usr/lib/python3/site-packages/shop/api.py", line 5, in checkout
    total = pricing.total(cart)
  File "/usr/lib/python3/site-packages/shop/pricing.py", line 2, in total
    return sum(_line(item) for item in cart)
  File "/usr/lib/python3/site-packages/shop/pricing.py", line 7, in _line
    raise ValueError(f"negative quantity for {item['sku']!r}")
ValueError: negative quantity for 'A-1'
```
Returns should be allowed: I expected a PricingError at most, not a crash.
"""


def test_the_deepest_frame_leads(tmp_path: Path) -> None:
    checks = checks_of(rubric_for(tmp_path, TRACEBACK))
    assert checks["FC1"] == {"touches": "shop/pricing.py"}
    symbols = next(c for c in checks.values() if "changes_behaviour" in c)
    assert symbols["changes_behaviour"][0] == "shop/pricing.py::_line"  # type: ignore[index]


def test_a_symptom_in_a_public_function_leads_to_what_it_calls(tmp_path: Path) -> None:
    issue = "`checkout()` gives the wrong total when an item has a discount: 10% off 20.00 should be 18.00."
    checks = checks_of(rubric_for(tmp_path, issue))
    touched = [c for c in checks.values() if "touches" in c]
    assert any(
        "shop/pricing.py" in (c["touches"] if isinstance(c["touches"], list) else [c["touches"]])
        for c in touched
    )
    symbols = next(c for c in checks.values() if "changes_behaviour" in c)["changes_behaviour"]
    assert "shop/api.py::checkout" in symbols  # type: ignore[operator]
    assert "shop/pricing.py::total" in symbols or "shop/pricing.py::_line" in symbols  # type: ignore[operator]


def test_the_expected_exception_becomes_a_spec_item(tmp_path: Path) -> None:
    rubric = rubric_for(
        tmp_path,
        TRACEBACK.replace("I expected a PricingError at most", "It should raise PricingError"),
    )
    specs = [i for a, i in rubric.items() if a == "spec_alignment_rubrics"]
    assert any(
        i.check and i.check.name == "adds_match" and "PricingError" in str(i.check.arg)
        for i in specs
    )


def test_nothing_located_still_gives_generic_checks(tmp_path: Path) -> None:
    rubric = rubric_for(tmp_path, "The app is slow on Mondays.")
    assert rubric.metadata.underlying_bug.startswith("Not diagnosed")
    assert {a for a, _ in rubric.items()} >= {
        "file_change_rubrics",
        "integrity_rubrics",
        "runtime_rubrics",
    }
    assert not any(i.check and i.check.name == "touches" for _, i in rubric.items())


# --------------------------------------------------------------------------- leads of real issues

# the shapes SWE-bench repositories have: a src/ layout, options registered as strings, constants,
# a method defined again in documentation examples, vendored code and tests
TOOL = {
    "src/_tool/__init__.py": "",
    "src/_tool/logging.py": (
        'DEFAULT_LOG_FORMAT = "%(filename)-25s %(lineno)4d %(message)s"\n'
        'DEFAULT_DATE_FORMAT = "%H:%M:%S"\n\n\n'
        "class LoggingPlugin:\n"
        "    def formatter(self):\n"
        "        return DEFAULT_LOG_FORMAT\n"
    ),
    "src/_tool/main.py": (
        "def addoption(parser):\n"
        "    parser.addoption(\n"
        '        "--collectonly",\n'
        '        "--collect-only",\n'
        '        action="store_true",\n'
        "    )\n\n\n"
        "def run(config):\n"
        "    return 0\n"
    ),
    "src/_tool/config/__init__.py": "from _tool.config.parser import Parser\n",
    "src/_tool/config/parser.py": (
        "class Parser:\n"
        "    def parse_header(self, line):\n"
        "        if ':' not in line:\n"
        "            raise ValueError('header line is missing a colon')\n"
        "        return line.split(':', 1)\n\n"
        "    def parse_body(self, text):\n"
        "        def strip(x):\n"
        "            return x.strip()\n"
        "        return [strip(x) for x in text.splitlines()]\n"
    ),
    "src/_tool/reports.py": "def render(report):\n    return str(report)\n",
    "doc/example/parser.py": "class Parser:\n    def parse_header(self, line):\n        return line\n",
    "extern/vendored/parser.py": "def parse_header(line):\n    return line\n",
    "testing/test_parser.py": "def parse_header():\n    pass\n\n\ndef test_it():\n    parse_header()\n",
}


def tool_rubric(tmp_path: Path, issue: str) -> Rubric:
    repo = tmp_path / "tool"
    for rel, text in TOOL.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    task = Task(instance_id="tool-1", problem_statement=issue, repo_path=str(repo))

    async def go() -> Rubric:
        async with LocalCopySandbox(repo) as sb:
            rubric, steps = await StaticExplorer().explore(task, sb)
            # the index is built once: one find, one grep of definitions, then literals at most
            assert sum(1 for s in steps if s["tool"] == "bash") <= 3, steps
            return rubric

    return asyncio.run(go())


def grounding(rubric: Rubric) -> dict[str, dict[str, int]]:
    meta = rubric.metadata.model_extra or {}
    return meta["grounding"]  # type: ignore[no-any-return]


def test_a_quoted_constant_is_located_at_its_definition(tmp_path: Path) -> None:
    # pytest-dev__pytest-5227: the issue quotes the constant's line; it used to match nothing
    issue = (
        "Improve default logging format\nCurrently it is:\n\n"
        '> DEFAULT_LOG_FORMAT = "%(filename)-25s %(lineno)4d %(message)s"\n\n'
        "I think `name` (module name) would be very useful here.\n"
    )
    rubric = tool_rubric(tmp_path, issue)
    checks = checks_of(rubric)
    assert checks["FC1"] == {"touches": "src/_tool/logging.py"}
    constant = next(c for c in checks.values() if "removes_match" in c)
    assert constant["in"] == "src/_tool/logging.py"
    gold = (
        "--- a/src/_tool/logging.py\n+++ b/src/_tool/logging.py\n@@ -1,2 +1,2 @@\n"
        '-DEFAULT_LOG_FORMAT = "%(filename)-25s %(lineno)4d %(message)s"\n'
        '+DEFAULT_LOG_FORMAT = "%(levelname)-8s %(name)s:%(filename)s %(message)s"\n'
        ' DEFAULT_DATE_FORMAT = "%H:%M:%S"\n'
    )
    checked = check_verdicts(rubric, gold, instance_id="tool-1", candidate_id="gold").values()
    # the repository-aware items (applies, parses, ...) are decided on the tree, as a judge does
    verdicts = asyncio.run(RepoAnalyses(tmp_path / "tool").decide_items(rubric, checked, gold))
    assert all(v.value == 1 for v in verdicts), {v.item_id: v.value for v in verdicts}
    applies = next(v for v in verdicts if v.reason == "applies")
    assert applies.detail == "git_apply" and rubric.item(applies.item_id).gate
    assert grounding(rubric)["leads"]["constant"] == 1
    assert "constant" not in grounding(rubric)["unmatched"]


def test_a_command_line_option_leads_to_where_it_is_registered(tmp_path: Path) -> None:
    issue = "tool --collect-only needs a one char shortcut\nI run `--collect-only` very often."
    checks = checks_of(tool_rubric(tmp_path, issue))
    assert checks["FC1"] == {"touches": "src/_tool/main.py"}
    symbols = next(c for c in checks.values() if "changes_behaviour" in c)
    assert symbols["changes_behaviour"] == "src/_tool/main.py::addoption"


def test_class_method_prefers_the_package_over_docs_vendored_code_and_tests(
    tmp_path: Path,
) -> None:
    issue = "`Parser.parse_header` drops the value after a second colon"
    checks = checks_of(tool_rubric(tmp_path, issue))
    assert checks["FC1"] == {"touches": "src/_tool/config/parser.py"}
    symbols = next(c for c in checks.values() if "changes_behaviour" in c)
    assert "src/_tool/config/parser.py::Parser.parse_header" in symbols["changes_behaviour"]  # type: ignore[operator]


def test_the_module_an_issue_imports_from_and_a_message_quoted_in_prose(tmp_path: Path) -> None:
    issue = (
        "Headers without a colon crash\n"
        "```python\nfrom _tool.config.parser import Parser\nfrom _tool.nowhere import thing\n"
        "def my_reader(p):\n    return p\n```\n"
        'It fails with "ValueError: header line is missing a colon" for `FooBarBaz` input.\n'
    )
    rubric = tool_rubric(tmp_path, issue)
    checks = checks_of(rubric)
    assert checks["FC1"] == {"touches": "src/_tool/config/parser.py"}
    symbols = next(c for c in checks.values() if "changes_behaviour" in c)["changes_behaviour"]
    assert "src/_tool/config/parser.py::Parser.parse_header" in symbols  # type: ignore[operator]
    g = grounding(rubric)
    # found: the module, Parser, the message; nothing: the other module, FooBarBaz; the
    # reporter's own my_reader is no lead at all
    assert g["leads"]["module"] == 2 and g["unmatched"]["module"] == 1
    assert g["leads"]["message"] == 1 and "message" not in g["unmatched"]
    assert g["unmatched"]["symbol"] >= 1
    assert "my_reader" not in json.dumps(rubric.model_dump())


def test_a_file_named_in_the_issue_is_located(tmp_path: Path) -> None:
    issue = "The output of src/_tool/reports.py is unreadable for long reports."
    rubric = tool_rubric(tmp_path, issue)
    assert checks_of(rubric)["FC1"] == {"touches": "src/_tool/reports.py"}
    assert grounding(rubric)["leads"]["path"] == 1


def test_the_index_lists_definitions_with_qualified_names(tmp_path: Path) -> None:
    repo = tmp_path / "tool"
    for rel, text in TOOL.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)

    async def go() -> CodeIndex:
        async with LocalCopySandbox(repo) as sb:
            index = CodeIndex(sb)
            await index.build()
            return index

    index = asyncio.run(go())
    assert len(index.steps) == 2
    quals = {(d.path, d.qualname, d.kind) for ds in index.listed.values() for d in ds}
    assert ("src/_tool/config/parser.py", "Parser.parse_header", "function") in quals
    assert ("src/_tool/logging.py", "DEFAULT_LOG_FORMAT", "constant") in quals
    assert not any(q.endswith("strip") for _, q, _ in quals)  # a function's own helper
    assert index.module_file("_tool.config.parser.Parser") == (
        "src/_tool/config/parser.py",
        ["Parser"],
    )


def test_an_issue_of_blank_lines_gets_a_rubric_titled_by_the_instance(tmp_path: Path) -> None:
    # both static explorers title their rubric through one assembly (explore/common.static_rubric);
    # the grounded one used to take the first line of an issue that has none
    rubric = rubric_for(tmp_path, "  \n\n ")
    assert rubric.metadata.task_summary == "shop-1"
    assert {i.id for i in rubric.axes.integrity_rubrics} >= {"IN0", "IN1", "IN2"}
