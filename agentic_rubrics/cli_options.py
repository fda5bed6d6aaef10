"""The options shared by ``run``, ``explore``, ``judge`` and ``demo``, and how they become settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer


@dataclass
class RunOptions:
    """The options shared by run, explore, judge and demo."""

    rubrics: Path | None = None
    config: Path | None = None
    explorer: str | None = None
    selectors: str | None = None
    seed: int | None = None
    restart: bool = False
    redo_changed: bool = False
    retry_missing: bool = True
    trajectories: bool = True
    quiet: bool = False
    model: str | None = None
    judge_model: str | None = None
    explorer_model: str | None = None
    api_base: str | None = None
    api_key: str | None = None
    repeats: int | None = None
    items_per_call: int | None = None
    max_cost: float | None = None
    llm_concurrency: int | None = None
    llm_processes: str | None = None
    timeout: float | None = None
    sandbox: str | None = None
    unsafe_local_sandbox: bool = False
    max_turns: int | None = None
    executor: str | None = None
    ray_address: str | None = None
    workers: int | None = None
    repo_url: str | None = None
    repo_cache: Path | None = None

    def overrides(self) -> dict[str, Any]:
        """Nested settings for :func:`agentic_rubrics.config.load_config` (``None`` = unset)."""

        def llm(model: str | None) -> dict[str, Any] | None:
            if model is None:
                return None
            return {
                "model": model,
                "api_base": self.api_base,
                "concurrency": self.llm_concurrency,
                "processes": self.llm_processes,
                "timeout": self.timeout,
            }

        judge_model = self.judge_model or self.model
        return {
            "rubrics_dir": str(self.rubrics) if self.rubrics else None,
            "explorer": {
                "kind": self.explorer,
                "model": llm(self.explorer_model or self.model)
                if (self.explorer or "static") != "static" or self.explorer_model
                else None,
                "sandbox": {"type": self.sandbox} if self.sandbox else None,
                "allow_unisolated": True if self.unsafe_local_sandbox else None,
                "max_turns": self.max_turns,
            },
            "judge": {
                "kind": "llm" if judge_model else None,
                "model": llm(judge_model),
                "repeats": self.repeats,
                "items_per_call": self.items_per_call,
            },
            "selectors": [x.strip() for x in self.selectors.split(",") if x.strip()]
            if self.selectors
            else None,
            "seed": self.seed,
            "max_cost_usd": self.max_cost,
            "executor": self.executor,
            "ray_address": self.ray_address,
            "workers": self.workers,
            "trajectories": None if self.trajectories else False,
            "repos": {
                "url_template": self.repo_url,
                "cache_dir": str(self.repo_cache) if self.repo_cache else None,
            },
        }


def run_options(
    rubrics: Annotated[
        Path | None, typer.Option("--rubrics", help="Reuse DIR/<instance_id>/rubrics.yaml.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="YAML file of run settings.")
    ] = None,
    explorer: Annotated[
        str | None,
        typer.Option(
            "--explorer",
            help="static (rules, no model), agent (a model in a sandbox) or issue-only.",
        ),
    ] = None,
    selectors: Annotated[
        str | None,
        typer.Option(
            "--selectors", help="Comma-separated selectors; the first writes selections.jsonl."
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Tie-break, shuffle and bootstrap seed.")
    ] = None,
    restart: Annotated[
        bool, typer.Option("--restart", help="Discard the folder's results instead of resuming.")
    ] = False,
    redo_changed: Annotated[
        bool,
        typer.Option(
            "--redo-changed",
            help="Redo the tasks whose patches, candidates or issue text changed since they were"
            " scored (only those).",
        ),
    ] = False,
    retry_missing: Annotated[
        bool,
        typer.Option(
            "--retry-missing/--no-retry-missing",
            help="On resume, retry the verdicts and rubrics that failed transiently (provider"
            " errors, budget, sandbox, no repository), keeping every other result.",
        ),
    ] = True,
    trajectories: Annotated[
        bool,
        typer.Option("--trajectories/--no-trajectories", help="Write exploration trajectories."),
    ] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the report.")] = False,
    model: Annotated[
        str | None,
        typer.Option("--model", help="litellm model string for the judge and the explorer."),
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option("--judge-model", help="Judge model (overrides --model).")
    ] = None,
    explorer_model: Annotated[
        str | None, typer.Option("--explorer-model", help="Explorer model (overrides --model).")
    ] = None,
    api_base: Annotated[
        str | None,
        typer.Option("--api-base", help="OpenAI-compatible server URL (vLLM, Ollama, a proxy)."),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="AGENTIC_RUBRICS_API_KEY",
            help="API key (never written anywhere).",
            show_default=False,
        ),
    ] = None,
    repeats: Annotated[
        int | None,
        typer.Option("--repeats", help="Judge each candidate R times; majority verdict."),
    ] = None,
    items_per_call: Annotated[
        int | None, typer.Option("--items-per-call", help="Items per judge call (0: all, 1: one).")
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option("--max-cost", help="Stop starting model calls after this many dollars."),
    ] = None,
    llm_concurrency: Annotated[
        int | None, typer.Option("--llm-concurrency", help="Model calls in flight at once.")
    ] = None,
    llm_processes: Annotated[
        str | None,
        typer.Option(
            "--llm-processes",
            help="auto (default): worker processes for litellm only when the calls would saturate"
            " a core; N: always N; 0: never.",
        ),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds per model call.")
    ] = None,
    sandbox: Annotated[
        str | None,
        typer.Option(
            "--sandbox",
            help="auto, bubblewrap, local-copy, swerex-local, swerex-docker or swerex-modal"
            " (swerex-remote: through --config).",
        ),
    ] = None,
    unsafe_local_sandbox: Annotated[
        bool,
        typer.Option("--unsafe-local-sandbox", help="Let a model's commands run unisolated here."),
    ] = False,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", help="The agent explorer's turn budget.")
    ] = None,
    executor: Annotated[
        str | None, typer.Option("--executor", help="local (this process) or ray (needs [ray]).")
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", help="Ray cluster to join (default: a local one)."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Ray tasks in flight at once.")
    ] = None,
    repo_url: Annotated[
        str | None,
        typer.Option(
            "--repo-url",
            help="Where a task's repository is fetched from: a URL with {repo}, {owner}, {name}"
            " (default https://github.com/{repo}.git); none: fetch nothing.",
        ),
    ] = None,
    repo_cache: Annotated[
        Path | None,
        typer.Option("--repo-cache", help="Folder of fetched repositories (default: user cache)."),
    ] = None,
) -> RunOptions:
    return RunOptions(**locals())
