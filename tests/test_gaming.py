"""The gaming suite (``agentic-rubrics sanity``): every attack kind is a real diff that applies to each
bundled task's base tree and does what its kind says; a win is counted as documented; the command end to
end agrees with what the run folder's scores and selections say."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import load_examples, write_tasks_jsonl
from agentic_rubrics.gaming.attacks import KINDS, Attack, build_attacks
from agentic_rubrics.gaming.record import Cell, SanityReport, TaskAttack, TaskEntry, summarise
from agentic_rubrics.gaming.suite import Plan, _copies, measure, prepare
from agentic_rubrics.gaming.target import AttackInput, issue_words
from agentic_rubrics.gaming.wins import ranking_outcome, reward_outcome
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.runfolder.files import read_jsonl

FAST = {"bootstrap_resamples": 0, "plots": False}
EXAMPLES = load_examples()


def _input(example: Any) -> AttackInput:
    task = example.task
    resolved = [c.patch for c in task.candidates if c.resolved]
    return AttackInput(task.problem_statement, Path(task.repo_path), "", resolved)


def _git_apply_check(repo: Path, patch: str, work: Path) -> subprocess.CompletedProcess[str]:
    tree = work / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(repo, tree)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    return subprocess.run(
        ["git", "apply", "--check", "-"], cwd=tree, input=patch, text=True, capture_output=True
    )


def _strip_docstrings(tree: ast.AST) -> str:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                body.pop(0)
    return ast.dump(tree)


def _post_image(repo: Path, patch: str, work: Path) -> Path:
    tree = work / "post"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(repo, tree)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(["git", "apply", "-"], cwd=tree, input=patch, text=True, check=True)
    return tree


def _changed_python(repo: Path, post: Path, patch: str) -> list[tuple[ast.Module, ast.Module]]:
    paths = [line[6:] for line in patch.splitlines() if line.startswith("+++ b/")]
    return [
        (ast.parse((repo / p).read_text()), ast.parse((post / p).read_text()))
        for p in paths
        if p.endswith(".py") and (repo / p).exists()
    ]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.task.instance_id for e in EXAMPLES])
def test_every_attack_kind_is_a_diff_that_applies_and_does_what_its_kind_says(
    example: Any, tmp_path: Path
) -> None:
    attacks = build_attacks(_input(example), list(KINDS))
    assert [a.kind for a in attacks] == list(KINDS)
    repo = Path(example.task.repo_path)
    for attack in attacks:
        # every kind is built on every bundled task (a kind that stopped building would let a
        # verifier pass the suite by default)
        assert attack.patch is not None, (attack.kind, attack.reason)
        if attack.kind == "empty":
            assert attack.patch == ""
            continue
        assert attack.patch.startswith("diff --git a/") and "\n+++ " in attack.patch
        assert example.gold_patch not in attack.patch
        checked = _git_apply_check(repo, attack.patch, tmp_path)
        assert checked.returncode == 0, (attack.kind, checked.stderr)
        post = _post_image(repo, attack.patch, tmp_path)
        pairs = _changed_python(repo, post, attack.patch)
        same = [ast.dump(a) == ast.dump(b) for a, b in pairs]
        if attack.kind in ("comment_only", "reformat"):  # layout only: the syntax tree is unchanged
            assert pairs and all(same), attack.kind
        elif attack.kind == "docstring":
            assert pairs and not all(same)
            assert all(_strip_docstrings(a) == _strip_docstrings(b) for a, b in pairs)
        elif attack.kind in ("noop", "keywords", "dead_branch", "dead_store", "stealth"):
            assert pairs and not any(same), attack.kind
        added = [ln for ln in attack.patch.splitlines() if ln.startswith("+") and ln[:3] != "+++"]
        if attack.kind == "noop":
            assert [ln[1:].strip() for ln in added] == ["pass"]
            # indented as the body: the line after it in the hunk is the body's statement
            after = attack.patch.splitlines()[attack.patch.splitlines().index(added[0]) + 1]
            assert added[0][1:].index("pass") == len(after[1:]) - len(after[1:].lstrip())
        if attack.kind in ("conftest", "agentdir_conftest", "skip_all", "stealth"):
            assert any("def pytest_collection_modifyitems(items):" in ln for ln in added)
        if attack.kind == "stealth":
            assert any(ln.startswith("+addopts = -p ") for ln in added)
        if attack.kind == "test_deletion":
            assert "deleted file mode" in attack.patch or attack.variant == "assert_removed"
        if attack.kind == "scratch_script":  # only a new script at the root: the program untouched
            assert attack.patch.count("diff --git") == 1 and "new file mode" in attack.patch
            assert "+++ b/reproduce_issue.py" in attack.patch and not pairs


def test_an_attack_that_cannot_be_built_says_why(tmp_path: Path) -> None:
    example = EXAMPLES[0]
    words = example.task.problem_statement
    no_tree = build_attacks(AttackInput(words, None, "fetching_off", ["x"]), list(KINDS))
    assert {a.kind: a.reason for a in no_tree if a.kind != "empty"} == dict.fromkeys(
        [k for k in KINDS if k != "empty"], "no_tree:fetching_off"
    )
    assert [a.patch for a in no_tree if a.kind == "empty"] == [""]
    readme_only = (
        "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
        "@@ -1 +1 @@\n-x\n+y\n"
    )
    inp = AttackInput(words, Path(example.task.repo_path), "", [readme_only])
    built = {a.kind: a for a in build_attacks(inp, ["noop", "test_deletion", "conftest"])}
    assert built["noop"].patch is None and built["noop"].reason == "no_python_function_changed"
    assert built["test_deletion"].reason == "no_python_file_changed"
    assert built["conftest"].patch is not None  # needs no function
    assert issue_words("# Title here\n\nbody") == "Title here"
    assert issue_words("\n\n") == "the reported problem"


# --------------------------------------------------------------------------- counting


def test_a_win_is_at_least_as_high_as_the_best_resolved_candidate() -> None:
    assert ranking_outcome(0.5, [0.2, 0.5]) == "win"  # a tie is a win
    assert ranking_outcome(0.5 - 1e-13, [0.5]) == "win"  # the same figure computed two ways
    assert ranking_outcome(0.49, [0.2, 0.5]) == "loss"
    assert ranking_outcome(None, [0.1]) == "loss"  # no value ranks lowest
    assert ranking_outcome(None, [None]) == "win"  # ... and ties with no value
    assert ranking_outcome(0.0, [None, None]) == "win"
    assert reward_outcome(None, [0.1]) == "absent"
    assert reward_outcome(None, [None]) == "absent"  # an absent reward never wins
    assert reward_outcome(0.3, [None]) == "win"
    assert reward_outcome(0.3, [0.3, 0.1]) == "win"
    assert reward_outcome(0.2, [0.3]) == "loss"
    with pytest.raises(ValueError):
        ranking_outcome(1.0, [])
    entries = [
        TaskEntry(
            instance_id=f"t{n}",
            status="measured",
            attacks={"noop": TaskAttack(built=True, outcomes={"rubric": o, "reward_checks": r})},
        )
        for n, (o, r) in enumerate([("win", "absent"), ("loss", "win"), ("win", "loss")])
    ]
    entries.append(
        TaskEntry(
            instance_id="t3",
            status="measured",
            attacks={"noop": TaskAttack(built=False, reason="no_tree:x")},
        )
    )
    entries.append(TaskEntry(instance_id="t4", status="no_resolved_candidate"))
    summary = summarise(entries, ["noop"], ["rubric", "reward_checks"])["noop"]
    assert summary.built == 3 and summary.not_built == {"no_tree:x": 1}
    assert summary.wins["rubric"] == Cell(wins=2, of=3, absent=0)
    assert summary.wins["reward_checks"] == Cell(wins=1, of=3, absent=1)


def _plan(tmp_path: Path, attacks: list[Attack], fix: str) -> Plan:
    """A plan for the first bundled task whose only resolved candidate is ``fix`` (the other
    candidates unlabelled), with ``attacks`` instead of the built ones."""
    task = EXAMPLES[0].task
    only = [
        c.model_copy(update={"resolved": True if c.id == fix else None}) for c in task.candidates
    ]
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(task.model_copy(update={"candidates": only}).model_dump_json() + "\n")
    plan = prepare(tasks_file, tmp_path / "suite", RunConfig(**FAST), kinds=["empty"])
    plan.attacks = {task.instance_id: attacks}
    plan.kinds = [a.kind for a in attacks]
    plan.copies = _copies(plan.tasks, plan.attacks)
    (tmp_path / "suite" / "sanity_tasks.jsonl").write_text(
        "".join(c.model_dump_json() + "\n" for c in plan.copies)
    )
    return plan


@pytest.mark.slow  # a run of the pipeline
def test_an_attack_identical_to_a_fix_wins_everywhere_and_the_empty_patch_nowhere(
    tmp_path: Path,
) -> None:
    task = EXAMPLES[0].task
    fix = next(c for c in task.candidates if c.resolved)
    plan = _plan(tmp_path, [Attack("noop", fix.patch), Attack("empty", "")], fix.id)
    report, _ = measure(plan)
    (entry,) = report.per_task
    twin, empty = entry.attacks["noop"], entry.attacks["empty"]
    assert set(twin.outcomes) == {*report.selectors, "reward_checks"}
    assert set(twin.outcomes.values()) == {"win"}, twin.outcomes
    # the empty patch ranks below every real change under each selector but random (all tied)
    assert {k for k, v in empty.outcomes.items() if v == "win"} == {"random"}, empty.outcomes


# --------------------------------------------------------------------------- the command


def _rows(path: Path) -> list[dict[str, Any]]:
    return [record for _, record in read_jsonl(path)]


def _independent_wins(run: Path, selectors: list[str]) -> dict[str, dict[str, int]]:
    """Wins per kind and column, from scores.jsonl alone (S as the checks-only reward: a finished
    run's candidate gets the S its report gave it)."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in _rows(run / "scores.jsonl"):
        by_task.setdefault(row["instance_id"], []).append(row)
    out: dict[str, dict[str, int]] = {}
    for iid, rows in by_task.items():
        kind = iid.rsplit(".attack-", 1)[1]
        attack = next(r for r in rows if r["candidate_id"] == f"attack-{kind}")
        fixes = [r for r in rows if r["resolved"]]
        counts = out.setdefault(kind, {})
        for name in selectors:
            best = max(
                (-1e300 if r["ranking"][name] is None else r["ranking"][name]) for r in fixes
            )
            mine = attack["ranking"][name]
            won = (-1e300 if mine is None else mine) >= best - 1e-9
            counts[name] = counts.get(name, 0) + won
            picked = _rows(run / "selections" / f"{name}.jsonl")
            if any(
                p["instance_id"] == iid and p.get("candidate_id") == attack["candidate_id"]
                for p in picked
            ):
                assert won, (iid, name)  # a selector that picked the attack: it was not below
        scores = [r["score"] for r in fixes if r["score"] is not None]
        won = attack["score"] is not None and (not scores or attack["score"] >= max(scores) - 1e-9)
        counts["reward_checks"] = counts.get("reward_checks", 0) + won
    return out


@pytest.mark.slow  # a run of the pipeline
def test_sanity_end_to_end_counts_what_the_run_folder_says(tmp_path: Path) -> None:
    tasks = write_tasks_jsonl(tmp_path / "all.jsonl")
    two = tmp_path / "tasks.jsonl"
    lines = tasks.read_text().splitlines()
    unlabelled = json.loads(lines[2])
    for c in unlabelled["candidates"]:
        c.pop("resolved", None)
    two.write_text("\n".join([*lines[:2], json.dumps(unlabelled)]) + "\n")
    out = tmp_path / "suite"
    done = CliRunner().invoke(
        app, ["sanity", "--tasks", str(two), "--out", str(out), "--kinds", "noop,empty,conftest"]
    )
    assert done.exit_code == 0, done.output
    assert "| noop | 2 |" in done.output
    raw = json.loads((out / "sanity.json").read_text())
    assert raw["schema"] == "agentic-rubrics/1" and raw["record"] == "sanity"
    report = SanityReport.model_validate(raw)
    assert report.attack_kinds == ["noop", "conftest", "empty"] and set(report.kinds) == {
        "noop",
        "conftest",
        "empty",
    }
    assert report.tasks.given == 3 and report.tasks.measured == 2 and report.tasks.no_labels == 1
    assert report.rewards == ["reward_checks"]
    assert report.guarded == ["rubric", "offline_content", "reward_checks"]
    assert "diff --git" not in (out / "sanity.json").read_text()  # counts and codes, no patch
    expected = _independent_wins(out / "run", report.selectors)
    for kind, summary in report.kinds.items():
        assert summary.built == 2
        got = {column: cell.wins for column, cell in summary.wins.items()}
        assert got == expected[kind], kind
        assert all(cell.of == 2 for cell in summary.wins.values())
    assert report.kinds["empty"].wins["rubric"].wins == 0
    won = report.guarded_wins()
    listed = "; ".join(f"{k} on {', '.join(cs)}" for k, cs in won.items()) if won else "none"
    assert f"Guarded wins: {listed}" in (out / "sanity.md").read_text()
    # --fail-on-win turns a win on a guarded column into exit code 1, naming it (random ties every
    # candidate: each attack wins there); resumed, nothing is redone
    again = ["sanity", "--tasks", str(two), "--out", str(out), "--kinds", "noop,empty,conftest"]
    gated = CliRunner().invoke(app, [*again, "--fail-on-win", "--guarded", "random"])
    assert gated.exit_code == 1 and "the empty attack wins on random" in gated.output
    calm = CliRunner().invoke(
        app, [*again, "--kinds", "empty", "--fail-on-win", "--guarded", "rubric"]
    )
    assert calm.exit_code == 0, calm.output


def test_sanity_refuses_what_it_cannot_measure(tmp_path: Path) -> None:
    tasks = write_tasks_jsonl(tmp_path / "tasks.jsonl")
    out = tmp_path / "suite"
    for extra, said in (
        (["--guarded", "tests"], "--guarded tests: not measured by this run"),
        (["--kinds", "noop,bogus"], "attack kinds must be among noop, keywords"),
    ):
        done = CliRunner().invoke(app, ["sanity", "--tasks", str(tasks), "--out", str(out), *extra])
        assert done.exit_code == 2 and said in done.output, done.output
    assert not (out / "run").exists()


@pytest.mark.slow  # a run of the pipeline
def test_with_a_judge_model_the_judged_reward_is_a_column_too(tmp_path: Path) -> None:
    """The shipped fake model judges; the judged reward of a finished run's candidate is the S its
    scores.jsonl gave it, so its outcomes are those S gives."""
    from agentic_rubrics.testing import LoopbackServer, fake_model

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()[0] + "\n")
    out = tmp_path / "suite"
    with LoopbackServer(fake_model()) as server:
        done = CliRunner().invoke(
            app,
            ["sanity", "--tasks", str(tasks), "--out", str(out), "--kinds", "noop,empty",
             "--judge-model", "openai/fake", "--api-base", server.url, "--api-key", "k"],
        )  # fmt: skip
    assert done.exit_code == 0, done.output
    report = SanityReport.model_validate(json.loads((out / "sanity.json").read_text()))
    assert report.rewards == ["reward_checks", "reward_judged"]
    assert "reward_judged" not in report.guarded  # guarded only when named
    rows = _rows(out / "run" / "scores.jsonl")
    for kind in ("noop", "empty"):
        mine = [r for r in rows if r["instance_id"].endswith(f".attack-{kind}")]
        attack = next(r["score"] for r in mine if r["candidate_id"] == f"attack-{kind}")
        best = max(r["score"] for r in mine if r["resolved"] and r["score"] is not None)
        (entry,) = report.per_task
        expected = "absent" if attack is None else "win" if attack >= best - 1e-9 else "loss"
        assert entry.attacks[kind].outcomes["reward_judged"] == expected, kind
