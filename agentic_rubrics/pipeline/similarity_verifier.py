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

import asyncio
import hashlib
import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.inputs import text_hash
from agentic_rubrics.exceptions import (
    AgenticRubricsError,
    DataError,
    ExplorationFailed,
    ModelError,
    PatchParseError,
    RepoError,
    WorkerStartError,
)
from agentic_rubrics.judge.similarity import SimilarityJudge
from agentic_rubrics.llm.door import LLM
from agentic_rubrics.patch import is_empty_patch, parse_patch
from agentic_rubrics.pipeline.context import SANDBOX_SLOT, RunContext
from agentic_rubrics.pipeline.verifier_settings import VERIFIER_PROMPTS
from agentic_rubrics.pipeline.verifiers import Graded
from agentic_rubrics.records import ArtifactRecord
from agentic_rubrics.runfolder.folder import RunFolder, safe_name
from agentic_rubrics.runfolder.proxies import (
    PROXY_FILE,
    PROXY_STATUS,
    SIMILARITY_ROWS,
    ProxyStatus,
    SimilarityRow,
)
from agentic_rubrics.runfolder.rows import Trajectory, read_row
from agentic_rubrics.runfolder.verifier_rows import ArtifactStatus
from agentic_rubrics.types import SCHEMA, Task

log = logging.getLogger(__name__)

FEATURE = "proxy_similarity"
"""The key of the verifier's record in a task's ``baselines``."""


def diff_hash(diff: str) -> str:
    """``sha256:`` of the proxy's bytes (what its status records)."""
    return "sha256:" + hashlib.sha256(diff.encode("utf-8", "surrogateescape")).hexdigest()


def given_proxy(root: Path, instance_id: str, max_chars: int) -> tuple[str | None, str]:
    """The proxy ``--proxies DIR`` holds for a task (``DIR/<safe name>/proxy.diff`` first, then
    ``DIR/<instance_id>/proxy.diff`` for a plain relative id, never outside ``DIR``), or why none."""
    base = root.resolve()
    names = [safe_name(instance_id)]
    if not Path(instance_id).is_absolute() and ".." not in Path(instance_id).parts:
        names.append(instance_id)
    for name in names:
        try:
            path = (root / name / PROXY_FILE).resolve()
            if not path.is_relative_to(base) or not path.is_file():
                continue
            if path.stat().st_size > 4 * max_chars:  # utf-8: at most 4 bytes a character
                return None, "proxy_too_large"
            return path.read_bytes().decode("utf-8"), ""
        except UnicodeDecodeError:
            return None, "proxy_does_not_apply"  # not text: no tree takes it
        except (OSError, ValueError):
            continue
    return None, "proxy_not_found"


def _applies(repo: Path, diff: str) -> bool | None:
    """Whether the proxy applies to the base tree as the harness applies a patch (``None``: not
    tried, e.g. no confinement where it is required)."""
    from agentic_rubrics.rubric.postimage.apply import apply_like_harness

    with tempfile.TemporaryDirectory(prefix="proxy-apply-") as work:
        applied = apply_like_harness(repo, diff.encode("utf-8", "surrogateescape"), Path(work))
    if applied.method == "not_attempted":
        return None
    return applied.method != "failed"


async def check_proxy(task: Task, ctx: RunContext, diff: str) -> tuple[str | None, dict[str, Any]]:
    """Why the proxy cannot be used (``None``: it can), and what was measured of it."""
    if is_empty_patch(diff):
        return "proxy_empty", {}
    if len(diff) > ctx.config.similarity.max_proxy_chars:
        return "proxy_too_large", {}
    try:
        parsed = parse_patch(diff)
    except PatchParseError:
        return "proxy_does_not_apply", {}
    measured: dict[str, Any] = {"files": len(parsed.files), "changed_lines": parsed.changed_lines}
    if parsed.is_empty:
        return "proxy_empty", measured
    try:
        tree = await asyncio.to_thread(ctx.repository, task)
    except RepoError:
        tree = None
    if tree is not None and await asyncio.to_thread(_applies, tree.path, diff) is False:
        return "proxy_does_not_apply", measured
    return None, measured


def _model(*models: Any) -> LLM | None:
    """The first of the run's models given (the proxy author: the explorer's, then the judge's; the
    similarity judge: the judge's, then the explorer's)."""
    return next((m for m in models if isinstance(m, LLM)), None)


async def _solve(
    task: Task, ctx: RunContext, author: Any, facts: dict[str, Any]
) -> tuple[str | None, str, list[dict[str, Any]], str | None]:
    """The author run in a sandbox of its own: its diff (or why none), steps and the sandbox's kind."""
    from agentic_rubrics.sandbox import open_sandbox

    cfg = ctx.config.explorer
    steps: list[dict[str, Any]] = []
    kind = None
    try:
        tree = await asyncio.to_thread(ctx.repository, task) if cfg.sandbox.needs_repo else None
        if cfg.sandbox.needs_repo and tree is None:
            return None, "proxy_failed:no_repository", steps, kind
        async with ctx.limiter.slot(SANDBOX_SLOT):
            sandbox = await open_sandbox(
                cfg.sandbox,
                instance_id=task.instance_id,
                repo_path=str(tree.path) if tree is not None else task.repo_path,
                shared_tree=tree is not None and tree.source == "cache",
                base_commit=task.base_commit,
                model_commands=True,
                allow_unisolated=cfg.allow_unisolated,
            )
            kind = sandbox.kind
            try:
                patch, steps = await author.solve(task.public(), sandbox)
            finally:
                await sandbox.close()
    except ExplorationFailed as failed:
        return None, f"proxy_failed:{failed.reason}", failed.steps, kind
    except RepoError as exc:
        return None, f"proxy_failed:no_repository:{exc.reason}", steps, kind
    except AgenticRubricsError as exc:
        if isinstance(exc, ModelError | WorkerStartError):
            raise  # the whole run: authentication, an unknown model, workers that cannot start
        log.warning("%s: the proxy author failed: %s", task.instance_id, exc)
        return None, f"proxy_failed:{type(exc).__name__}", steps, kind
    facts["submitted"] = patch.submitted
    if patch.truncated:
        return None, "proxy_too_large", steps, kind
    return patch.diff, "", steps, kind


class SimilarityVerifier:
    """See the module's docstring."""

    name = "similarity"
    folder = "proxies"
    prompts: tuple[str, ...] = VERIFIER_PROMPTS["similarity"]
    """None here: :meth:`RunConfig.prompt_hashes` hashes its judge's prompt, and its author's unless
    the proxies are given (the author runs on the judge's model when the explorer has none)."""

    def earlier(self, folder: RunFolder, instance_id: str) -> ArtifactRecord | None:
        """The proxy an earlier attempt left (its ``status.json`` written last), checked against its
        recorded hash: an edited ``proxy.diff`` is written again."""
        status = folder.artifact_status(self.folder, instance_id)
        if status is None:
            return None
        where = folder.artifact_dir(self.folder, instance_id)
        files: dict[str, str] = {}
        for name in status.files:
            if name not in (PROXY_FILE, PROXY_STATUS):
                raise DataError(
                    f"{where / 'status.json'}: field 'files': {name!r} is no proxy file"
                )
            try:
                files[name] = (where / name).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise DataError(f"{where / name}: cannot be read ({exc})") from exc
        if status.status == "ok" and diff_hash(files.get(PROXY_FILE, "")) != status.hash:
            raise DataError(f"{where / PROXY_FILE}: changed after it was written")
        if PROXY_STATUS in files:
            try:
                read_row(ProxyStatus, json.loads(files[PROXY_STATUS]), str(where / PROXY_STATUS))
            except ValueError as exc:
                raise DataError(f"{where / PROXY_STATUS}: invalid JSON ({exc})") from exc
        return ArtifactRecord(
            instance_id=instance_id,
            verifier=self.name,
            folder=self.folder,
            files=files,
            status=status,
            fresh=False,
        )

    async def run(
        self, task: Task, ctx: RunContext, earlier: ArtifactRecord | None, *, grade: bool
    ) -> tuple[ArtifactRecord, Graded | None]:
        """The task's proxy (reused, given or written) and, with ``grade``, every candidate rated."""
        artifact = earlier or await self._write(task, ctx)
        return artifact, (await self._grade(task, ctx, artifact) if grade else None)

    async def _write(self, task: Task, ctx: RunContext) -> ArtifactRecord:
        config = ctx.config
        started = time.monotonic()
        record: dict[str, Any] = {
            "schema": SCHEMA,
            "instance_id": task.instance_id,
            "base_commit": task.base_commit,
            "problem_hash": text_hash(task.problem_statement),
        }
        trajectory = None
        diff: str | None
        if config.proxies_dir is not None:
            record["source"] = "given"
            diff, reason = given_proxy(
                Path(config.proxies_dir), task.instance_id, config.similarity.max_proxy_chars
            )
        else:
            record["source"] = "writer:proxy-agent"
            diff, reason, facts, trajectory = await self._author(task, ctx)
            record.update(facts)
        if diff is not None:
            diff = ctx.redact(diff)  # an author can echo what it saw into a file
            why, measured = await check_proxy(task, ctx, diff)
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
            folder=self.folder,
            files=files,
            status=status,
            trajectory=trajectory,
        )

    async def _author(
        self, task: Task, ctx: RunContext
    ) -> tuple[str | None, str, dict[str, Any], Trajectory | None]:
        """The proxy-patch author's diff (or why there is none), its facts and trajectory."""
        from agentic_rubrics.explore.solver import ProxyAuthor

        cfg, similarity = ctx.config.explorer, ctx.config.similarity
        llm = _model(ctx.explorer_model, ctx.selector_model)
        if llm is None:
            return None, "proxy_failed:no_model", {}, None
        author = ProxyAuthor(
            llm,
            max_turns=similarity.max_turns or cfg.max_turns,
            command_timeout=cfg.command_timeout,
            max_observation=cfg.max_observation,
            tool_calls=cfg.tool_calls,
            max_patch_chars=similarity.max_proxy_chars + 1,
        )
        facts: dict[str, Any] = {"model": llm.config.model, "prompt": author.prompt.ref}
        diff, reason, steps, kind = await _solve(task, ctx, author, facts)
        turns = [s["turn"] for s in steps if isinstance(s.get("turn"), int)]
        if turns:
            facts["turns"] = max(turns)
        facts["cost"] = {"proxy": ctx.ledger.for_task(task.instance_id).get("proxy", {})}
        trajectory = None
        if ctx.config.trajectories:
            ok = diff is not None and not reason
            record: dict[str, Any] = {"schema": SCHEMA, "instance_id": task.instance_id}
            record["explorer"] = author.name
            record.update(model=llm.config.model, sandbox=kind, status="ok" if ok else "failed")
            record.update(reason=reason or None, turns=len(steps), cost=facts["cost"]["proxy"])
            trajectory = Trajectory.model_validate(ctx.redact({**record, "steps": steps}))
        return diff, reason, facts, trajectory

    async def _grade(self, task: Task, ctx: RunContext, artifact: ArtifactRecord) -> Graded:
        """Every candidate rated against the proxy, or missing with the proxy's reason."""
        ids = [c.id for c in task.candidates]
        status = artifact.status
        reason = (status.reason or "proxy_failed") if status.status != "ok" else None
        proxy = artifact.files.get(PROXY_FILE)
        llm = _model(ctx.selector_model, ctx.explorer_model)
        if reason is None and (proxy is None or llm is None):
            reason = "proxy_failed:no_model" if llm is None else "proxy_empty"
        judge_name = None
        ratings: dict[str, Any] = {}
        if reason is None and proxy is not None and llm is not None:
            judge = SimilarityJudge(
                llm,
                candidates_per_call=ctx.config.similarity.candidates_per_call,
                repeats=ctx.config.judge.repeats,
                concurrency=ctx.config.similarity.concurrency,
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
        where = f"{self.folder}/{safe_name(task.instance_id)}/{SIMILARITY_ROWS}"
        graded.files[where] = "".join(
            json.dumps(r.to_json(), sort_keys=True, ensure_ascii=False) + "\n" for r in rows
        )
        return graded
