"""The issue's examples run on each candidate's tree: read from the issue, run in the sandbox, compared.

Fixes written differently print the same for the issue's example and support each other in
behaviour_consensus even when their code shares no line; a no-op prints what the base prints; a
snippet that prints the same everywhere (or differently on the base's two runs) is no evidence; what a
candidate writes to its output goes nowhere; a hang is killed; a crash disagrees with everything."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from agentic_rubrics.rank.consensus import Signature, consensus
from agentic_rubrics.rank.probe_inputs import (
    MAX_SNIPPETS,
    Snippet,
    issue_snippets,
    packages,
    tree_snippets,
)
from agentic_rubrics.rank.probes import (
    MISSING,
    UNSTABLE,
    informative,
    output_agreement,
    probe_pool,
    read_outputs,
)
from agentic_rubrics.sandbox.bwrap import bwrap_problem

ISSUE = (
    "`mean` of an empty list raises\r\n"
    "```python\r\n>>> from stats import mean\r\n>>> mean([])\r\nTraceback (most recent call last):\r\n"
    "ZeroDivisionError: division by zero\r\n>>> mean([1,\r\n...       3])\r\n2.0\r\n```\r\n"
    "In IPython:\r\n\r\nIn [1]: mean([2])\r\nOut[1]: 2.0\r\n\r\n"
    "```bash\r\n$ python -c 'print(1)'\r\n```\r\n"
    "```\r\nprint(mean([4]))\r\n```\r\n"
    "```python\r\nthis is not python (\r\n```\r\n"
)


def test_the_issue_s_sessions_and_blocks_are_read_in_order_without_their_outputs() -> None:
    found = issue_snippets(ISSUE)
    assert found == [
        Snippet("session", "from stats import mean\x00mean([])\x00mean([1,\n      3])"),
        Snippet("session", "mean([2])"),
        Snippet("block", "print(mean([4]))\n"),
    ]  # the bash block and the block that does not parse are not examples
    assert issue_snippets("No example here; `mean` is wrong.") == []


def test_snippets_are_bounded_and_a_statement_that_does_not_parse_is_dropped() -> None:
    many = "\n\n".join(f"text {n}\n\n>>> f({n})" for n in range(MAX_SNIPPETS + 5))
    assert len(issue_snippets(many)) == MAX_SNIPPETS
    assert issue_snippets(">>> f(1\n>>> g(2)\n") == [Snippet("session", "g(2)")]
    # nesting too deep for the parser, in a session or a block: dropped, never raised
    assert issue_snippets(">>> " + "-" * 5000 + "1\n>>> g(2)\n") == [Snippet("session", "g(2)")]
    assert issue_snippets("```python\n" + "(" * 3000 + "\n```\n") == []
    # a fence of four backticks closes with four (or more), not three
    assert issue_snippets("````python\n```\nx = 1\n````\n") == []
    assert issue_snippets("```python\n" + "x = 1\n" * 2000 + "```\n") == []
    # a fence never closed is prose from there on (read once, not once per later fence)
    unclosed = "```python\n>>> f(1)\n" * 3 + "```python\nx = (\n"
    assert issue_snippets(unclosed) == [Snippet("session", "f(1)\x00f(1)\x00f(1)")]


def test_outputs_are_read_from_probe_lines_and_a_forged_duplicate_keeps_neither() -> None:
    a, b = "0123456789abcdef", "fedcba9876543210"
    assert read_outputs([f"PROBE 0 {a}", f"PROBE 1 {b}", "noise"], 2) == (a, b)
    assert read_outputs([f"PROBE 0 {a}", f"PROBE 0 {b}", f"PROBE 1 {b}"], 2) == (None, b)
    assert read_outputs([f"PROBE 7 {a}", "PROBE 0 xyz"], 2) == (None, None)


def test_only_outputs_that_differ_somewhere_are_evidence_and_only_changes_agree() -> None:
    outs = {"c1": ("a", "x"), "c2": ("b", "x"), "c3": ("b", "x")}
    assert informative(outs, ("a", "x")) == [0]
    assert informative({"c1": ("a", "x")}, ("a", "y")) == [1]
    base = ("a", "x")
    assert output_agreement(("a", "x"), ("b", "x"), base, [0]) == 0.0
    assert output_agreement(("b", "x"), ("b", "y"), base, [0, 1]) == 0.5
    assert output_agreement((None, "x"), ("b", "x"), base, [0]) is None
    # both print what the base prints: no agreement on a fix, no disagreement either
    assert output_agreement(("a", "x"), ("a", "x"), base, [0, 1]) is None
    # two runs that gave nothing do not agree with each other
    assert output_agreement((MISSING, "x"), (MISSING, "x"), base, [0]) == 0.0


def _sig(*lines: str) -> Signature:
    return Signature(1, tuple(lines), "tree")


def test_fixes_sharing_no_line_support_each_other_when_their_outputs_agree() -> None:
    sigs = {
        "fix_a": _sig("m.py:+guard a"),
        "fix_b": _sig("m.py:+guard b"),
        "wrong_1": _sig("m.py:+w", "m.py:+shared"),
        "wrong_2": _sig("m.py:+v", "m.py:+shared"),
    }
    text = dict.fromkeys(sigs, 0.0)
    without = consensus(sigs, text)
    assert max(without["rank"], key=lambda c: without["rank"][c] or 0).startswith("wrong")
    probes = {
        "base": ["err"],
        "outputs": {"fix_a": ["0.0"], "fix_b": ["0.0"], "wrong_1": ["err"], "wrong_2": ["nan"]},
    }
    found = consensus(sigs, text, probes)
    assert max(found["rank"], key=lambda c: found["rank"][c] or 0).startswith("fix")
    assert found["probed"] == 4 and found["informative"] == 1
    # the base did not run the example (no output there): the outputs are no evidence at all
    unusable = consensus(sigs, text, {**probes, "base": [None]})
    assert unusable["rank"] == without["rank"] and unusable["informative"] == 0
    # a wrong candidate whose run gave nothing (crashed, killed) disagrees with every other, as
    # a wrong output does: crashing is never better than being wrong
    crashed = {**probes, "outputs": {**probes["outputs"], "wrong_2": [None]}}
    assert consensus(sigs, text, crashed)["rank"] == found["rank"]
    gone = {k: v for k, v in probes["outputs"].items() if k != "wrong_2"}
    assert consensus(sigs, text, {**probes, "outputs": gone})["rank"] == found["rank"]
    # only a sandbox that could not start leaves a candidate out of the outputs' comparison
    infra = {**probes, "outputs": gone, "reasons": {"wrong_2": "sandbox_error"}}
    assert consensus(sigs, text, infra)["probed"] == 3


PROBLEM = bwrap_problem() or (None if Path("/usr/bin/python3").exists() else "no /usr/bin/python3")
if os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1" and PROBLEM:  # pragma: no cover
    raise RuntimeError(f"CI requires the test sandbox: {PROBLEM}")
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"no sandbox here: {PROBLEM}")

STATS = (
    'def mean(xs):\n    """The mean.\n\n    >>> mean([1, 3])\n    2.0\n    >>> mean([])  # doctest: +SKIP\n'
    '    """\n    return sum(xs) / len(xs)\n'
)


FIX_IF = "def mean(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n"


def _stats_tree(root: Path, source: str) -> None:
    """A one-package tree: ``stats/__init__.py`` holding ``source``."""
    (root / "stats").mkdir(parents=True)
    (root / "stats" / "__init__.py").write_text(source)


def _diff(new: str) -> str:
    old = STATS.splitlines()
    return (
        "diff --git a/stats/__init__.py b/stats/__init__.py\n--- a/stats/__init__.py\n"
        f"+++ b/stats/__init__.py\n@@ -1,{len(old)} +1,{len(new.splitlines())} @@\n"
        + "".join(f"-{line}\n" for line in old)
        + "".join(f"+{line}\n" for line in new.splitlines())
    )


HANG = (
    "import time\ndef mean(xs):\n    while True:\n        try:\n            time.sleep(60)\n"
    "        except BaseException:\n            pass\n"
)


@needs_sandbox
def test_the_probe_runs_the_issue_s_examples_on_each_tree_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentic_rubrics.rank import probes
    from agentic_rubrics.sandbox.testrun import PreparedTree

    monkeypatch.setattr(probes, "SNIPPET_SECONDS", 2)
    monkeypatch.setattr(probes, "GRACE_SECONDS", 1)
    _stats_tree(tmp_path / "repo", STATS)
    patches = {
        "fix_if": _diff(FIX_IF),
        "fix_or": _diff("def mean(values):\n    return sum(values) / (len(values) or 1) * 1.0\n"),
        "no_op": _diff("def mean(xs):\n    pass\n    return sum(xs) / len(xs)\n"),
        "forger": _diff(
            "import os\nos.write(1, b'PROBE 0 0123456789abcdef\\n')\n"
            "def mean(xs):\n    return sum(xs) / len(xs)\n"
        ),
        "broken": _diff("def mean(xs):\n    return sum(xs) / len(xs) +\n"),
        "regress": _diff("def mean(xs):\n    return float(max(xs)) if xs else 0.0\n"),
        "hang": _diff(HANG),
    }
    snippets = issue_snippets(ISSUE.replace("from stats import mean", "import os"))
    snippets += tree_snippets(tmp_path / "repo", patches.values())
    assert snippets[-1] == Snippet("doctest", "mean([1, 3])", "stats")
    snippets.append(Snippet("block", "import random\nprint(random.random())\n"))
    # every package, none named by the issue: imported first, but the examples run without it
    assert packages(tmp_path / "repo", snippets) == [("stats", False)]
    tree = PreparedTree(tmp_path / "repo")
    try:
        found = asyncio.run(probe_pool(tree.path, patches, snippets, python="/usr/bin/python3"))
    finally:
        tree.close()
    assert found.usable(), found.reasons
    out, base = found.outputs, found.base
    assert base is not None
    assert out["fix_if"] == out["fix_or"] != base  # `mean` came from the tree's package
    doc = len(snippets) - 2  # the changed function's own example: the fixes keep its output
    assert out["fix_if"][doc] == base[doc] != out["regress"][doc]
    assert out["no_op"] == base
    assert out["forger"] == base  # what it writes to its output goes nowhere
    assert out["broken"][doc] != base[doc]  # its module does not import: a value of its own
    # the hanging candidate: killed after its first snippet's alarm (caught), nothing after it
    assert out["hang"][0] is not None and out["hang"][0] != base[0]
    assert out["hang"][1:-1] == (None,) * (len(snippets) - 2)
    assert base[-1] == UNSTABLE and {o[-1] for o in out.values()} <= {UNSTABLE}
    assert found.cpu_s > 0


WRONG_1 = "def mean(xs):\n    xs = list(xs)\n    if xs is None:\n        return None\n    return sum(xs) / len(xs)\n"
WRONG_2 = (
    "def mean(xs):\n    xs = list(xs)\n    assert xs is not None\n    return sum(xs) / len(xs)\n"
)


def test_a_run_with_consensus_probes_picks_the_fixes_the_examples_agree_on(tmp_path: Path) -> None:
    """End to end: without the examples, two wrong candidates sharing a line outvote two fixes
    that share none; with ``consensus_probes`` the fixes' outputs agree and one of them is picked.
    The stored record holds counts, not outputs; the setting is hashed only when set."""
    if PROBLEM is not None:
        pytest.skip(f"no sandbox here: {PROBLEM}")
    from agentic_rubrics.pipeline.config import RunConfig
    from agentic_rubrics.pipeline.runner import run
    from agentic_rubrics.runfolder.folder import RunFolder
    from agentic_rubrics.types import Candidate, Task

    _stats_tree(tmp_path / "repo", STATS)
    patches = {
        "fix_if": _diff(FIX_IF),
        "fix_or": _diff("def mean(xs):\n    return sum(xs) / (len(xs) or 1)\n"),
        "wrong_1": _diff(WRONG_1),
        "wrong_2": _diff(WRONG_2),
    }
    task = Task(
        instance_id="stats-1", problem_statement=ISSUE, repo_path=str(tmp_path / "repo"),
        candidates=[Candidate(id=c, patch=p) for c, p in patches.items()],
    )  # fmt: skip
    _stats_tree(tmp_path / "plain", STATS.replace(">>>", "::"))
    hostile = Task(
        instance_id="stats-2", problem_statement=">>> " + "-" * 5000 + "1\nno example here",
        repo_path=str(tmp_path / "plain"),
        candidates=[Candidate(id=c, patch=p) for c, p in patches.items()],
    )  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(task.model_dump_json() + "\n" + hostile.model_dump_json() + "\n")
    picks, records = {}, {}
    for probes in (False, True):
        config = RunConfig(
            consensus_probes=probes, selectors=["behaviour_consensus"], plots=False,
            bootstrap_resamples=0, tests={"python": "/usr/bin/python3"},
        )  # fmt: skip
        out = tmp_path / f"run-{probes}"
        run(tasks, out, config, stages=("explore", "judge"))
        record = RunFolder(out).progress()["stats-1"].baselines["behaviour_consensus"]
        records[probes] = record
        picks[probes] = max(record["rank"], key=lambda c: record["rank"][c] or 0)
    assert picks[False].startswith("wrong") and picks[True].startswith("fix")
    assert records[True]["probed"] == 4 and records[True]["informative"] >= 1
    assert "probed" not in records[False]
    # no example in the issue nor in the changed function's docstring: said, not failed
    plain = RunFolder(tmp_path / "run-True").progress()["stats-2"].baselines["behaviour_consensus"]
    assert plain["probes_reason"] == "no_examples" and plain["probed"] == 0
    docker = RunConfig(consensus_probes=True, selectors=["behaviour_consensus"], plots=False,
                       bootstrap_resamples=0, tests={"docker": "local"})  # fmt: skip
    run(tasks, tmp_path / "run-docker", docker, stages=("explore", "judge"))
    found = RunFolder(tmp_path / "run-docker").progress()["stats-1"].baselines
    assert found["behaviour_consensus"]["probes_reason"] == "docker_not_supported"
    assert all(len(str(v)) < 200 for v in records[True].values())  # counts and ranks only
    plain, probed = RunConfig(), RunConfig(consensus_probes=True)
    assert "consensus_probes" not in plain.hashed()
    assert probed.hashed()["consensus_probes"]["python"] == "/usr/bin/python3"
    assert RunConfig(consensus_probes=True, tests={"python": "/x/python"}).content_hash() != (
        probed.content_hash()
    )
    # how tests are graded is not what the examples print
    assert RunConfig(consensus_probes=True, tests={"reruns": 3}).content_hash() == (
        probed.content_hash()
    )


def test_the_changed_definitions_own_examples_come_from_the_base_tree(tmp_path: Path) -> None:
    mod = (
        'def f(x):\n    """F.\n\n    >>> f(1)\n    2\n    >>> f(2)  # doctest: +SKIP\n    """\n'
        "    return x + 1\n\n\n"
        'class K:\n    def g(self):\n        """G.\n\n        >>> K().g()\n        0\n        """\n'
        "        return 0\n"
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(mod)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mod.py").write_text('def test():\n    """>>> 1"""\n')

    def change(path: str, line: str, new: str) -> str:
        return (
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,1 @@\n"
            f"-{line}\n+{new}\n"
        )

    in_f = "diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
    f_1 = in_f + "@@ -7,1 +7,1 @@ def f(x):\n-    return x + 1\n+    return x + 2\n"
    f_2 = in_f + "@@ -7,1 +7,1 @@ def f(x):\n-    return x + 1\n+    return 1 + x\n"
    g_1 = (
        in_f + "@@ -11,8 +11,8 @@\n class K:\n     def g(self):\n"
        '         """G.\n \n         >>> K().g()\n         0\n         """\n'
        "-        return 0\n+        return -0\n"
    )
    outside = change("../outside.py", "x = 1", "x = 2")
    a_test = change("tests/test_mod.py", "def test():", "def test(): pass")
    found = tree_snippets(tmp_path, [g_1, f_1, f_2, outside, a_test, "not a patch"])
    # f first (two candidates change it), its skipped example left out; g's class found; nothing
    # from outside the tree or from a test file
    assert found == [
        Snippet("doctest", "f(1)", "pkg.mod"),
        Snippet("doctest", "K().g()", "pkg.mod"),
    ]
    assert packages(tmp_path, found) == [("pkg", False)]  # a doctest imports its module itself


def test_probes_that_run_nowhere_end_the_run_with_the_reason(tmp_path: Path) -> None:
    """Asked for, and the environment cannot run them on any task: the report says so and the run
    exits 1; a task without examples is no failure."""
    from typer.testing import CliRunner

    from agentic_rubrics.cli.app import app
    from agentic_rubrics.types import Candidate, Task

    _stats_tree(tmp_path / "repo", STATS)
    task = Task(
        instance_id="stats-1", problem_statement=ISSUE, repo_path=str(tmp_path / "repo"),
        candidates=[Candidate(id="a", patch=_diff(FIX_IF)), Candidate(id="b", patch=_diff(WRONG_1))],
    )  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(task.model_dump_json() + "\n")
    common = ["run", "--tasks", str(tasks), "--consensus-probes", "--no-trajectories", "-q"]
    bad = [*common, "--out", str(tmp_path / "bad"), "--test-python", str(tmp_path / "no-python")]
    done = CliRunner().invoke(app, bad)
    assert done.exit_code == 1, done.output
    report = json.loads((tmp_path / "bad" / "report.json").read_text())
    assert report["probes"] == {
        "tasks": 1, "ran": 0, "informative": 0, "reasons": {"interpreter_unusable": 1}
    }  # fmt: skip
    assert "consensus_probes ran the examples on no task" in report["problems"]["fatal"][0]
    plain = json.loads(task.model_dump_json())
    plain["problem_statement"] = "mean is wrong"
    (tmp_path / "repo" / "stats" / "__init__.py").write_text(STATS.replace(">>>", "::"))
    tasks.write_text(json.dumps(plain) + "\n")
    done = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "none")])
    report = json.loads((tmp_path / "none" / "report.json").read_text())
    assert report["probes"]["reasons"] == {"no_examples": 1} and not report["problems"]["fatal"]
