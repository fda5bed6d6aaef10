"""Content features in the library and the offline_content selector: function agreement from the
post-image analysis when the tree is at hand (else the diff), the post-image findings, weights read with
their provenance, and a report that says what they were fitted on and warns when a run was in that fit."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.pipeline.config import BASE_SELECTORS, RunConfig
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.rank.content import (
    CONTENT_FEATURES,
    ContentWeights,
    content_features,
    content_ranking,
    instance_hash,
    post_row,
    read_weights,
    shipped_weights,
)
from agentic_rubrics.rank.selectors import BUILTIN, FeatureInput
from agentic_rubrics.rank.selectors.offline_content import OfflineContentSelector
from agentic_rubrics.rubric.checks_repo import RepoAnalyses
from agentic_rubrics.rubric.postimage import analyze_patch
from agentic_rubrics.types import Candidate, Task

from .conftest import git

MakeRepo = Callable[[dict[str, bytes | str]], tuple[Path, Callable[..., str]]]

MOD = """\
def first(x):
    a = x
    return a


def second(x):
    return x
"""


def _patches(repo: Path, diff: Callable[..., str]) -> dict[str, str]:
    out = {}
    for cid, text in {
        # a and b change first() on different lines: no line in common, the same function
        "a": MOD.replace("a = x", "a = x + 1"),
        "b": MOD.replace("return a", "return a * 2"),
        "c": MOD.replace("    return x\n", "    return y\n"),  # second(): a new undefined name
    }.items():
        (repo / "pkg/mod.py").write_text(text)
        out[cid] = diff()
        git(repo, "reset", "-q", "--hard")
    out["d"] = out["a"].replace("-    a = x", "-    a = x_not_there")  # does not apply
    return out


def test_function_agreement_and_findings_come_from_the_post_image_when_the_tree_is_at_hand(
    git_repo: MakeRepo,
) -> None:
    repo, diff = git_repo({"pkg/__init__.py": "", "pkg/mod.py": MOD})
    patches = _patches(repo, diff)
    post = {cid: post_row(analyze_patch(repo, p)) for cid, p in patches.items()}
    assert post["a"] is not None and post["a"]["functions"] == ["pkg/mod.py::first"]
    with_tree = content_features(patches, post)
    without = content_features(patches, {})
    a, c, d = with_tree["a"], with_tree["c"], with_tree["d"]
    assert a is not None and c is not None and d is not None
    # a and b change first(): one in two others of a's pool (b; d did not apply, its diff says first)
    assert (a["not_applied"], a["new_error"]) == (0.0, 0.0)
    assert (c["new_error"], d["not_applied"]) == (1.0, 1.0)
    assert a["func_agreement"] == pytest.approx(2 / 3)  # b and d (from its diff) share first()
    assert c["func_agreement"] == 0.0
    # no tree: the same function sets from the diff, and no finding at all
    assert without["c"] is not None and without["d"] is not None
    assert without["c"]["new_error"] == 0.0 and without["d"]["not_applied"] == 0.0
    assert without["a"] is not None and without["a"]["func_agreement"] == pytest.approx(2 / 3)


def _weights(path: Path, fit_ids: list[str], **weights: float) -> Path:
    w = ContentWeights(
        weights=weights,
        bias=0.0,
        fitted_on={"data": "made_here.jsonl", "instances": len(fit_ids)},
        fit_ids=frozenset(instance_hash(i) for i in fit_ids),
    )
    path.write_text(json.dumps(w.to_json()))
    return path


def test_the_selector_reads_the_judge_s_analyses_and_ranks_by_its_weights(
    git_repo: MakeRepo, tmp_path: Path
) -> None:
    repo, diff = git_repo({"pkg/__init__.py": "", "pkg/mod.py": MOD})
    patches = _patches(repo, diff)
    task = Task(
        instance_id="t-1",
        problem_statement="first is off by one",
        candidates=[Candidate(id=c, patch=p) for c, p in patches.items()],
    )
    analyses = RepoAnalyses(repo)
    selector = OfflineContentSelector(_weights(tmp_path / "w.json", [], new_error=-5.0, s=1.0))
    found = asyncio.run(selector.features(FeatureInput(task, None, analyses)))
    assert found["content_postimage"] == {"tree": True, "analysed": 4}
    assert analyses.analysed == 4  # the analyses live on the task's RepoAnalyses, shared
    stored = found["content_features"]
    assert stored["c"]["new_error"] == 1.0
    json.dumps(found)  # plain JSON: numbers only, no function names, no patch text
    assert "first" not in json.dumps(found)
    ranking = content_ranking(stored, dict.fromkeys(patches, 0.5), selector.weights)
    assert ranking["c"] == pytest.approx(-5.0 + 0.5) and ranking["a"] == pytest.approx(0.5)
    plain = asyncio.run(selector.features(FeatureInput(task)))
    assert plain["content_postimage"] == {"tree": False, "analysed": 0}


def test_weights_files_name_the_file_and_the_shipped_ones_carry_their_provenance(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"weights": {"touches_tests": 1.0}, "bias": 0}))
    with pytest.raises(DataError, match=r"bad\.json: not a content weights file.*touches_tests"):
        read_weights(bad)
    shipped = shipped_weights()
    assert set(shipped.weights) == set(CONTENT_FEATURES)
    assert {"data", "data_sha256", "pools", "instances", "method"} <= set(shipped.fitted_on)
    assert len(shipped.fit_ids) == shipped.fitted_on["instances"]
    assert all(len(h) == 64 for h in shipped.fit_ids)


FIT_IN: OfflineContentSelector | None = None
FIT_OUT: OfflineContentSelector | None = None


@pytest.mark.parametrize("inside", [True, False])
def test_the_report_says_what_the_weights_were_fitted_on_and_warns_when_the_run_was_in_it(
    inside: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines[:2]) + "\n")
    ids = [json.loads(line)["instance_id"] for line in lines[:2]]
    fit_ids = [ids[0], "someone/else-1"] if inside else ["someone/else-1"]
    attr = "FIT_IN" if inside else "FIT_OUT"
    selector = OfflineContentSelector(_weights(tmp_path / "w.json", fit_ids, s=1.0))
    monkeypatch.setattr(sys.modules[__name__], attr, selector)
    monkeypatch.setitem(BUILTIN, "offline_content", f"{__name__}:{attr}")
    selectors = ["offline_content", *[s for s in BASE_SELECTORS if s != "offline_content"]]
    report = run(tasks, tmp_path / "run", RunConfig(selectors=selectors, bootstrap_resamples=0))
    assert report is not None
    fit = report["fitted_weights"]["offline_content"]
    assert fit["data"] == "made_here.jsonl" and fit["instances"] == len(fit_ids)
    assert fit["run_instances"] == 2 and fit["run_instances_in_fit"] == (1 if inside else 0)
    warned = [w for w in report["problems"]["warnings"] if "in-sample" in w]
    markdown = (tmp_path / "run" / "report.md").read_text()
    assert "Weights of `offline_content`: fitted on made_here.jsonl" in markdown
    if inside:
        assert warned == [
            "1 of the run's 2 tasks were in the fit of the 'offline_content' selector's weights"
            " (made_here.jsonl): its figures on them are in-sample, not a measure of how it ranks"
            " new tasks"
        ]
        assert warned[0] in markdown
    else:
        assert warned == []
        assert "in-sample" not in markdown
