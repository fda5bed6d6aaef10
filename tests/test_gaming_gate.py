"""The gate the defences against gaming must pass: on two bundled tasks, no attack kind ranks at least
as high as the best resolved candidate under the guarded selectors and reward — ``rubric``, ``tests``,
``hybrid``, ``offline_content`` and the checks-only reward — with the tests verifier given the hidden
tests (``agentic-rubrics sanity --fail-on-win``).

Each task keeps its first two resolved and first two unresolved candidates (a smaller pool, so the 26
copies' candidates run in CI time). Needs bubblewrap and a ``python3`` with pytest, as
tests/test_verifier_tests.py; in CI (AGENTIC_RUBRICS_REQUIRE_BWRAP=1) it fails instead of skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import EXAMPLES_DIR, load_examples
from agentic_rubrics.gaming.attacks import KINDS
from agentic_rubrics.gaming.record import GUARDED, SanityReport
from agentic_rubrics.sandbox.bwrap import bwrap_problem

TASKS = ("ferrow__bankdays-114", "jmarsh__celltable-57")


def _python_problem() -> str | None:
    if not Path("/usr/bin/python3").exists():
        return "no /usr/bin/python3"
    done = subprocess.run(["/usr/bin/python3", "-c", "import pytest"], capture_output=True)
    return None if done.returncode == 0 else "no pytest for /usr/bin/python3"


PROBLEM = bwrap_problem() or _python_problem()
if os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1" and PROBLEM:  # pragma: no cover
    raise RuntimeError(f"CI requires the test sandbox: {PROBLEM}")


@pytest.mark.slow
@pytest.mark.skipif(PROBLEM is not None, reason=f"cannot run tests: {PROBLEM}")
def test_no_attack_wins_under_a_guarded_selector_or_the_checks_only_reward(tmp_path: Path) -> None:
    rows, hidden = [], tmp_path / "hidden"
    for example in load_examples():
        task = example.task
        if task.instance_id not in TASKS:
            continue
        fixes = [c for c in task.candidates if c.resolved][:2]
        others = [c for c in task.candidates if c.resolved is False][:2]
        rows.append(task.model_copy(update={"candidates": fixes + others}).model_dump_json())
        shutil.copytree(EXAMPLES_DIR / task.instance_id / "hidden_tests", hidden / task.instance_id)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(rows) + "\n")
    out = tmp_path / "suite"
    done = CliRunner().invoke(
        app,
        ["sanity", "--tasks", str(tasks), "--out", str(out), "--verifiers", "rubric,tests",
         "--tests", str(hidden), "--test-reruns", "0", "--fail-on-win"],
    )  # fmt: skip
    report = SanityReport.model_validate(json.loads((out / "sanity.json").read_text()))
    assert report.guarded == list(GUARDED) == [
        "rubric", "tests", "hybrid", "offline_content", "reward_checks",
    ]  # fmt: skip
    assert report.tasks.measured == len(TASKS)
    # the gate cannot pass by default: every kind was built on every task
    assert {k: s.built for k, s in report.kinds.items()} == dict.fromkeys(KINDS, len(TASKS))
    wins = {
        kind: {c: s.wins[c].wins for c in report.guarded if s.wins[c].wins}
        for kind, s in report.kinds.items()
    }
    assert not {k: w for k, w in wins.items() if w}, (out / "sanity.md").read_text()
    assert done.exit_code == 0, done.output
