"""Verifiers are one idea in one folder: a verifier from outside the package is its class, its spec and a
selector — no library file names it — and it runs end to end like the built-in ones (artifact, grades,
resume, report). A run folder written before verifiers had their folder still reads and resumes."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Annotated, Any

import pytest

import agentic_rubrics as ar
from agentic_rubrics.patch import parse_patch
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.pipeline.runner import run, write_report
from agentic_rubrics.pipeline.verifiers import (
    DEFAULT_VERIFIERS,
    Graded,
    TaskScope,
    VerifierSettings,
    VerifierSpec,
    default_selectors,
    register_verifier,
)
from agentic_rubrics.pipeline.verifiers.artifacts import earlier_artifact
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.records import ArtifactRecord
from agentic_rubrics.runfolder.verifier_rows import ArtifactStatus
from agentic_rubrics.setting_effects import Effect

DATA = Path(__file__).parent / "data"
FAST = {"bootstrap_resamples": 0, "plots": False}
IDS = ["quillworks__durata-57", "tallowsoft__envfile-203"]


def some_tasks(tmp_path: Path, ids: list[str]) -> Path:
    every = ar.write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()
    out = tmp_path / "tasks.jsonl"
    out.write_text("".join(f"{x}\n" for x in every if json.loads(x)["instance_id"] in ids))
    return out


# --------------------------------------------------------------------------- a verifier of our own


class SmallSettings(VerifierSettings):
    """The toy verifier's one setting: a configuration key it adds."""

    small_limit: Annotated[int, Effect("results")] = 40
    """Changed lines at which a candidate scores 0."""


WRITTEN: list[str] = []
"""Tasks the toy verifier wrote an artifact for in this process (resuming must write none)."""


class SmallVerifier:
    """Scores each candidate by how small its change is, against a limit written once per task (its
    artifact): a verifier as a user would write one, with only the package's public pieces."""

    name = "small"

    def earlier(self, folder: RunFolder, instance_id: str) -> ArtifactRecord | None:
        return earlier_artifact(folder, SMALL, instance_id, allowed=lambda n: n == "limit.json")

    async def run(
        self, scope: TaskScope, earlier: ArtifactRecord | None, *, grade: bool
    ) -> tuple[ArtifactRecord, Graded | None]:
        task = scope.task
        limit = scope.ctx.config.section("small", SmallSettings).small_limit
        artifact = earlier
        if artifact is None:
            WRITTEN.append(task.instance_id)
            status = ArtifactStatus(
                instance_id=task.instance_id,
                verifier=self.name,
                source="writer:rule",
                status="ok",
                files=["limit.json"],
            )
            artifact = ArtifactRecord(
                instance_id=task.instance_id,
                verifier=self.name,
                folder=SMALL.folder,
                files={"limit.json": json.dumps({"limit": limit})},
                status=status,
            )
        if not grade:
            return artifact, None
        cap = json.loads(artifact.files["limit.json"])["limit"]
        scores: dict[str, float | None] = {}
        reasons: dict[str, str | None] = {}
        for c in task.candidates:
            lines = parse_patch(c.patch).changed_lines if c.patch.strip() else None
            scores[c.id] = None if lines is None else max(0.0, 1 - lines / cap)
            reasons[c.id] = "empty_patch" if lines is None else None
        record = {"status": "graded", "reason": None, "score": scores, "reasons": reasons}
        return artifact, Graded(baselines={"small_size": record})


SMALL = VerifierSpec(
    name="small",
    folder="small",
    implementation=SmallVerifier,
    settings=SmallSettings,
    record="small_size",
    scores="score",
    artifact="limit",
    selectors=("small",),
)


def small_ranking(task: Any) -> dict[str, float | None]:
    """The toy verifier's selector: its score per candidate."""
    return dict(task.baselines["small_size"]["score"])


@pytest.fixture
def small() -> Any:
    from agentic_rubrics.pipeline import verifiers

    register_verifier(SMALL)
    ar.register_selector(small_ranking, name="small")
    WRITTEN.clear()
    yield SMALL
    verifiers._REGISTERED.pop("small", None)


def test_a_verifier_from_outside_the_package_runs_end_to_end(tmp_path: Path, small: Any) -> None:
    tasks, out = some_tasks(tmp_path, IDS), tmp_path / "run"
    config = RunConfig(verifiers=["rubric", "small"], small_limit=30, **FAST)
    assert config.selectors[-1] == "small"  # the selector it brings joins the comparison
    assert config.model_dump()["small_limit"] == 30  # its setting is a key of the configuration
    report = run(tasks, out, config)
    assert report is not None
    folder = RunFolder(out)
    for iid in IDS:
        assert json.loads((out / "small" / iid / "limit.json").read_text()) == {"limit": 30}
        record = folder.progress()[iid].baselines["small_size"]
        assert record["status"] == "graded" and set(record["score"]) == {
            c.id for c in ar.load_tasks(tasks)[IDS.index(iid)].candidates
        }
    data = json.loads((out / "report.json").read_text())
    assert data["verifiers"]["small"]["graded"] == 2
    assert data["verifiers"]["small"]["artifact"] == "limit"
    assert data["selectors"]["small"]["best_at_k"]["1"] is not None
    assert (
        "- Small verifier: 2 of 2 tasks graded (limits excluded: none)"
        in (out / "report.md").read_text()
    )
    assert json.loads((out / "config.json").read_text())["verifiers"]["small"]["folder"] == "small"
    assert sorted(WRITTEN) == sorted(IDS)
    # resumed: nothing is written or graded again; a forgotten task reuses its artifact
    WRITTEN.clear()
    run(tasks, out, config)
    assert WRITTEN == []
    folder.forget({IDS[0]})
    run(tasks, out, config)
    assert WRITTEN == [] and IDS[0] in folder.progress()
    # its setting is hashed only where it runs
    plain = RunConfig(**FAST)
    assert RunConfig(small_limit=5, **FAST).content_hash() == plain.content_hash()
    assert RunConfig(verifiers=["rubric", "small"], small_limit=5, **FAST).content_hash() != (
        config.content_hash()
    )


def test_a_verifier_must_not_take_a_built_in_name_or_a_setting_in_use(small: Any) -> None:
    from agentic_rubrics.exceptions import ConfigError

    with pytest.raises(ConfigError, match="built in"):
        register_verifier(VerifierSpec(name="tests", folder="t2", implementation=SmallVerifier))
    with pytest.raises(ConfigError, match="built in"):
        register_verifier(VerifierSpec(name="other", folder="tests", implementation=SmallVerifier))


def test_the_selectors_a_verifier_brings_lead_only_without_the_primary_one() -> None:
    base = ["self_consistency", "rubric"]
    assert DEFAULT_VERIFIERS[0] == "rubric"
    assert default_selectors(["rubric"], base) == base
    assert default_selectors(["rubric", "tests"], base) == [*base, "tests", "hybrid"]
    assert default_selectors(["tests"], base) == ["tests", *base]  # hybrid needs the rubric
    assert default_selectors(["tests", "similarity"], base) == ["tests", *base, "similarity"]


# --------------------------------------------------------------------------- an older run folder


def _without(report: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(report, dict):
        return {k: _without(v, keys) for k, v in report.items() if k not in keys}
    if isinstance(report, list):
        return [_without(v, keys) for v in report]
    return report


def test_a_run_folder_written_before_verifiers_had_a_folder_reads_and_resumes(
    tmp_path: Path,
) -> None:
    """``tests/data/run_folder_16721ff.tar.gz``: two bundled tasks run with ``--verifiers
    rubric,tests`` (their hidden tests given) by the version before this layout. Its report is made
    again the same (two keys added), and resuming redoes nothing."""
    with tarfile.open(DATA / "run_folder_16721ff.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    out = tmp_path / "run"
    before = json.loads((out / "report.json").read_text())
    progress = (out / "progress.jsonl").read_bytes()
    assert "verifiers" not in json.loads((out / "config.json").read_text())  # as it was written
    after = write_report(RunFolder(out)).to_json()
    assert after["verifiers"]["tests"]["artifact"] == "script"  # added: what its artifact is
    # where the labels came from: the tasks file it was run with is not here
    assert after["labels"].pop("source").startswith("labels recorded in the run folder")
    before["labels"].pop("source")
    # keys added since; and the default selector's description (`fitted_on`: what it never picks)
    skip = ("artifact", "folder", "non_discriminating", "fitted_on")
    said = after["selection"]["weights"]["fitted_on"]
    assert said.startswith(before["selection"]["weights"]["fitted_on"].split(";")[0])
    assert _without(after, skip) == _without(before, skip)
    tasks = some_tasks(tmp_path, IDS)
    given = tmp_path / "given"
    for iid in IDS:
        (given / iid).mkdir(parents=True)
        (given / iid / "test_hidden.py").write_text(
            (out / "tests" / iid / "test_hidden.py").read_text()
        )
    config = RunConfig(
        verifiers=["rubric", "tests"], tests_dir="given", tests={"reruns": 0}, **FAST
    )
    assert json.loads((out / "config.json").read_text())["config_hash"] == config.content_hash()
    run(tasks, out, config, stages=("explore", "judge"))
    assert (out / "progress.jsonl").read_bytes() == progress
