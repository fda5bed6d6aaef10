"""What the tasks of a run share in one process: explorer, judge, models, limits, accounting."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from agentic_rubrics.datasets.repos import RepoCache, RepoTree, resolve_repo_path
from agentic_rubrics.exceptions import RepoError
from agentic_rubrics.explore import Explorer
from agentic_rubrics.judge.judges import ChecksJudge, LLMJudge
from agentic_rubrics.limits import Ledger, Limiter, LocalLimiter
from agentic_rubrics.llm.door import LLM, LLMConfig, llm_slot_key
from agentic_rubrics.llm.spend import SpendLog
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.protocols import Judge, Model
from agentic_rubrics.redaction import Redactor, url_secrets
from agentic_rubrics.types import Task

log = logging.getLogger(__name__)

SANDBOX_SLOT = "sandbox"


def limiter_capacities(config: RunConfig) -> dict[str, int]:
    """The run's global limits by slot key."""
    capacities = {SANDBOX_SLOT: config.max_sandboxes}
    for llm_config in (config.explorer.model, config.judge.model):
        if llm_config is not None:
            capacities[llm_slot_key(llm_config)] = llm_config.concurrency
    return capacities


@dataclass
class RunContext:
    """What the tasks of a run share in one process: explorer, judge, models, limits, accounting."""

    config: RunConfig
    cache_dir: Path
    explorer: Explorer
    judge: Judge
    ledger: Ledger
    limiter: Limiter
    selector_model: Model | None = None
    """The judge model, for the selectors whose features call one (the patch classifier)."""
    explorer_model: LLM | None = None
    """The explorer's model, for the other verifiers' writers (the test-writing agent)."""
    models: list[LLM] = field(default_factory=list)
    redact: Callable[[Any], Any] = field(default_factory=Redactor)
    """Applied to everything of a task that is written: rubrics, trajectories."""
    spend_log: SpendLog | None = None
    _repos: RepoCache | None = None

    def repository(self, task: Task) -> RepoTree | None:
        """The task's tree: its ``repo_path``, else fetched into the cache at ``base_commit``; None
        when it has neither (or fetching is off). Blocks: call it in a worker thread.

        Raises:
            RepoError: the repository cannot be had at that commit (named with repo, commit, URL).
        """
        if task.repo_path or self.config.repos.url_template is None:
            return resolve_repo_path(task, None)
        if not task.repo or not task.base_commit:
            return None
        if self._repos is None:
            self._repos = RepoCache.from_config(self.config.repos)
        if self.config.repos.approximate_trees is None:
            return resolve_repo_path(task, self._repos)
        try:
            return resolve_repo_path(task, self._repos)
        except RepoError as exc:
            approximate = self._approximate(task)
            if approximate is None:
                raise
            log.info("%s: %s; an approximate tree stands in", task.instance_id, exc.reason)
            return approximate

    def _approximate(self, task: Task) -> RepoTree | None:
        """The approximate tree env-check found the task runnable on (``repos.approximate_trees``),
        or ``None`` when there is none for it (its repository's own error then stands)."""
        import time

        from agentic_rubrics.datasets.sdist_trees import approved_tree, approximate_cache

        report = self.config.repos.approximate_trees
        assert report is not None
        start = time.monotonic()
        try:
            cache = approximate_cache(self.config.repos.cache_dir)
            path = approved_tree(report, task.instance_id, cache)
        except RepoError as exc:
            log.info("%s: no approximate tree: %s", task.instance_id, exc)
            return None
        seconds = time.monotonic() - start
        return RepoTree(
            path, "approximate", task.repo, task.base_commit, None, True, "none", seconds
        )

    @classmethod
    def build(
        cls,
        config: RunConfig,
        root: Path,
        api_key: str | None,
        limiter: Limiter | None = None,
        spent: float = 0.0,
    ) -> RunContext:
        """Everything a task needs; ``limiter`` defaults to this process's own limits, starting from
        ``spent`` dollars (what the run spent before this process)."""
        ledger = Ledger()
        limiter = limiter or LocalLimiter(limiter_capacities(config), config.max_cost_usd, spent)
        spend_log = SpendLog(root / "spend.jsonl")
        models: dict[str, LLM] = {}
        bases = [m.api_base for m in (config.explorer.model, config.judge.model) if m is not None]
        redact = Redactor([api_key, *(secret for base in bases for secret in url_secrets(base))])

        def llm_for(llm_config: LLMConfig) -> LLM:
            key = llm_config.model_dump_json(context={"secrets": True})
            if key not in models:
                models[key] = LLM(
                    llm_config,
                    api_key=SecretStr(api_key) if api_key else None,
                    cache_dir=root / "cache" / "llm",
                    ledger=ledger,
                    limiter=limiter,
                    redactor=redact,
                    spend_log=spend_log,
                )
            return models[key]

        explorer_llm = llm_for(config.explorer.model) if config.explorer.model else None
        explorer = config.explorer.open(explorer_llm)
        ctx = cls(config, root / "cache", explorer, ChecksJudge(), ledger, limiter)
        ctx.explorer_model = explorer_llm
        if config.judge.kind == "llm" and config.judge.model is not None:
            llm = llm_for(config.judge.model)
            ctx.judge = LLMJudge(llm, config.judge, seed=config.seed)
            ctx.selector_model = llm
        ctx.models = list(models.values())
        ctx.redact = redact
        ctx.spend_log = spend_log
        return ctx

    def spending(self) -> dict[str, Any]:
        """Known dollars and model calls so far in this process."""
        return {"usd": self.ledger.spent, "calls": self.ledger.calls}

    async def aclose(self) -> None:
        """Stop model worker processes and close caches."""
        for llm in self.models:
            await llm.aclose()
        if self.spend_log is not None:
            self.spend_log.close()
