"""The selector registry: a new selector is one file, registered through the documented entry point."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.exceptions import ConfigError
from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.pipeline.config import BASE_SELECTORS, RunConfig
from agentic_rubrics.pipeline.runner import report_folder, run
from agentic_rubrics.rank.agreement import line_agreement
from agentic_rubrics.rank.rerank import select, selection_evidence
from agentic_rubrics.rank.selectors import BUILTIN, FeatureInput, get_selector, selector_names
from agentic_rubrics.rank.selectors.self_consistency import NO_LINES
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.types import Candidate, Task

TOY = '''
"""A toy selector: the shortest patch wins (its one file)."""

from agentic_rubrics.rank.selectors import BaseSelector, stored


class ShortestPatch(BaseSelector):
    name = "shortest_patch"
    description = "the shortest patch first"

    async def features(self, given):
        return {"patch_length": {cid: len(p) for cid, p in given.patches.items()}}

    def ranking(self, task):
        lengths = stored(task, "patch_length", self.name)
        return {cid: -float(lengths[cid]) for cid in task.scores}
'''


def install(site: Path, name: str, source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``source`` as module ``toy_<name>``, and a distribution's metadata naming its class ``Toy`` (or
    ``ShortestPatch``) as the selector ``name``: the entry point mechanism another package would use."""
    site.mkdir(exist_ok=True)
    module = f"toy_{name}"
    (site / f"{module}.py").write_text(source)
    meta = site / f"{module}-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    attr = "ShortestPatch" if "class ShortestPatch" in source else "Toy"
    (meta / "entry_points.txt").write_text(
        f"[agentic_rubrics.selectors]\n{name} = {module}:{attr}\n"
    )
    monkeypatch.syspath_prepend(str(site))


@pytest.fixture
def toy_selector(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The toy selector's file, and a distribution's metadata naming it as an entry point."""
    install(tmp_path / "site", "shortest_patch", TOY, monkeypatch)
    return "shortest_patch"


def test_a_selector_in_one_file_shows_up_in_the_report(toy_selector: str, tmp_path: Path) -> None:
    assert toy_selector in selector_names() and toy_selector not in BUILTIN
    lines = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines[:2]) + "\n")
    config = RunConfig(selectors=[*BASE_SELECTORS, toy_selector], bootstrap_resamples=0)
    report = run(tasks, tmp_path / "run", config)
    assert report is not None
    toy = report["selectors"][toy_selector]
    assert toy["tasks"] == 2 and toy["best_at_k"]["1"] is not None
    # its pick is the shortest patch of each task, from the features stored at judge time
    patches = {
        (r["instance_id"], r["candidate_id"]): r["patch"]
        for _, r in read_jsonl(tmp_path / "run" / "patches.jsonl")
    }
    progress = [r for _, r in read_jsonl(tmp_path / "run" / "progress.jsonl")]
    guard = {
        (r["instance_id"], c): g["behaviour"]
        for r in progress
        for c, g in r["baselines"]["guard"].items()
    }
    for task in report["tasks"]:
        pick = task["picks"][toy_selector]
        # every selector's pick is guarded: an empty patch or one that changes nothing is never it
        lengths = {
            c: len(p)
            for (i, c), p in patches.items()
            if i == task["instance_id"] and p.strip() and guard[(i, c)] != "unchanged"
        }
        assert pick["value"] == -min(lengths.values())
        assert lengths[pick["candidate_id"]] == min(lengths.values())
    assert all("patch_length" in r["baselines"] for r in progress)
    # a report-time choice: the toy selector leads without a rerun
    again = report_folder(tmp_path / "run", selectors=[toy_selector, "rubric"])
    assert again["primary_selector"] == toy_selector
    picked = [
        json.loads(x) for x in (tmp_path / "run" / "selections.jsonl").read_text().splitlines()
    ]
    assert {r["model_name_or_path"] for r in picked} == {f"agentic-rubrics/{toy_selector}"}


def test_without_its_entry_point_the_name_is_unknown_and_says_which_are_known() -> None:
    assert "shortest_patch" not in selector_names()
    with pytest.raises(
        ConfigError, match="unknown selector 'shortest_patch'; known: rubric, random"
    ):
        get_selector("shortest_patch")
    with pytest.raises(ValueError, match="distinct names among rubric, random"):
        RunConfig(selectors=["shortest_patch"])


def test_every_builtin_selector_names_itself_and_only_the_classifier_needs_a_model() -> None:
    assert [get_selector(n).name for n in BUILTIN] == list(BUILTIN)
    assert [n for n in BUILTIN if get_selector(n).needs_model] == ["patch_classifier"]


BROKEN = """
from agentic_rubrics.rank.selectors import BaseSelector


class Toy(BaseSelector):
    name = "{name}"
    description = "a selector another package registers"

    async def features(self, given):
        {body}

    def ranking(self, task):
        return {{cid: 0.0 for cid in task.scores}}
"""


def _two_tasks(tmp_path: Path) -> Path:
    lines = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines[:1]) + "\n")
    return tasks


def test_a_selector_another_package_registers_runs_only_when_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install(
        tmp_path / "site",
        "failing",
        BROKEN.format(name="failing", body="raise RuntimeError('boom')"),
        monkeypatch,
    )
    install(tmp_path / "site", "unloadable", "raise ImportError('half installed')\n", monkeypatch)
    assert {"failing", "unloadable"} <= set(selector_names())
    # installed but not chosen: the run neither computes nor loads them
    report = run(_two_tasks(tmp_path), tmp_path / "run", RunConfig(bootstrap_resamples=0))
    assert report is not None and "failing" not in report["selectors"]
    # chosen: what breaks is named
    with pytest.raises(
        ConfigError, match="selector 'unloadable': cannot load toy_unloadable:Toy: ImportError"
    ):
        get_selector("unloadable")
    with pytest.raises(
        ConfigError, match=r"selector 'failing' .*features failed on .*RuntimeError: boom"
    ):
        run(
            _two_tasks(tmp_path),
            tmp_path / "run2",
            RunConfig(selectors=[*BASE_SELECTORS, "failing"], bootstrap_resamples=0),
        )


def test_a_selector_may_not_overwrite_another_ones_features(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = "return {'offline_features': {cid: None for cid in given.patches}}"
    install(tmp_path / "site", "squatter", BROKEN.format(name="squatter", body=body), monkeypatch)
    config = RunConfig(selectors=[*BASE_SELECTORS, "squatter"], bootstrap_resamples=0)
    with pytest.raises(ConfigError, match="'offline_features', already stored by 'offline'"):
        run(_two_tasks(tmp_path), tmp_path / "run", config)


def test_the_no_model_default_is_the_one_chosen_out_of_sample() -> None:
    """BASE_SELECTORS leads with what benchmarks/choose_default.py chose (its evidence file)."""
    evidence = selection_evidence()
    assert BASE_SELECTORS[0] == evidence["default"]
    for name, entry in evidence["selectors"].items():
        if name != "fit":  # the procedure of `agentic-rubrics fit`, not a selector
            get_selector(name)
        assert entry["lite"]["pools"] == 202 and entry["verified"]["pools"] == 137, name


PATCH = """--- a/m.py
+++ b/m.py
@@ -1 +1 @@
-x = 1
+x = {}
"""


def test_self_consistency_never_lets_empty_patches_outvote_a_change() -> None:
    patches = {"e1": "", "e2": "  \n", "e3": "", "a": PATCH.format(2), "b": PATCH.format(3)}
    agreement, _ = line_agreement(patches)
    assert (
        agreement["e1"] == agreement["e2"] == 0.0
    )  # nothing changed: no agreement, even among them
    assert agreement["a"] == agreement["b"] > 0
    scores = {c: SimpleNamespace(empty_patch=is_empty_patch(p)) for c, p in patches.items()}
    task = SimpleNamespace(
        instance_id="t", scores=scores, baselines={"self_consistency": agreement}
    )
    ranking = get_selector("self_consistency").ranking(task)  # type: ignore[arg-type]
    assert ranking["e1"] is ranking["e2"] is None
    assert select("t", ranking, "self_consistency").candidate_id in ("a", "b")


def test_self_consistency_never_picks_a_reply_that_is_not_a_diff() -> None:
    """Three copies of an agent's prose reply, and three different ones, beside two real changes:
    they change no line, agree with nothing, and are never picked (they used to agree fully with
    each other and win the default selector's pick)."""
    prose = ["I could not produce a fix.\n"] * 3 + ["Sorry.", "No diff here\n", "+ not a hunk\n"]
    patches = {f"p{i}": text for i, text in enumerate(prose)}
    patches |= {"a": PATCH.format(2), "b": PATCH.format(3)}
    candidates = [Candidate(id=c, patch=p) for c, p in patches.items()]
    task = Task(instance_id="t", problem_statement="x", candidates=candidates)
    selector = get_selector("self_consistency")
    baselines = asyncio.run(selector.features(FeatureInput(task)))
    assert all(baselines["self_consistency"][f"p{i}"] == 0.0 for i in range(6))
    scores = {c: SimpleNamespace(empty_patch=is_empty_patch(p)) for c, p in patches.items()}
    ranked = SimpleNamespace(instance_id="t", scores=scores, baselines=baselines)
    ranking = selector.ranking(ranked)  # type: ignore[arg-type]
    assert {c for c, v in ranking.items() if v is not None} == {"a", "b"}
    assert select("t", ranking, "self_consistency").candidate_id in ("a", "b")
    del baselines[NO_LINES]  # a run stored before the list: only the agreement values guard it
    ranking = selector.ranking(SimpleNamespace(instance_id="t", scores=scores, baselines=baselines))  # type: ignore[arg-type]
    assert select("t", ranking, "self_consistency").candidate_id in ("a", "b")


def test_a_run_stored_before_the_list_of_no_line_candidates_never_picks_one_either(
    tmp_path: Path,
) -> None:
    """A folder whose tasks were stored before self-consistency listed its candidates with no changed
    line keeps the old agreement values, under which three copies of a prose reply agree fully: the
    report takes the list from the folder's patches, and never picks one."""
    record = json.loads(write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()[0])
    record["candidates"] += [{"id": f"prose{i}", "patch": "Sorry, no fix.\n"} for i in range(3)]
    (tmp_path / "t.jsonl").write_text(json.dumps(record) + "\n")
    out = tmp_path / "run"
    run(tmp_path / "t.jsonl", out, RunConfig(bootstrap_resamples=0, plots=False))
    rows = [r for _, r in read_jsonl(out / "progress.jsonl")]
    for row in rows:  # as an older version stored them: no list, prose agreeing fully
        row["baselines"].pop(NO_LINES)
        row["baselines"]["self_consistency"].update({f"prose{i}": 1.0 for i in range(3)})
    (out / "progress.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = report_folder(out)
    assert report.primary_selector == "self_consistency"
    (picked,) = [r for _, r in read_jsonl(out / "selections.jsonl")]
    assert picked["model_patch"].startswith("diff --git"), picked
