"""``agentic-rubrics audit-items RUN`` and report.json's non-discriminating counts, checked against
figures computed here, independently, from verdicts.jsonl, scores.jsonl and the rubrics.

One run of three bundled tasks, reported, each with a rubric read from ``rubrics_dir``: a crafted one
(an item passing for all, one failing for all, one the checks-only judge leaves missing, a compound
one), the static explorer's, and none (the third task's rubric is not there: it fails).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import agentic_rubrics as ar
from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import load_examples, write_tasks_jsonl
from agentic_rubrics.explore.static import StaticExplorer
from agentic_rubrics.pipeline.runner import RunConfig, run
from agentic_rubrics.rubric.file import write_rubric
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.item_audit import ItemAuditFile
from agentic_rubrics.runfolder.lock import folder_lock
from agentic_rubrics.sandbox import LocalCopySandbox

pytestmark = pytest.mark.xdist_group("test_item_audit")  # one run for the module
CRAFTED = """\
metadata: {task_summary: "t", underlying_bug: "b"}
axes:
  file_change_rubrics:
    - {id: FC1, description: "Modifies bankdays/calendar.py", weight: 3,
       check: {touches: bankdays/calendar.py}}
    - {id: FC3, description: "Modifies no/such/module.py", weight: 1,
       check: {touches: no/such/module.py}}
  spec_alignment_rubrics:
    - {id: SA1, description: "Raises ValueError and keeps the message", weight: 2}
  integrity_rubrics:  # FC2 here: the pool's docs-only candidate fails every functional item
    - {id: FC2, description: "Changes at most 1000 files\\e[2J", weight: 1, check: {max_files: 1000}}
    - {id: IN1, description: "Adds no skip or xfail marker to tests", weight: 3,
       check: {adds_no_match: "pytest\\\\.mark\\\\.(skip|xfail)"}}
  runtime_rubrics: []
"""


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("items")
    rows = [r for _, r in read_jsonl(write_tasks_jsonl(root / "all.jsonl"))][:3]
    (root / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    given = root / "rubrics"
    (given / rows[0]["instance_id"]).mkdir(parents=True)
    (given / rows[0]["instance_id"] / "rubrics.yaml").write_text(CRAFTED)
    example = next(e for e in load_examples() if e.task.instance_id == rows[1]["instance_id"])

    async def explore() -> Any:
        task = example.task.model_copy(update={"repo_path": str(example.repo_dir)})
        async with LocalCopySandbox(example.repo_dir) as sandbox:
            return (await StaticExplorer().explore(task, sandbox))[0]

    write_rubric(asyncio.run(explore()), given / rows[1]["instance_id"] / "rubrics.yaml")
    config = RunConfig(bootstrap_resamples=0, plots=False, rubrics_dir=str(given))
    run(root / "tasks.jsonl", root / "run", config)
    return root / "run"


def expected(run_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Each (task, item)'s figures from the files, by hand: the majority over repeats, the labels of
    scores.jsonl, the pools of progress.jsonl, ROC-AUC by counting pairs."""
    votes: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for _, r in read_jsonl(run_dir / "verdicts.jsonl"):
        if r["value"] is not None:
            votes[(r["instance_id"], r["item_id"], r["candidate_id"])].append(r["value"])
    labels = {
        (r["instance_id"], r["candidate_id"]): r["resolved"]
        for _, r in read_jsonl(run_dir / "scores.jsonl")
    }
    out = {}
    for _, p in read_jsonl(run_dir / "progress.jsonl"):
        iid = p["instance_id"]
        path = run_dir / "rubrics" / iid / "rubrics.yaml"
        if not path.exists():
            continue
        doc = yaml.safe_load(path.read_text())
        for axis, items in doc["axes"].items():
            for item in items:
                values = {}
                for c in p["candidates"]:
                    v = votes.get((iid, item["id"], c["id"]), [])
                    if v and v.count(1) != v.count(0):
                        values[c["id"]] = int(v.count(1) > v.count(0))
                pos = [v for c, v in values.items() if labels[(iid, c)] is True]
                neg = [v for c, v in values.items() if labels[(iid, c)] is False]
                pairs = [(a > b) + 0.5 * (a == b) for a in pos for b in neg]
                out[(iid, item["id"])] = {
                    "axis": axis,
                    "description": item["description"],
                    "checked": "check" in item,
                    "passed": sum(values.values()),
                    "failed": len(values) - sum(values.values()),
                    "missing": len(p["candidates"]) - len(values),
                    "constant": (
                        None
                        if len(values) < 2 or len(set(values.values())) > 1
                        else ("pass" if 1 in values.values() else "fail")
                    ),
                    "resolved": (sum(pos), len(pos)),
                    "unresolved": (sum(neg), len(neg)),
                    "auc": sum(pairs) / len(pairs) if pairs else None,
                }
    return out


def test_every_item_agrees_with_the_verdicts_and_labels(reported: Path) -> None:
    done = CliRunner().invoke(app, ["audit-items", str(reported), "--format", "json"])
    assert done.exit_code == 0, done.output
    written = (reported / "audit_items.json").read_text()
    audit = ItemAuditFile.model_validate(json.loads(written))
    assert json.loads(done.stdout) == json.loads(written)  # --format json prints the file
    assert audit.to_json()["schema"] == "agentic-rubrics/1"
    report_bytes = (reported / "report.json").read_bytes()
    assert audit.report_sha256 == hashlib.sha256(report_bytes).hexdigest()
    want = expected(reported)
    got = {(t.instance_id, i.id): i for t in audit.tasks for i in t.items}
    assert set(got) == set(want) and len(got) > 20
    for key, w in want.items():
        i = got[key]
        assert (i.passed, i.failed, i.missing) == (w["passed"], w["failed"], w["missing"]), key
        assert i.pass_rate.n == w["passed"] and i.pass_rate.of == w["passed"] + w["failed"]
        assert i.constant == w["constant"], key
        assert i.non_discriminating == (None if i.pass_rate.of < 2 else w["constant"] is not None)
        assert (i.resolved.n, i.resolved.of) == w["resolved"], key
        assert (i.unresolved.n, i.unresolved.of) == w["unresolved"], key
        assert i.roc_auc == pytest.approx(w["auc"]) if w["auc"] is not None else i.roc_auc is None
        assert i.kind == ("checked" if w["checked"] else "judged") and i.axis == w["axis"]
    crafted = {i.id: i for i in audit.tasks[0].items}
    assert crafted["FC2"].constant == "pass" and crafted["FC3"].constant == "fail"
    assert crafted["SA1"].non_discriminating is None  # the checks-only judge leaves it missing
    assert crafted["SA1"].missing_by_reason and crafted["SA1"].compound is not None
    assert crafted["FC1"].non_discriminating is False and crafted["FC1"].difference is not None
    assert audit.tasks[2].rubric == "rubric_not_found" and audit.tasks[2].items == []
    status = json.loads(
        (reported / "rubrics" / audit.tasks[0].instance_id / "status.json").read_text()
    )
    assert status["compound_items"] == ["SA1"]  # the lint's finding, recorded with the rubric
    # the run-level figures, by axis and by kind, are the items' own
    defined = [k for k, w in want.items() if got[k].non_discriminating is not None]
    constant = Counter(want[k]["constant"] for k in defined)
    s = audit.summary
    assert (s.overall.items, s.overall.defined) == (len(want), len(defined))
    assert s.overall.non_discriminating.n == constant["pass"] + constant["fail"]
    assert (s.overall.passes_for_all, s.overall.fails_for_all) == (
        constant["pass"],
        constant["fail"],
    )
    for axis, g in s.by_axis.items():
        assert g.items == sum(1 for w in want.values() if w["axis"] == axis)
        assert g.non_discriminating.n == sum(
            1 for k in defined if want[k]["axis"] == axis and want[k]["constant"]
        )
    assert s.by_kind["judged"].items == 1 and s.by_kind["judged"].defined == 0
    assert s.compound_items == 1 and s.tasks_with_rubric == 2
    # one description across tasks counts once: the crafted IN1 and the static explorer's IN2
    unresolved_by_text: Counter[str] = Counter()
    for w in want.values():
        unresolved_by_text[w["description"]] += w["unresolved"][0]
    top = s.unresolved_passes[0]
    assert top.unresolved.n == max(unresolved_by_text.values())
    assert len(top.items) == 2 and top.description == "Adds no skip or xfail marker to tests"


def test_report_json_counts_and_report_md_points_to_the_audit(reported: Path) -> None:
    report = json.loads((reported / "report.json").read_text())
    want = expected(reported)
    for task in report["tasks"]:
        mine = {k[1]: w for k, w in want.items() if k[0] == task["instance_id"]}
        nd = task["non_discriminating"]
        if not mine:
            assert nd is None  # no rubric
            continue
        assert nd["passes_for_all"] == [i for i, w in mine.items() if w["constant"] == "pass"]
        assert nd["fails_for_all"] == [i for i, w in mine.items() if w["constant"] == "fail"]
        assert nd["count"] == len(nd["passes_for_all"]) + len(nd["fails_for_all"])
        assert nd["of"] == sum(1 for w in mine.values() if w["passed"] + w["failed"] >= 2)
    overall = report["rubrics"]["non_discriminating"]
    counted = [t["non_discriminating"] for t in report["tasks"] if t["non_discriminating"]]
    assert overall["items"]["n"] == sum(t["count"] for t in counted) > 0
    assert overall["items"]["of"] == sum(t["of"] for t in counted)
    assert overall["fails_for_all"] == sum(len(t["fails_for_all"]) for t in counted) >= 1
    assert overall["tasks_with_any"] == sum(1 for t in counted if t["count"])
    md = (reported / "report.md").read_text()
    share = f"{overall['items']['n']}/{overall['items']['of']}"
    assert (
        f"- Non-discriminating items: {share} (" in md and "agentic-rubrics audit-items RUN" in md
    )


def test_the_table_the_python_function_and_the_refusals(reported: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(reported, copy)
    (copy / "audit_items.json").unlink(missing_ok=True)
    audit = ar.audit_items(copy, top=2)  # the package root's name, loaded on first use
    assert (copy / "audit_items.json").is_file() and len(audit.summary.unresolved_passes) == 2
    done = CliRunner().invoke(app, ["audit-items", str(copy), "--items"])
    assert done.exit_code == 0, done.output
    s = audit.summary.overall
    assert f"{s.non_discriminating.n}/{s.defined} (" in done.stdout
    for axis in ("file_change", "spec_alignment", "integrity", "runtime", "checked", "judged"):
        assert f"\n{axis} " in done.stdout
    assert f"{audit.tasks[0].instance_id}/FC3 " in done.stdout and "all fail" in done.stdout
    every = CliRunner().invoke(app, ["audit-items", str(copy), "--top", "100"]).stdout
    assert "Changes at most 1000 files [2J" in every and "\x1b" not in every  # no escape reaches it
    bad = CliRunner().invoke(app, ["audit-items", str(copy), "--format", "xml"])
    assert bad.exit_code == 2 and "expected one of table, json" in bad.output
    with folder_lock(copy):  # another process writing: nothing read half-written
        busy = CliRunner().invoke(app, ["audit-items", str(copy)])
    assert busy.exit_code == 3 and "another process is writing" in busy.output
    (copy / "audit_items.json").unlink()
    (copy / "report.json").unlink()
    done = CliRunner().invoke(app, ["audit-items", str(copy)])
    assert done.exit_code == 2 and "report the run first" in done.output
    assert "agentic-rubrics report --out" in done.output
    assert not (copy / "audit_items.json").exists()
    done = CliRunner().invoke(app, ["audit-items", str(tmp_path / "nothing")])
    assert done.exit_code == 2 and "not a run folder" in done.output
    assert not (tmp_path / "nothing").exists()


def test_one_item_over_crafted_verdicts() -> None:
    """Repeats reduced as S counts them (a split vote is missing), a lone verdict undefined, an
    unlabelled candidate outside the label figures."""
    from agentic_rubrics.report.item_stats import items_of
    from agentic_rubrics.types import Rubric, Verdict

    r = Rubric.model_validate(
        {
            "metadata": {"task_summary": "t", "underlying_bug": "b"},
            "axes": {
                "runtime_rubrics": [
                    {"id": "A", "description": "Keeps a", "weight": 1},
                    {"id": "B", "description": "Keeps b", "weight": 1},
                ]
            },
        }
    )

    def v(cid: str, item: str, value: int | None, repeat: int = 0) -> Verdict:
        origin = "judged" if value is not None else "missing"
        reason = None if value is not None else "provider_error"
        return Verdict(
            instance_id="t", candidate_id=cid, item_id=item, axis="runtime_rubrics", weight=1,
            origin=origin, value=value, reason=reason, repeat=repeat,
        )  # fmt: skip

    rows = [
        *(v("c1", "A", x, n) for n, x in enumerate((1, 1, 0))),  # majority 1
        *(v("c2", "A", x, n) for n, x in enumerate((1, 0))),  # split vote: missing
        v("c3", "A", 0),
        v("c4", "A", 1),
        v("c1", "B", 1),  # B: one verdict, the others missing or without a row
        v("c2", "B", None),
    ]
    labels = {"c1": True, "c2": False, "c3": False, "c4": None}
    a, b = items_of(r, rows, ["c1", "c2", "c3", "c4"], labels)
    assert (a.passed, a.failed, a.missing) == (2, 1, 1)
    assert a.missing_by_reason == {"split_vote": 1} and a.non_discriminating is False
    assert (a.resolved.n, a.resolved.of, a.unresolved.n, a.unresolved.of) == (1, 1, 0, 1)
    assert a.difference == 1.0 and a.roc_auc == 1.0
    assert (b.passed, b.failed, b.missing) == (1, 0, 3)
    assert b.missing_by_reason == {"no_verdict_row": 2, "provider_error": 1}
    assert b.non_discriminating is None and b.constant is None  # one verdict: nothing to compare
    assert b.roc_auc is None and b.difference is None  # no unresolved candidate with a verdict
