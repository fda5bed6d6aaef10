"""Hostile rubrics and regexes: YAML bombs, deep nesting, huge files and regexes that backtrack forever
are refused quickly with a located error, or end as ``missing: check_error`` (detail ``timeout``);
validating grows linearly with the rubric. Work is bounded by construction and checked with counts,
ratios or guards far above the expected time, never with a wall-clock target."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.exceptions import RubricError
from agentic_rubrics.explore import common
from agentic_rubrics.explore.agent import ExplorationFailed, IssueOnlyExplorer
from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.pipeline.runner import RunConfig, run
from agentic_rubrics.protocols import Completion
from agentic_rubrics.rank.classifier import yes_probability
from agentic_rubrics.rubric.check_verdicts import check_verdicts
from agentic_rubrics.rubric.checks import check_problems, imported_modules
from agentic_rubrics.rubric.file import lint, load_rubric, parse_rubric, rubric_to_yaml
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.testing import Reply, register_script, scripted_calls
from agentic_rubrics.types import Check

from .conftest import item, rubric
from .test_agent import EXAMPLE, VALID, explore, explorer, require_bwrap, say, scripted, write

ROOT = Path(__file__).resolve().parents[1]
GUARD = 120.0  # seconds for a child process: far above what the work needs, far below a stall


def guarded(code: str) -> Any:
    """Run ``code`` in a fresh interpreter, killed at GUARD; return what it printed last, as JSON."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=GUARD,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- regexes

OLD = {  # the shipped patterns before they were made linear: the meaning must not change
    "CODE_LINE": r"^\s*[^\s#]",
    "DEBUG_CALLS": r"^\s*(print\(|breakpoint\(|import pdb|pdb\.set_trace|import ipdb)",
    "BROAD_EXCEPT": r"^\s*except\s*(\(?\s*(BaseException|Exception)\s*\)?\s*(as\s+\w+)?)?\s*:",
    "ASSERT_LINE": r"^\s*(assert\b|self\.assert)",
}
OLD_IMPORT = r"^\s*(?:import\s+([\w.]+(?:\s*,\s*[\w.]+)*)|from\s+([\w.]+)\s+import\b)"
OLD_ANSWER = r"^\s*\**\s*(YES|NO)\b[\s:,*-]*([01](?:\.\d+)?|\.\d+)?"
PIECES = st.sampled_from(
    [" ", "\t", "except", "Exception", "BaseException", "(", ")", "as", "e", ":", "#", "x",
     "assert", "self.assert", "print(", "import", "from", "pdb", "os", ",", ".", "a.b", "*",
     "YES", "NO", "0.5", "1", "-", "\n"]
)  # fmt: skip
LINES = st.lists(PIECES, max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(LINES)
def test_shipped_patterns_keep_their_meaning(line: str) -> None:
    from agentic_rubrics.rubric.check_regex import any_line_matches

    for name, old in OLD.items():
        new = getattr(common, name)
        assert bool(re.search(old, line)) == any_line_matches([line], new), (name, line)
    m = re.match(OLD_IMPORT, line)
    names = [] if not m else (m.group(1).split(",") if m.group(1) else [m.group(2)])
    expected = [
        n.strip().split(".")[0] for n in names if n.strip() and not n.strip().startswith(".")
    ]
    assert imported_modules(line) == expected
    a = re.search(OLD_ANSWER, line, re.I | re.M)
    if a is None:
        old_p = None
    elif a.group(2) is not None:
        old_p = min(1.0, max(0.0, float(a.group(2))))
    else:
        old_p = 1.0 if a.group(1).upper() == "YES" else 0.0
    assert yes_probability(Completion(content=line)) == old_p


def test_shipped_checks_decide_adversarial_lines() -> None:
    """Lines built to make the old patterns backtrack (cubic: 21 s of CPU for 40,000 spaces)."""
    got = guarded("""
        import json
        from agentic_rubrics.rubric.check_verdicts import check_verdicts
        from agentic_rubrics.explore.common import common_items
        from agentic_rubrics.types import Rubric
        integrity, runtime = common_items(["pkg"], tests_in_issue=False)
        r = Rubric.model_validate({"metadata": {"task_summary": "t", "underlying_bug": "b"},
                                   "axes": {"integrity_rubrics": integrity, "runtime_rubrics": runtime}})
        n = 40_000
        lines = ["except" + " " * n, "    except (" + " " * n + "Exception" + " " * n,
                 " " * n, " " * n + "print", "import " + "a ," * (n // 3), "from " + " " * n]
        body = "".join("+" + ln + "\\n" for ln in lines) + "".join("-" + ln + "\\n" for ln in lines)
        patch = ("--- a/pkg/core.py\\n+++ b/pkg/core.py\\n@@ -1,%d +1,%d @@\\n%s"
                 % (len(lines), len(lines), body))
        tests = patch.replace("pkg/core.py", "tests/test_core.py")
        out = {}
        for name, p in (("src", patch), ("tests", tests)):
            for i, v in check_verdicts(r, p, instance_id="t", candidate_id=name).items():
                out[name + ":" + i] = [v.origin, v.value]
        print(json.dumps(out))
    """)
    assert got and all(origin == "checked" for origin, _ in got.values()), got
    assert got["src:RT2"] == ["checked", 1]  # none of those lines is a broad except


def test_a_regex_that_backtracks_forever_is_check_error_timeout() -> None:
    from agentic_rubrics.rubric.check_regex import regex_time_limit

    # patterns that pass validation's probes (their blow-up needs a three-character unit) and
    # backtrack for ever on a line of the patch; one the probes catch is an invalid check
    r = rubric(
        runtime=[
            item("RT1", 1, {"adds_match": "^(abc|abcabc)+$"}),
            item("RT2", 1, {"adds_no_match": "(xyz|xyzxyz)+q"}),
            item("RT3", 1, {"adds_match": "^(a+)+$"}),  # the regex engine sees through this one
            item("RT4", 1, {"adds_match": "^a"}),
            item("RT5", 1, {"adds_match": "^(a|aa)+$"}),
        ]
    )
    lines = ["abc" * 40 + "!", "xyz" * 40, "a" * 60]
    patch = "--- a/f.py\n+++ b/f.py\n@@ -1 +1,3 @@\n-b\n" + "".join(f"+{x}\n" for x in lines)
    with regex_time_limit(0.2):
        got = check_verdicts(r, patch, instance_id="t", candidate_id="c")
    assert {i: (v.origin, v.reason, v.detail) for i, v in got.items()} == {
        "RT1": ("missing", "check_error", "timeout"),
        "RT2": ("missing", "check_error", "timeout"),
        "RT3": ("checked", "adds_match", None),
        "RT4": ("checked", "adds_match", None),
        "RT5": ("missing", "check_error", "invalid_check"),
    }
    assert got["RT4"].value == 1 and "detail" not in got["RT4"].to_row()
    assert got["RT1"].to_row()["detail"] == "timeout"


def test_a_timeout_through_the_whole_run(tmp_path: Path) -> None:
    r = rubric(
        runtime=[
            item("RT1", 2, {"adds_match": "^(abc|abcabc)+$"}),
            item("RT2", 1, {"max_files": 3}),
        ]
    )
    rubrics = tmp_path / "rubrics" / "t1" / "rubrics.yaml"
    rubrics.parent.mkdir(parents=True)
    rubrics.write_text(rubric_to_yaml(r))
    patch = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-b\n+" + "abc" * 40 + "!\n"
    task = {
        "instance_id": "t1",
        "problem_statement": "x",
        "candidates": [{"id": "c", "patch": patch}],
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    report = run(
        tasks,
        tmp_path / "out",
        RunConfig(bootstrap_resamples=20, rubrics_dir=str(tmp_path / "rubrics")),
    )
    assert report is not None and report["verdicts"]["missing_by_reason"] == {"check_error": 1}
    rows = {v["item_id"]: v for _, v in read_jsonl(tmp_path / "out" / "verdicts.jsonl")}
    assert rows["RT1"]["detail"] == "timeout" and rows["RT2"]["origin"] == "checked"


@pytest.mark.parametrize(
    "pattern",
    [r"^\s*assert\b", r"[[:alpha:]]", r"a{,3}", r"(?P<n>a)(?P=n)", r"a++", r"(?>a+)b", r"\Z",
     r"[", r"\p{L}", r"(?<=a+)b", r"\K", r"(?|a)", r"a{2,1}", r"(", r"\1(a)", r"[\w-.]"],
)  # fmt: skip
def test_validation_accepts_exactly_what_python_re_compiles(pattern: str) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # re's "Possible nested set" on [[
            re.compile(pattern)
        compiles = True
    except re.error:
        compiles = False
    assert (check_problems(Check(name="adds_match", arg=pattern)) == []) == compiles


# --------------------------------------------------------------------------- rubrics.yaml

HEAD = "metadata:\n  task_summary: t\n  underlying_bug: b\n"
LAUGHS = "".join(
    f"  {c}: &{c} [{', '.join([f'*{p}'] * 10) if p else ', '.join(['lol'] * 10)}]\n"
    for p, c in zip(["", "a", "b", "c", "d", "e"], "abcdef", strict=True)
)
BOMBS = {
    "recursive anchor": (
        HEAD + "  notes: &a {again: [*a]}\naxes: {}\n",
        "alias *a lies inside its own anchor &a",
        4,
    ),
    "billion laughs": (
        HEAD + "  lols:\n" + textwrap.indent(LAUGHS, "  ") + "axes: {}\n",
        "aliases expand to more than 100000 values",
        9,
    ),
    "deep flow": (HEAD + "  deep: " + "[" * 5000 + "]" * 5000 + "\naxes: {}\n", "nest", 4),
    "deep mapping": (
        HEAD + "  deep: " + "{a: " * 5000 + "1" + "}" * 5000 + "\naxes: {}\n",
        "nest",
        4,
    ),
    "deep block": (
        HEAD + "  deep:\n" + "".join("  " * (i + 2) + "k:\n" for i in range(2000)) + "axes: {}\n",
        "nested deeper than 64 levels",
        None,
    ),
    "deep alias": (
        HEAD
        + "  a: &x "
        + "[" * 40
        + "]" * 40
        + "\n  b: "
        + "[" * 40
        + "*x"
        + "]" * 40
        + "\naxes: {}\n",
        "nests deeper than 64 levels",
        5,
    ),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_yaml_bombs_are_refused_with_their_line(name: str) -> None:
    text, message, line = BOMBS[name]
    with pytest.raises(RubricError) as caught:
        parse_rubric(text, "rubrics.yaml")
    (problem,) = caught.value.problems
    assert message in problem.message and problem.file == "rubrics.yaml"
    assert problem.line is not None and (line is None or problem.line == line)


def test_validate_command_refuses_bombs_with_file_and_line(tmp_path: Path) -> None:
    paths = []
    for n, (text, _, _) in enumerate(BOMBS.values()):
        paths.append(tmp_path / f"r{n}.yaml")
        paths[-1].write_text(text)
    result = CliRunner().invoke(app, ["validate", *map(str, paths)])
    assert result.exit_code == 1
    for path, (_, message, _) in zip(paths, BOMBS.values(), strict=True):
        assert f"{path}:" in result.output and message in result.output.replace("\n", " ")


def test_reused_rubrics_that_are_bombs_fail_their_task_only(tmp_path: Path) -> None:
    rows = []
    for n, (text, _, _) in enumerate(
        [*BOMBS.values(), (rubric_to_yaml(rubric(runtime=[item("RT1")])), "", 0)]
    ):
        path = tmp_path / "rubrics" / f"t{n}" / "rubrics.yaml"
        path.parent.mkdir(parents=True)
        path.write_text(text)
        rows.append({"instance_id": f"t{n}", "problem_statement": "x", "candidates": [
            {"id": "c", "patch": "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n+b\n"}]})  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run(
        tasks,
        tmp_path / "out",
        RunConfig(bootstrap_resamples=20, rubrics_dir=str(tmp_path / "rubrics")),
    )
    progress = {
        r["instance_id"]: r["rubric"] for _, r in read_jsonl(tmp_path / "out" / "progress.jsonl")
    }
    last = f"t{len(BOMBS)}"
    assert progress.pop(last)["status"] == "ok"
    assert {i: (p["status"], p["reason"]) for i, p in progress.items()} == {
        f"t{n}": ("failed", "rubric_invalid") for n in range(len(BOMBS))
    }


def test_the_issue_only_explorer_gets_a_bomb_back_as_an_error() -> None:
    replies = iter([Reply(content=f"```yaml\n{BOMBS['recursive anchor'][0]}```"),
                    Reply(content=f"```yaml\n{VALID}```")])  # fmt: skip
    model = register_script("local/issue-only-bomb", lambda body, n: next(replies))
    rubric_, steps = asyncio.run(
        IssueOnlyExplorer(LLM(LLMConfig(model=model))).explore(EXAMPLE.task.public())
    )
    assert rubric_.item("SA1").weight == 3 and [s["valid"] for s in steps] == [False, True]
    feedback = scripted_calls(model)[1]["messages"][-1]["content"]
    assert "lies inside its own anchor" in feedback and "rubrics.yaml:4:" in feedback


@require_bwrap
def test_the_agent_submitting_a_bomb_gets_the_error_and_goes_on() -> None:
    bomb = BOMBS["billion laughs"][0]
    model = scripted("agent-bomb", [
        say("I write the rubric file now. It is grounded in what I found. Then I submit.",
            "bash", write(bomb)),
        say("The file is written. Submitting it. The validator checks it. Done.", "submit"),
        say("The validator refused the aliases. I write a plain rubric. Then I submit again.",
            "bash", write(VALID)),
        say("Rewritten without aliases. Submitting again. It should pass. Done.", "submit"),
    ])  # fmt: skip
    rubric_, steps = explore(explorer(model))
    assert not isinstance(rubric_, ExplorationFailed) and len(steps) == 4
    feedback = scripted_calls(model)[2]["messages"][-1]["content"]
    assert "aliases expand to more than 100000 values" in feedback and "rubrics.yaml:9:" in feedback


def test_a_rubric_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from agentic_rubrics.rubric.safe_yaml import MAX_RUBRIC_BYTES

    text = rubric_to_yaml(rubric(runtime=[item("RT1")]))
    path = tmp_path / "rubrics.yaml"
    path.write_text(text + "#" * (MAX_RUBRIC_BYTES - len(text)))
    load_rubric(path)  # exactly at the cap: fine
    path.write_text(text + "#" * (MAX_RUBRIC_BYTES - len(text) + 1))
    with pytest.raises(RubricError, match=f"at most {MAX_RUBRIC_BYTES}"):
        load_rubric(path)
    with pytest.raises(RubricError, match=f"at most {MAX_RUBRIC_BYTES}"):
        parse_rubric(path.read_text())


@pytest.mark.parametrize(
    ("value", "line"),
    [("weight: " + "1" * 5000, 8), ("weight: 2002-13-45", 8), ('id: "RT1\\n"', 6)],
    ids=["5000-digit-int", "month-13", "id-with-newline"],
)
def test_values_that_cannot_be_read_are_located_errors(value: str, line: int) -> None:
    text = (
        HEAD
        + "axes:\n  runtime_rubrics:\n    - id: RT1\n      description: Raises\n      weight: 1\n"
    )
    key = value.split(":")[0]
    lines = text.splitlines()
    at = next(
        n for n, ln in enumerate(lines) if ln.strip().lstrip("- ").startswith(f"{key}:") and n >= 4
    )
    lines[at] = lines[at].split(key)[0] + value
    with pytest.raises(RubricError) as caught:
        parse_rubric("\n".join(lines) + "\n", "rubrics.yaml")
    assert any(p.line == line for p in caught.value.problems), caught.value.problems


def test_validating_grows_linearly_with_the_number_of_items() -> None:
    """Times 500 and 5,000 items in one child process (the pairwise lint was quadratic: 2,000 items
    took 97 s). Linear work gives a ratio near 10, quadratic near 100; 30 leaves room for noise.
    Both are over MAX_ITEMS now: what is timed is reading them up to the refusal, which must also
    stay linear (no item is built, probed or linted); the lint itself is held to MAX_ITEMS items."""
    ratio = guarded("""
        import json, time
        from agentic_rubrics.rubric.file import parse_rubric
        def text(n):
            rows = "".join(
                f"    - id: X{i}\\n      description: Modifies part {i} in src/m{i}.py, unlike X{i + 1}\\n"
                f"      weight: 2\\n      check: {{touches: src/m{i}.py}}\\n" for i in range(n))
            return "metadata: {task_summary: a, underlying_bug: b}\\naxes:\\n  file_change_rubrics:\\n" + rows
        from agentic_rubrics.exceptions import RubricError
        from agentic_rubrics.rubric.file import MAX_ITEMS
        def best(n, k):
            t, out = text(n), []
            for j in range(k):
                start = time.process_time()
                try:
                    parse_rubric(t + f"# {j}\\n")  # a new text: not the cached parse
                except RubricError as exc:
                    assert f"{n} items; a rubric holds at most" in str(exc)
                out.append(time.process_time() - start)
            return min(out)
        _, warnings = parse_rubric(text(MAX_ITEMS))
        assert sum("refers to other items (X" in w.message for w in warnings) == MAX_ITEMS - 1
        print(json.dumps(best(5000, 1) / best(500, 3)))
    """)
    assert ratio < 30, ratio


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.from_regex(r"[A-Z][A-Za-z0-9_.-]{0,5}", fullmatch=True), min_size=1, max_size=6),
    st.lists(
        st.sampled_from(["FC1", "FC1.", "FC-", "x", " ", ".", "-", "_", "é", "FC", "1"]),
        max_size=12,
    ),
)
def test_the_linear_lint_names_the_same_items_as_one_search_per_id(
    ids: list[str], words: list[str]
) -> None:
    ids = list(dict.fromkeys([*ids, "FC1", "FC-"]))
    text = "Modifies " + "".join(words)
    r = rubric(
        runtime=[
            item(i, description=text if n == 0 else f"Keeps part {n}") for n, i in enumerate(ids)
        ]
    )
    expected = sorted(o for o in ids[1:] if re.search(rf"\b{re.escape(o)}\b", text))
    found = [w.message for w in lint(r) if w.message.startswith(f"{ids[0]}: refers to other items")]
    if expected:
        assert found == [
            f"{ids[0]}: refers to other items ({', '.join(expected)}); make it self-contained"
        ]
    else:
        assert not any("(" in f for f in found)
