"""export-sft: a run of the rubric agent (the shipped fake, native tool calls) on bundled tasks as
fine-tuning data that the `datasets` library loads, every tool call answered, secrets gone, repositories
on one side of the split, the data card's counts adding up; the classifier and judge pairs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.exceptions import ConfigError, DataError
from agentic_rubrics.export.sft import export_sft
from agentic_rubrics.export.split import split_repositories
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.redaction import redactor
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.testing import fake_model, register_script

from .test_redaction import SECRETS as SHAPED

TASKS = ["ferrow__bankdays-114", "harbourline__pagewise-214", "quillworks__durata-57",
         "tallowsoft__envfile-203"]  # fmt: skip
SECRET = "planted-export-secret-7f3a91c2e4"
# one run folder per module (its first run imports litellm and starts the workers: several seconds)
pytestmark = [pytest.mark.xdist_group("export_sft"), pytest.mark.slow]


def _run(root: Path, name: str, tasks: list[str], tool_calls: str, judge: str) -> Path:
    every = write_tasks_jsonl(root / f"{name}-all.jsonl")
    lines = [x for x in every.read_text().splitlines() if json.loads(x)["instance_id"] in tasks]
    tasks_file = root / f"{name}-tasks.jsonl"
    tasks_file.write_text("\n".join(lines) + "\n")
    model = register_script(f"local/fake-export-{name}", fake_model(), function_calling=True)
    settings: dict[str, Any] = {
        "explorer": {"kind": "agent", "model": {"model": model}, "tool_calls": tool_calls,
                     "sandbox": {"type": "local-copy"}, "allow_unisolated": True},
        "judge": {"kind": judge, **({"model": {"model": model}} if judge == "llm" else {})},
        "bootstrap_resamples": 0, "plots": False,
    }  # fmt: skip
    out = root / name
    run(tasks_file, out, load_config(None, settings))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("export")
    native = _run(root, "native", TASKS, "native", "llm")
    text = _run(root, "text", TASKS[:2], "text", "checks")
    return {"native": native, "text": text}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in read_jsonl(path)] if path.stat().st_size else []


def _plant(run: Path, root: Path) -> Path:
    """A copy of the run whose first trajectory holds the secret, thinking and an inline think block."""
    copy = root / "planted"
    shutil.copytree(run, copy)
    path = sorted((copy / "trajectories").glob("*.json"))[0]
    record = json.loads(path.read_text())
    reply = record["steps"][0]["messages"][2]
    assert reply["role"] == "assistant" and reply["tool_calls"]
    reply["content"] = f"<think>weigh the candidates {SECRET}</think>{reply['content']} {SECRET}"
    reply["thinking_blocks"] = [{"type": "thinking", "thinking": "private", "signature": "s"}]
    record["steps"][1]["messages"][-1]["content"] += f"\nTOKEN={SECRET}"
    # secrets known by their shape, in a tool's output recorded before they were redacted there
    shaped = "\n".join(text for text, _ in SHAPED.values())
    record["steps"][1]["messages"][-1]["content"] += f"\n{shaped}"
    path.write_text(json.dumps(record))
    return copy


def test_rubric_export_loads_answers_every_call_and_holds_no_secret(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datasets import load_dataset

    monkeypatch.setenv("AGENTIC_TEST_EXPORT_TOKEN", SECRET)
    planted = _plant(runs["native"], tmp_path)
    out = tmp_path / "sft"
    result = CliRunner().invoke(
        app, ["export-sft", str(runs["native"]), str(planted), "--out", str(out),
              "--no-utility", "--validation", "0.4", "--seed", "3"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "export.json").read_text())
    counts = manifest["counts"]
    # two runs of four tasks: eight trajectories, every one submitted and kept
    assert counts["read"] == 8 and counts["kept"] == 8 and counts["dropped"] == {}
    assert counts["kept"] == counts["train"] + counts["validation"] and counts["validation"] > 0
    assert counts["thinking_removed"] == 1
    for found in out.rglob("*"):
        if found.is_file():
            assert SECRET not in found.read_text(), found
            for kind, (_, secret) in SHAPED.items():
                assert secret not in found.read_text(), (kind, found)
    repos: dict[str, set[str]] = {}
    for side in ("train", "validation"):
        files = {f: str(out / f / f"{side}.jsonl") for f in ("openai", "hf")}
        hf = load_dataset("json", data_files=files["hf"], split="train")
        openai = load_dataset("json", data_files=files["openai"], split="train")
        assert (
            len(hf) == len(openai) == counts[side] == manifest["files"][f"hf/{side}.jsonl"]["rows"]
        )
        repos[side] = set(hf["repo"])
        for row in _rows(out / "openai" / f"{side}.jsonl"):
            messages = row["messages"]
            assert [m["role"] for m in messages[:3]] == ["system", "user", "assistant"]
            assert {t["function"]["name"] for t in row["tools"]} == {
                "bash", "view", "search", "validate", "submit"
            }  # fmt: skip
            for i, m in enumerate(messages):
                assert "thinking_blocks" not in m and "<think>" not in (m["content"] or "")
                for call in m.get("tool_calls") or []:
                    answers = [a for a in messages[i + 1 :] if a["role"] == "tool"]
                    following = messages[i + 1 : i + 1 + len(m["tool_calls"])]
                    assert [a["tool_call_id"] for a in following] == [
                        c["id"] for c in m["tool_calls"]
                    ], (call, answers[:1])
                    json.loads(call["function"]["arguments"])
            assert messages[-2]["tool_calls"][0]["function"]["name"] == "submit"
            assert messages[-1] == {
                "role": "tool",
                "tool_call_id": messages[-2]["tool_calls"][0]["id"],
                "content": load_prompt("training_data")
                .render("submit_accepted", rubric_file="rubrics.yaml")
                .rstrip("\n")
                + "\n",
            }
    assert repos["train"] and repos["validation"] and not repos["train"] & repos["validation"]
    assert repos["train"] | repos["validation"] == {"ferrow/bankdays", "harbourline/pagewise",
                                                    "quillworks/durata", "tallowsoft/envfile"}  # fmt: skip
    card = (out / "README.md").read_text()
    assert "8 trajectories read" in card and "8 kept = " in card and "original licences" in card
    assert manifest["sources"][0]["config_hash"] in card


def test_thinking_is_kept_only_when_asked(runs: dict[str, Path], tmp_path: Path) -> None:
    planted = _plant(runs["native"], tmp_path)
    out = export_sft([planted], tmp_path / "kept", keep_thinking=True, min_auc=None).out
    hf = [r for side in ("train", "validation") for r in _rows(out / "hf" / f"{side}.jsonl")]
    reasoning = [
        m["reasoning_content"] for r in hf for m in r["messages"] if "reasoning_content" in m
    ]
    assert (
        len(reasoning) == 1 and "private" in reasoning[0] and "weigh the candidates" in reasoning[0]
    )
    for side in ("train", "validation"):
        assert "reasoning_content" not in (out / "openai" / f"{side}.jsonl").read_text()


def test_text_actions_export_as_plain_turns(runs: dict[str, Path], tmp_path: Path) -> None:
    out = export_sft([runs["text"]], tmp_path / "text", min_auc=None, validation_fraction=0.0).out
    rows = _rows(out / "openai" / "train.jsonl")
    assert len(rows) == 2 and not (out / "openai" / "validation.jsonl").read_text()
    for row in rows:
        assert "tools" not in row
        roles = [m["role"] for m in row["messages"]]
        assert roles[:2] == ["system", "user"] and set(roles) == {"system", "user", "assistant"}
        assert roles[-1] == "assistant" and "```submit" in row["messages"][-1]["content"]
        assert all("tool_calls" not in m for m in row["messages"])


def test_the_utility_filter_agrees_with_the_report(runs: dict[str, Path], tmp_path: Path) -> None:
    result = export_sft([runs["native"]], tmp_path / "u")
    by_task: dict[str, list[tuple[float, bool]]] = {}
    for _, row in read_jsonl(runs["native"] / "scores.jsonl"):
        if row["score"] is not None and row["resolved"] is not None:
            by_task.setdefault(row["instance_id"], []).append((row["score"], row["resolved"]))
    from agentic_rubrics.rank.metrics import roc_auc

    aucs = {t: roc_auc([s for s, _ in v], [y for _, y in v]) for t, v in by_task.items()}
    separated = {t for t, a in aucs.items() if a is not None and a > 0.5}
    counts = result.manifest["counts"]
    assert counts["kept"] == len(separated) and counts["read"] == 4
    assert counts["dropped"].get("utility", 0) == sum(
        1 for a in aucs.values() if a is not None and a <= 0.5
    )
    kept = {r["instance_id"] for s in ("train", "validation")
            for r in _rows(result.out / "hf" / f"{s}.jsonl")}  # fmt: skip
    assert kept == separated


def test_classifier_and_judge_pairs_in_their_own_prompts(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    c = export_sft([runs["native"]], tmp_path / "c", task="classifier").manifest["counts"]
    rows = [r for s in ("train", "validation") for r in _rows(tmp_path / "c" / "hf" / f"{s}.jsonl")]
    assert len(rows) == c["kept"] == c["read"] - sum(c["dropped"].values())
    assert set(c["dropped"]) <= {"empty_patch", "unlabelled"}
    prompt = load_prompt("patch_classifier")
    patches = {(r["instance_id"], r["candidate_id"]): r["patch"]
               for _, r in read_jsonl(runs["native"] / "patches.jsonl")}  # fmt: skip
    tasks_file = json.loads((runs["native"] / "config.json").read_text())["config"]["tasks_file"]
    issues = {t.instance_id: t.problem_statement for t in load_tasks(Path(tasks_file))}
    for row in rows:
        answer = row["messages"][-1]
        assert answer == {"role": "assistant", "content": "YES 1" if row["resolved"] else "NO 0"}
        patch = patches[(row["instance_id"], row["candidate_id"])]
        assert patch.strip()
        # redacted as everything exported (an issue quoting an env file loses its password)
        assert row["messages"][:-1] == redactor()(
            prompt.messages(issue=issues[row["instance_id"]], patch=patch)
        )
    assert {True, False} == {r["resolved"] for r in rows}

    j = export_sft([runs["native"]], tmp_path / "j", task="judge").manifest["counts"]
    judged = checked = 0
    for _, v in read_jsonl(runs["native"] / "verdicts.jsonl"):
        judged += v["origin"] == "judged"
        checked += v["origin"] == "checked"
    assert j["dropped"]["checked"] == checked and j["kept"] + j["dropped"].get("missing", 0) + j[
        "dropped"
    ].get("empty_patch", 0) == judged + sum(
        1 for _, v in read_jsonl(runs["native"] / "verdicts.jsonl") if v["origin"] == "missing"
    )
    jrows = _rows(tmp_path / "j" / "hf" / "train.jsonl")
    one = jrows[0]
    assert json.loads(one["messages"][-1]["content"]) == {one["item_id"]: one["verdict"]}
    assert f'exactly these item ids: ["{one["item_id"]}"]' in one["messages"][1]["content"]


def test_refusals_and_bad_run_folders_are_named(runs: dict[str, Path], tmp_path: Path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not written by export-sft"):
        export_sft([runs["native"]], foreign, min_auc=None)
    export_sft([runs["native"]], foreign, min_auc=None, force=True)
    export_sft([runs["native"]], foreign, min_auc=None)  # an export folder is written again
    assert (foreign / "notes.txt").read_text() == "mine"
    again = export_sft([runs["native"]], tmp_path / "again", min_auc=None).out
    for name in ("README.md", "export.json", "hf/train.jsonl", "openai/validation.jsonl"):
        assert (again / name).read_bytes() == (foreign / name).read_bytes(), name  # deterministic
    with pytest.raises(ConfigError, match="given twice"):
        export_sft([runs["native"], runs["native"]], tmp_path / "twice")
    broken = tmp_path / "broken"
    shutil.copytree(runs["native"], broken)
    path = sorted((broken / "trajectories").glob("*.json"))[1]
    record = json.loads(path.read_text())
    record["steps"][0]["messages"] = "not a list"
    path.write_text(json.dumps(record))
    with pytest.raises(DataError, match=rf"{path}: steps\[0\]\.messages: "):
        export_sft([broken], tmp_path / "b")
    path.write_text("{not json")
    with pytest.raises(DataError, match=rf"{path}: not JSON"):
        export_sft([broken], tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_the_split_is_by_repository_seeded_and_deterministic() -> None:
    from collections import Counter

    sizes = Counter({f"o/r{i}": i + 1 for i in range(12)})
    first = split_repositories(sizes, 0.25, seed=7)
    assert first == split_repositories(sizes, 0.25, seed=7)
    train, validation = first
    assert not train & validation and train | validation == set(sizes)
    held = sum(sizes[r] for r in validation)
    assert held >= 0.25 * sum(sizes.values()) > held - max(sizes[r] for r in validation)
    assert split_repositories(sizes, 0.25, seed=8) != first
    assert split_repositories(Counter({"a/b": 5}), 0.5, seed=0) == ({"a/b"}, set())
    with pytest.raises(ValueError, match="validation fraction"):
        split_repositories(sizes, 1.0, seed=0)


def test_an_issue_only_attempt_is_its_own_conversation() -> None:
    import asyncio

    from agentic_rubrics.explore.agent import IssueOnlyExplorer
    from agentic_rubrics.export.conversation import from_trajectory
    from agentic_rubrics.llm.door import LLM, LLMConfig
    from agentic_rubrics.runfolder.rows import Trajectory
    from agentic_rubrics.types import Task

    model = register_script("local/fake-export-issue-only", fake_model())
    task = Task(instance_id="acme__x-1", repo="acme/x", problem_statement="`parse_header` fails.")
    _, steps = asyncio.run(IssueOnlyExplorer(LLM(LLMConfig(model=model))).explore(task))
    record = {"instance_id": task.instance_id, "explorer": "issue-only", "status": "ok",
              "steps": steps}  # fmt: skip
    example, why = from_trajectory(Trajectory.model_validate(record))
    assert example is not None and why == ""
    assert [m["role"] for m in example.messages] == ["system", "user", "assistant"]
    assert "parse_header" in example.messages[1]["content"]
    assert "```yaml" in example.messages[2]["content"] and example.tools == []
    failed = {**record, "steps": [{**steps[-1], "valid": False}]}
    assert from_trajectory(Trajectory.model_validate(failed)) == (None, "not_submitted")


def test_pairs_need_the_issue_the_run_scored(runs: dict[str, Path], tmp_path: Path) -> None:
    tasks_file = json.loads((runs["native"] / "config.json").read_text())["config"]["tasks_file"]
    changed = tmp_path / "changed.jsonl"
    rows = [json.loads(x) for x in Path(tasks_file).read_text().splitlines()]
    rows[0]["problem_statement"] += " (edited)"
    changed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=rf"{changed}: {rows[0]['instance_id']}: problem_statement"):
        export_sft([runs["native"]], tmp_path / "p", task="classifier", tasks=changed)
