"""Rubric scores as a reward: S for (instance, patch) pairs, judged exactly as a run judges them.

A :class:`RewardScorer` holds what the tasks of a run share (:class:`~agentic_rubrics.pipeline.context.RunContext`:
the judge — checks only, or the batched LLM judge with its response cache, budget, concurrency and fault
handling —, the ledger, the spend log) and, per instance, the rubric and the task (issue, repository).
Each batch of patches of one instance is judged by :func:`~agentic_rubrics.pipeline.verifiers.rubric_judging.judge_task`,
the run's own judging (identical patches judged once, repository-aware items decided on the base tree),
and scored by :func:`~agentic_rubrics.rank.scoring.score_candidate` with the run's decision policy: a
candidate of a finished run gets the S its report gave it, except one the checks decided cannot be the
fix (empty, not applying, no behaviour change, test infrastructure changed: 0) or whose gate is
undecided (no reward: :mod:`agentic_rubrics.reward.result`).

Nothing is invented: ``score`` is ``None`` (with ``abstained`` saying why) when the judge does not know
(a model call failed or stalled past ``timeout``, no model-decided item has a verdict, the coverage is
below the policy's minimum: :mod:`agentic_rubrics.reward.result`), no item has a verdict, the rubric
is missing or invalid, or the instance is unknown; missing verdicts keep their reason codes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from agentic_rubrics.exceptions import DataError, RubricError
from agentic_rubrics.explore import StaticExplorerConfig
from agentic_rubrics.judge.judges import JudgeConfig
from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.pipeline.context import RunContext
from agentic_rubrics.pipeline.verifiers.rubric_judging import judge_task
from agentic_rubrics.pipeline.verifiers.rubric_writing import reused_rubric_path
from agentic_rubrics.rank.scoring import reduce_repeats, score_candidate
from agentic_rubrics.reward.loop import BackgroundLoop
from agentic_rubrics.reward.result import Reward, abstain, reward_of
from agentic_rubrics.rubric.checks_repo import repo_analyses
from agentic_rubrics.rubric.file import load_rubric
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.types import Candidate, Rubric, Task

log = logging.getLogger(__name__)


def with_call_limits(
    config: RunConfig, timeout: float | None, max_retries: int | None
) -> RunConfig:
    """``config`` with its judge model's per-attempt ``timeout`` and ``max_retries`` replaced (each
    left as it is when ``None``; nothing to replace for the checks judge).

    Raises:
        DataError: a timeout that is not a positive finite number, retries not from 0 to 20.
    """
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise DataError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    if max_retries is not None and (
        isinstance(max_retries, bool)
        or not isinstance(max_retries, int)
        or not 0 <= max_retries <= 20
    ):
        raise DataError(f"max_retries: expected a whole number from 0 to 20, got {max_retries!r}")
    model = config.judge.model
    if config.judge.kind != "llm" or model is None:
        return config
    update: dict[str, Any] = {}
    if timeout is not None:
        update["timeout"] = float(timeout)
    if max_retries is not None:
        update["max_retries"] = max_retries
    judge = config.judge.model_copy(update={"model": model.model_copy(update=update)})
    return config.model_copy(update={"judge": judge})


class RewardScorer:
    """S for (instance, patch) pairs with one configuration's judge, policy and sources.

    Use the coroutines (:meth:`ascore`, :meth:`ascore_many`) from one event loop, or the synchronous
    :meth:`score` and :meth:`score_many` from any threads (they share a loop of the scorer's own);
    :meth:`close` (or ``with``) ends it. ``state_dir`` holds the judge's response cache and spend log
    (``None``: a temporary folder, removed on close). ``timeout`` (seconds one attempt of a judge
    call may take: the model door's ``timeout``) and ``max_retries`` replace the configuration's: a
    call ends within ``(max_retries + 1) * timeout`` plus the waits between retries, and one that
    does not answer leaves the reward absent (``judge_failed:provider_error``).
    """

    def __init__(
        self,
        config: RunConfig,
        *,
        rubrics_dir: Path,
        tasks: Sequence[Task] | None = None,
        state_dir: Path | None = None,
        api_key: str | None = None,
        rubric_hashes: dict[str, str] | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        config = with_call_limits(config, timeout, max_retries)
        if config.judge.kind == "llm" and tasks is None:
            raise DataError(
                "the LLM judge reads each instance's issue: give the tasks file (--tasks) with"
                " --rubrics, or use the checks judge"
            )
        # the explorer is never used here: a static one opens no model
        self.config = config.model_copy(update={"explorer": StaticExplorerConfig()})
        self.rubrics_dir = Path(rubrics_dir)
        self.tasks = {t.instance_id: t for t in tasks} if tasks is not None else None
        self._hashes = rubric_hashes
        self._temporary = state_dir is None
        self.state_dir = (
            Path(tempfile.mkdtemp(prefix="agentic-rubrics-reward-"))
            if state_dir is None
            else Path(state_dir)
        )
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.ctx = RunContext.build(self.config, self.state_dir, api_key)
        self.repeats = self.config.judge.repeats if self.config.judge.kind == "llm" else 1
        self._rubrics: dict[str, tuple[Rubric | None, str | None]] = {}
        self._lock = threading.Lock()
        self._loop: BackgroundLoop | None = None
        self.patches_scored = 0

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_run(
        cls,
        run_folder: Path,
        *,
        judge: Literal["run", "checks"] = "run",
        state_dir: Path | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> RewardScorer:
        """A scorer with a finished run's judge, policy, rubrics and tasks (its tasks file, where the
        run's config.json says). ``judge="checks"``: the deterministic checks alone (zero cost);
        ``timeout``, ``max_retries``: as in the constructor.

        Raises:
            DataError: not a run folder, its configuration no longer reads, or its tasks file is gone.
        """
        folder = RunFolder(Path(run_folder))
        recorded = folder.config().get("config")
        if not isinstance(recorded, dict):
            raise DataError(f"{folder.config_path}: no configuration recorded")
        settings = {k: v for k, v in recorded.items() if k not in ("prompts", "tasks_file")}
        try:
            config = RunConfig.model_validate(settings)
        except ValidationError as exc:
            raise DataError(
                f"{folder.config_path}: the configuration does not read: {exc}"
            ) from exc
        if judge == "checks":
            config = config.model_copy(update={"judge": JudgeConfig()})
        tasks_file = recorded.get("tasks_file")
        if not isinstance(tasks_file, str) or not Path(tasks_file).is_file():
            raise DataError(f"{folder.root}: the run's tasks file ({tasks_file}) is gone")
        hashes = {iid: row.rubric.hash for iid, row in folder.progress().items() if row.rubric.hash}
        return cls(
            config,
            rubrics_dir=folder.root / "rubrics",
            tasks=load_tasks(Path(tasks_file)),
            state_dir=state_dir,
            api_key=api_key,
            rubric_hashes=hashes,
            timeout=timeout,
            max_retries=max_retries,
        )

    # ------------------------------------------------------------------ sources

    @property
    def judge_name(self) -> str:
        """The judge's name (the model and the prompt's hash, or ``checks``)."""
        return self.ctx.judge.name

    def knows(self, instance_id: str) -> bool:
        """Whether ``instance_id`` has a task (with a tasks file) or a rubric folder (without)."""
        if self.tasks is not None:
            return instance_id in self.tasks
        return reused_rubric_path(self.rubrics_dir, instance_id) is not None

    def instances(self) -> int:
        """How many instances the scorer knows (rubric folders without a tasks file)."""
        if self.tasks is not None:
            return len(self.tasks)
        try:
            return sum(1 for p in self.rubrics_dir.iterdir() if (p / "rubrics.yaml").is_file())
        except OSError:
            return 0

    def rubric(self, instance_id: str) -> tuple[Rubric | None, str | None]:
        """The instance's rubric (read once), or ``None`` with the reason."""
        with self._lock:
            if instance_id in self._rubrics:
                return self._rubrics[instance_id]
        path = reused_rubric_path(self.rubrics_dir, instance_id)
        got: tuple[Rubric | None, str | None]
        if path is None:
            got = (None, "rubric_not_found")
        else:
            try:
                rubric, _ = load_rubric(path)
                got = (rubric, None)
            except RubricError as exc:
                log.warning("%s: %s", instance_id, exc)
                got = (None, "rubric_invalid")
        wanted = (self._hashes or {}).get(instance_id)
        if got[0] is not None and wanted is not None and got[0].content_hash() != wanted:
            got = (None, "rubric_changed")  # not the rubric the run judged with
        with self._lock:
            self._rubrics[instance_id] = got
        return got

    def _task(self, instance_id: str) -> Task:
        if self.tasks is not None:
            return self.tasks[instance_id].public()
        return Task(instance_id=instance_id, problem_statement="")

    # ------------------------------------------------------------------ scoring

    async def ascore(self, instance_id: str, patch: str) -> Reward:
        """One patch's reward (see :meth:`ascore_many`)."""
        return (await self.ascore_many([(instance_id, patch)]))[0]

    async def ascore_many(self, pairs: Sequence[tuple[str, str]]) -> list[Reward]:
        """Rewards of many (instance_id, patch) pairs, in order: the patches of one instance are
        judged together (identical ones once), instances at the same time; the judge's concurrency,
        the model's limit and the budget hold across all of them. An unknown instance abstains."""
        groups: dict[str, list[int]] = {}
        out: list[Reward | None] = [None] * len(pairs)
        for n, (iid, _) in enumerate(pairs):
            if self.knows(iid):
                groups.setdefault(iid, []).append(n)
            else:
                out[n] = abstain(iid, "unknown_instance", self.judge_name)
        parts = await asyncio.gather(
            *(self._score_task(iid, [(n, pairs[n][1]) for n in ns]) for iid, ns in groups.items())
        )
        for part in parts:
            for n, reward in part:
                out[n] = reward
        self.patches_scored += len(pairs)
        return [r for r in out if r is not None]

    async def _score_task(
        self, instance_id: str, patches: list[tuple[int, str]]
    ) -> list[tuple[int, Reward]]:
        rubric, why = await asyncio.to_thread(self.rubric, instance_id)
        name = self.judge_name
        if rubric is None:
            return [(n, abstain(instance_id, f"rubric_error:{why}", name)) for n, _ in patches]
        candidates: list[Candidate] = []
        out: list[tuple[int, Reward]] = []
        for n, patch in patches:
            try:
                candidates.append(Candidate(id=f"reward-{n}", patch=patch))
            except ValidationError:
                out.append((n, abstain(instance_id, "invalid_text", name)))
        task = self._task(instance_id).model_copy(update={"candidates": candidates})
        repository = await repo_analyses(task, rubric, self.ctx.repository)
        rows = await judge_task(
            task,
            rubric,
            self.ctx.judge,
            repeats=self.repeats,
            concurrency=self.config.judge.concurrency,
            repository=repository,
        )
        # the items a model decides: with the checks judge none (they are missing by design)
        models = (
            [i.id for _, i in rubric.items() if i.check is None]
            if self.config.judge.kind == "llm"
            else []
        )
        for c in candidates:
            mine = [v for v in rows if v.candidate_id == c.id]
            s = score_candidate(
                rubric,
                mine,
                instance_id=instance_id,
                candidate_id=c.id,
                empty_patch=is_empty_patch(c.patch),
                policy=self.config.policy,
            )
            reward = reward_of(
                s,
                rubric,
                reduce_repeats(mine),
                name,
                model_items=models,
                min_coverage=self.config.policy.min_coverage,
            )
            out.append((int(c.id.removeprefix("reward-")), reward))
        return out

    def _running(self) -> BackgroundLoop:
        with self._lock:
            if self._loop is None:
                self._loop = BackgroundLoop()
            return self._loop

    def score(self, instance_id: str, patch: str) -> Reward:
        """:meth:`ascore`, from synchronous code (any thread)."""
        return self._running().run(self.ascore(instance_id, patch))

    def score_many(self, pairs: Sequence[tuple[str, str]]) -> list[Reward]:
        """:meth:`ascore_many`, from synchronous code (any thread)."""
        return self._running().run(self.ascore_many(pairs))

    def efficiency(self) -> dict[str, float]:
        """What the judge spent so far: model calls (cache hits apart), tokens, known dollars, and
        patches scored."""
        calls = cached = prompt = completion = 0.0
        for entry in self.ctx.ledger.entries.values():
            calls += entry["calls"]
            cached += entry["cached_calls"]
            prompt += entry["prompt_tokens"]
            completion += entry["completion_tokens"]
        return {
            "patches": float(self.patches_scored),
            "model_calls": calls,
            "cached_calls": cached,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "usd": self.ctx.ledger.spent,
        }

    # ------------------------------------------------------------------ closing

    async def aclose(self) -> None:
        """Stop the judge's model workers and close its spend log (from the loop that used them)."""
        await self.ctx.aclose()

    def close(self) -> None:
        """End the scorer: its models, its loop, and its temporary state folder."""
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.run(self.aclose())
            loop.stop()
        else:
            asyncio.run(self.aclose())
        self._remove_state()

    def _remove_state(self) -> None:
        if self._temporary:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> RewardScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RewardScorer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        self._remove_state()
