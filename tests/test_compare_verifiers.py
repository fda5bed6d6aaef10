"""benchmarks/compare_verifiers.py: on a user's own tasks with the shipped fake (its figures are
``agentic-rubrics compare``'s), its refusals, and end to end on one bundled task with its hidden tests
as the tests artifact (needs the test sandbox, as tests/test_verifier_tests.py). The table's numbers
themselves: tests/test_method_comparison.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.runfolder.method_comparison import METHODS

from .conftest import git
from .test_verifier_tests import SLOW, needs_sandbox

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from compare_verifiers import hidden_check, main  # noqa: E402

CALC = {
    "calc/__init__.py": "from calc.ops import divide, mean\n",
    "calc/ops.py": '"""Arithmetic."""\n\n\ndef divide(a, b):\n    return a / b\n\n\n'
    "def mean(values):\n    return divide(sum(values), len(values))\n",
}
WORDS = {
    "words/__init__.py": "",
    "words/text.py": '"""Text."""\n\n\ndef count_words(text):\n    return len(text.split(" "))\n',
}


def _tree(root: Path, files: dict[str, str]) -> str:
    """A git checkout of ``files`` under ``root``; its HEAD (the task's base_commit)."""
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return git(root, "rev-parse", "HEAD").strip()


def _patch(root: Path, rel: str, old: str, new: str) -> str:
    text = (root / rel).read_text()
    (root / rel).write_text(text.replace(old, new))
    diff = git(root, "diff")
    (root / rel).write_text(text)
    return diff


def user_tasks(root: Path) -> Path:
    """Two tasks of a user's own, not bundled: a repository tree each (``repo_path``), labels."""
    calc, words = root / "calc", root / "words"
    mean = "    return divide(sum(values), len(values))"
    count = '    return len(text.split(" "))'
    tasks = [
        {
            "instance_id": "acme__calc-7",
            "repo": "acme/calc",
            "base_commit": _tree(calc, CALC),
            "repo_path": str(calc),
            "problem_statement": "`mean([])` raises ZeroDivisionError in `divide`; give None.\n",
            "candidates": [
                {"id": "a", "resolved": True,
                 "patch": _patch(calc, "calc/ops.py", mean, "    if not values:\n        return None\n" + mean)},
                {"id": "b", "resolved": False,
                 "patch": _patch(calc, "calc/ops.py", "    return a / b", "    return a / b if b else 0")},
                {"id": "c", "resolved": False, "patch": ""},
            ],
        },
        {
            "instance_id": "acme__words-3",
            "repo": "acme/words",
            "base_commit": _tree(words, WORDS),
            "repo_path": str(words),
            "problem_statement": "`count_words('a  b')` returns 3: a double space counts a word.\n",
            "candidates": [
                {"id": "x", "resolved": True,
                 "patch": _patch(words, "words/text.py", count, "    return len(text.split())")},
                {"id": "y", "resolved": False,
                 "patch": _patch(words, "words/text.py", count, '    return text.count(" ") + 1')},
            ],
        },
    ]  # fmt: skip
    out = root / "tasks.jsonl"
    out.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return out


@needs_sandbox
@SLOW  # a run in a process of its own: litellm imported again
def test_the_comparison_on_a_users_own_tasks_with_the_fake_is_the_commands(tmp_path: Path) -> None:
    tasks, out = user_tasks(tmp_path / "mine"), tmp_path / "out"
    argv = ["--tasks", str(tasks), "--out", str(out), "--verifiers", "rubric,tests"]
    assert main([*argv, "--bootstrap", "0", "--test-reruns", "0"]) == 0
    results = json.loads((out / "results.json").read_text())
    comparison = json.loads((out / "run" / "comparison.json").read_text())
    # the benchmark's figures are the command's, from the same run folder
    assert results["methods"] == comparison["methods"] and results["cost"] == comparison["cost"]
    assert results["tasks"] == 2 and results["candidates"] == 5
    report = json.loads((out / "run" / "report.json").read_text())
    assert report["rubrics"]["repository"] == {"repo_path": 2}  # the user's own trees
    for method in ("rubric", "tests", "hybrid", "self_consistency", "patch_classifier"):
        assert results["methods"][method]["best_at_k"] == report["selectors"][method]["best_at_k"]
    # without --verifiers similarity: not measured, never 0
    assert results["methods"]["similarity"]["not_measured"] == "verifier_not_in_run:similarity"
    assert results["cost"]["similarity"]["total_per_task_at_k16"] is None
    assert results["cost"]["rubric"]["artifact_per_task"]["agent_turns"] > 0
    md = (out / "results.md").read_text()
    assert (
        md.split("## Best@K")[1]
        == (out / "run" / "comparison.md").read_text().split("## Best@K")[1]
    )
    assert "| similarity | not measured |" in md
    assert (out / "best_at_k.png").read_bytes()[:4] == b"\x89PNG"
    # the command gives the same table from the run folder alone, nothing rerun
    again = CliRunner().invoke(app, ["compare", str(out / "run"), "--format", "json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["methods"] == results["methods"]


def test_bad_input_is_refused_with_its_line_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    every = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()
    unlabelled = json.loads(every[1])
    for c in unlabelled["candidates"]:
        c.pop("resolved")
    nope = {**unlabelled, "instance_id": "nope", "repo_path": str(tmp_path / "no-such-tree")}
    cases = [
        ("{not json", "invalid JSON", []),
        ('{"instance_id": "x", "candidates": []}', "problem_statement: Field required", []),
        (json.dumps({**unlabelled, "candidates": [{"id": "a", "patch": "", "resolved": "maybe"}]}),
         "candidates[0].resolved: Input should be a valid boolean", []),
        (json.dumps(nope), "repo_path '" + str(tmp_path / "no-such-tree") + "' is not a folder", []),
        (json.dumps({**nope, "repo_path": unlabelled["repo_path"]}),
         "'nope' is not a bundled task with hidden_tests/", ["--tests-from-hidden"]),
    ]  # fmt: skip
    for bad, why, extra in cases:
        tasks = tmp_path / "tasks.jsonl"
        tasks.write_text(every[0] + "\n" + bad + "\n")
        assert main(["--tasks", str(tasks), "--out", str(tmp_path / "out"), *extra]) == 2
        err = capsys.readouterr().err
        assert f"{tasks}:2: " in err and why in err, err
    # a task without labels counts in no figure; none labelled at all: nothing to compare
    tasks.write_text(json.dumps(unlabelled) + "\n")
    assert main(["--tasks", str(tasks), "--out", str(tmp_path / "out")]) == 2
    assert "no candidate has a label" in capsys.readouterr().err
    assert not (tmp_path / "out" / "run").exists()  # refused before any run
    assert main(["--tests", "x", "--tests-from-hidden", "--out", str(tmp_path / "o")]) == 2


@needs_sandbox
@SLOW
def test_the_comparison_on_a_bundled_task_with_its_hidden_tests(tmp_path: Path) -> None:
    # one bundled task with 5 of its candidates (one resolved), to keep the test short
    task = json.loads(write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()[0])
    task["candidates"] = task["candidates"][:5]
    assert [c["resolved"] for c in task["candidates"]] == [True, False, False, False, False]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    out = tmp_path / "out"
    argv = ["--tasks", str(tasks), "--out", str(out), "--tests-from-hidden"]
    assert main([*argv, "--bootstrap", "0", "--test-reruns", "0"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert set(results["methods"]) == set(METHODS) == set(results["cost"])
    report = json.loads((out / "run" / "report.json").read_text())
    for method in METHODS:  # the report's figures, as it gives them
        want = report["oracle_pass_at_k"] if method == "oracle" else None
        want = want or report["selectors"][method]["best_at_k"]
        assert results["methods"][method]["best_at_k"] == want
    check = results["hidden_check"]
    assert check["ok"] and check["candidates_checked"] == 5, check
    assert check["tests_realised_best_at_1"] == check["oracle_realised_best_at_1"] == 1.0
    cost = results["cost"]
    assert cost["tests"]["grading_per_candidate"]["cpu_seconds"] > 0  # executed, and recorded
    assert cost["rubric"]["artifact_per_task"]["agent_turns"] > 0  # the fake explorer's turns
    assert cost["similarity"]["artifact_per_task"]["agent_turns"] > 0  # the proxy author's
    assert cost["tests"]["artifact_per_task"]["agent_turns"] == 0  # given, not written
    assert cost["rubric"]["grading_per_candidate"]["estimated_usd"] > 0
    # the check can fail: the tests' Best@K off the oracle's at one K
    report["selectors"]["tests"]["best_at_k"]["2"] -= 0.1
    wrong = hidden_check(out / "run", report, tasks)
    assert not wrong["ok"] and list(wrong["best_at_k_differs_from_oracle"]) == ["2"]
    md = (out / "results.md").read_text()
    assert "measure the machinery, not a method's quality" in md
    assert "| hybrid |" in md and "Best@K equals the oracle's at every K" in md
    assert (out / "best_at_k.png").read_bytes()[:4] == b"\x89PNG"
