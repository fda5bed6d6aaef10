"""The ``similarity`` verifier: a proxy patch written once per task, each candidate rated 1-5 against it.

The proxy comes from ``--proxies DIR`` (``DIR/<instance_id>/proxy.diff``) or from the proxy-patch author
(:mod:`agentic_rubrics.explore.solver`: the explorer's model — the judge's when the explorer has none —
in the explorer's sandbox, shown the issue and the repository only, never a candidate, the gold patch or
hidden tests). It is checked before any candidate is rated: an empty one is ``proxy_empty``, one over
``similarity.max_proxy_chars`` ``proxy_too_large``, one that is not a diff or does not apply to the base
tree (applied as the harness applies a patch, confined) ``proxy_does_not_apply``; then every candidate's
similarity is missing with that reason. It lands in ``proxies/<id>/``: ``proxy.diff``, ``proxy.json``
(:class:`~agentic_rubrics.runfolder.proxies.ProxyStatus`: turns, cost, sha256), the author's
``trajectory.json``, and ``status.json`` written last. Grading
(:mod:`agentic_rubrics.judge.similarity`) writes ``proxies/<id>/similarity.jsonl`` (one
:class:`~agentic_rubrics.runfolder.proxies.SimilarityRow` per candidate) and the task's
``baselines.proxy_similarity`` (what the ``similarity`` selector reads).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.datasets.inputs import text_hash
from agentic_rubrics.judge.similarity import SimilarityJudge
from agentic_rubrics.pipeline.context import RunContext
from agentic_rubrics.pipeline.verifiers import BUILTIN, Graded, TaskScope, VerifierSettings
from agentic_rubrics.pipeline.verifiers.artifacts import earlier_artifact, trajectory_file
from agentic_rubrics.pipeline.verifiers.similarity_writing import (
    check_proxy,
    diff_hash,
    first_model,
    given_proxy,
    write_proxy,
)
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.names import safe_name
from agentic_rubrics.runfolder.proxies import (
    PROXY_FILE,
    PROXY_STATUS,
    SIMILARITY_ROWS,
    ProxyStatus,
    SimilarityRow,
)
from agentic_rubrics.runfolder.records import ArtifactRecord
from agentic_rubrics.runfolder.rows import read_row
from agentic_rubrics.runfolder.verifier_rows import ArtifactStatus
from agentic_rubrics.setting_effects import SPEED, Effect
from agentic_rubrics.types import SCHEMA, Task

log = logging.getLogger(__name__)

SPEC = BUILTIN["similarity"]
FEATURE = "proxy_similarity"
"""The key of the verifier's record in a task's ``baselines``."""


class SimilarityConfig(BaseModel):
    """The patch-similarity verifier: its proxy author (the explorer's model, sandbox and limits, or the
    judge's model when the explorer has none) and its judge (the judge's model, repeats, concurrency)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    candidates_per_call: int = Field(default=4, ge=1, le=32)
    """Candidates rated in one request (the proxy and the issue are sent once per request)."""
    max_turns: int | None = Field(default=None, ge=1, le=500)
    """The proxy author's turn budget (``None``: the explorer's ``max_turns``)."""
    max_proxy_chars: int = Field(default=200_000, ge=1000)
    """A proxy patch longer than this is not used: ``missing: proxy_too_large``."""
    concurrency: Annotated[int, SPEED] = Field(default=8, ge=1)
    """Requests of one task sent at the same time (the model's own limit applies on top)."""


class SimilaritySettings(VerifierSettings):
    """The similarity verifier's settings: its given proxies, its author and its judge."""

    proxies_dir: Annotated[str | None, Effect("results", cli=True)] = None
    """Reuse ``DIR/<instance_id>/proxy.diff`` as the proxy patch instead of having the agent write
    one."""
    similarity: Annotated[SimilarityConfig, Effect("results")] = Field(
        default_factory=SimilarityConfig
    )
    """How the proxy is written and candidates are rated against it."""

    def given(self) -> str | None:
        return self.proxies_dir

    def prompts(self, config: Any) -> list[str]:
        # its judge; its author unless the proxies are given (the judge's model when the explorer
        # has none)
        return ["similarity_judge", *(["proxy_agent"] if self.proxies_dir is None else [])]


def settings(ctx: RunContext) -> SimilaritySettings:
    """The similarity verifier's settings in the run's configuration."""
    return ctx.config.section(SPEC.name, SimilaritySettings)


def _proxy_check(files: dict[str, str], status: ArtifactStatus) -> str | None:
    if status.status == "ok" and diff_hash(files.get(PROXY_FILE, "")) != status.hash:
        return f"{PROXY_FILE} changed after it was written"
    if PROXY_STATUS in files:
        try:
            read_row(ProxyStatus, json.loads(files[PROXY_STATUS]), PROXY_STATUS)
        except ValueError as exc:
            return f"{PROXY_STATUS}: invalid ({exc})"
    return None


class SimilarityVerifier:
    """See the module's docstring."""

    name = SPEC.name

    def earlier(self, folder: RunFolder, instance_id: str) -> ArtifactRecord | None:
        """The proxy an earlier attempt left (its ``status.json`` written last), checked against its
        recorded hash: an edited ``proxy.diff`` is written again."""
        return earlier_artifact(
            folder,
            SPEC,
            instance_id,
            allowed=lambda name: name in (PROXY_FILE, PROXY_STATUS),
            check=_proxy_check,
        )

    async def run(
        self, scope: TaskScope, earlier: ArtifactRecord | None, *, grade: bool
    ) -> tuple[ArtifactRecord, Graded | None]:
        """The task's proxy (reused, given or written) and, with ``grade``, every candidate rated."""
        task, ctx = scope.task, scope.ctx
        artifact = earlier or await self._write(task, ctx)
        return artifact, (await self._grade(task, ctx, artifact) if grade else None)

    async def _write(self, task: Task, ctx: RunContext) -> ArtifactRecord:
        own = settings(ctx)
        started = time.monotonic()
        record: dict[str, Any] = {
            "schema": SCHEMA,
            "instance_id": task.instance_id,
            "base_commit": task.base_commit,
            "problem_hash": text_hash(task.problem_statement),
        }
        trajectory = None
        max_chars = own.similarity.max_proxy_chars
        diff: str | None
        if own.proxies_dir is not None:
            record["source"] = "given"
            diff, reason = given_proxy(Path(own.proxies_dir), task.instance_id, max_chars)
        else:
            record["source"] = "writer:proxy-agent"
            diff, reason, facts, trajectory = await write_proxy(
                task, ctx, own.similarity.max_turns, max_chars
            )
            record.update(facts)
        if diff is not None:
            diff = ctx.redact(diff)  # an author can echo what it saw into a file
            why, measured = await check_proxy(task, ctx, diff, max_chars)
            record.update(measured)
            reason = why or ""
        ok = diff is not None and not reason
        record.update(status="ok" if ok else "missing", reason=reason or None)
        if ok and diff is not None:
            record["sha256"] = diff_hash(diff).removeprefix("sha256:")
        record["seconds"] = round(time.monotonic() - started, 3)
        proxy = ProxyStatus.model_validate(record)
        files = {PROXY_STATUS: json.dumps(proxy.to_json(), sort_keys=True, indent=2) + "\n"}
        if diff is not None:
            files[PROXY_FILE] = diff
        status = ArtifactStatus.model_validate(
            {
                "schema": SCHEMA,
                "instance_id": task.instance_id,
                "verifier": self.name,
                "base_commit": task.base_commit,
                "problem_hash": record["problem_hash"],
                "source": record["source"],
                "status": "ok" if ok else "failed",
                "reason": reason or None,
                "files": sorted(files),
                "hash": diff_hash(diff) if ok and diff is not None else None,
                "turns": record.get("turns"),
                "seconds": record["seconds"],
            }
        )
        return ArtifactRecord(
            instance_id=task.instance_id,
            verifier=self.name,
            folder=SPEC.folder,
            files=files,
            status=status,
            trajectory=trajectory,
            trajectory_file=trajectory_file(SPEC, task.instance_id),
        )

    async def _grade(self, task: Task, ctx: RunContext, artifact: ArtifactRecord) -> Graded:
        """Every candidate rated against the proxy, or missing with the proxy's reason."""
        ids = [c.id for c in task.candidates]
        status = artifact.status
        reason = (status.reason or "proxy_failed") if status.status != "ok" else None
        proxy = artifact.files.get(PROXY_FILE)
        llm = first_model(ctx.selector_model, ctx.explorer_model)
        if reason is None and (proxy is None or llm is None):
            reason = "proxy_failed:no_model" if llm is None else "proxy_empty"
        judge_name = None
        ratings: dict[str, Any] = {}
        if reason is None and proxy is not None and llm is not None:
            judge = SimilarityJudge(
                llm,
                candidates_per_call=settings(ctx).similarity.candidates_per_call,
                repeats=ctx.config.judge.repeats,
                concurrency=settings(ctx).similarity.concurrency,
                seed=ctx.config.seed,
            )
            judge_name = judge.name
            patches = {c.id: c.patch for c in task.candidates}
            ratings = await judge.rate(task.instance_id, task.problem_statement, proxy, patches)
        rows = []
        for cid in ids:
            got = ratings.get(cid)
            row: dict[str, Any] = {
                "instance_id": task.instance_id,
                "candidate_id": cid,
                "origin": "judged" if got is not None and got.rating is not None else "missing",
                "proxy_sha256": (status.hash or "").removeprefix("sha256:") or None,
            }
            if got is not None:
                row.update(rating=got.rating, value=got.value, reason=got.reason)
                row.update(ratings=got.ratings, judge=judge_name)
            else:
                row["reason"] = reason
            rows.append(SimilarityRow.model_validate(row))
        graded = Graded()
        graded.baselines[FEATURE] = {
            "status": "graded" if reason is None else "missing",
            "reason": reason,
            "value": {r.candidate_id: r.value for r in rows},
            "reasons": {r.candidate_id: r.reason for r in rows},
        }
        where = f"{SPEC.folder}/{safe_name(task.instance_id)}/{SIMILARITY_ROWS}"
        graded.files[where] = "".join(
            json.dumps(r.to_json(), sort_keys=True, ensure_ascii=False) + "\n" for r in rows
        )
        return graded
