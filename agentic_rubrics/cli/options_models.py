"""The options that say which models a run uses, how they are reached and what they may spend: part of
:class:`~agentic_rubrics.cli.options.RunOptions`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from agentic_rubrics.cli.option_sets import Sets, both_models


@dataclass
class ModelOptions:
    """The models' options (see the module's docstring)."""

    model: Annotated[
        str | None,
        typer.Option("--model", help="litellm model string for the judge and the explorer."),
        Sets("judge.kind", "judge.model", "explorer.model", composed=True),
    ] = None
    judge_model: Annotated[
        str | None,
        typer.Option("--judge-model", help="Judge model (overrides --model)."),
        Sets("judge.kind", "judge.model", composed=True),
    ] = None
    explorer_model: Annotated[
        str | None,
        typer.Option("--explorer-model", help="Explorer model (overrides --model)."),
        Sets("explorer.model", composed=True),
    ] = None
    api_base: Annotated[
        str | None,
        typer.Option("--api-base", help="OpenAI-compatible server URL (vLLM, Ollama, a proxy)."),
        Sets(*both_models("api_base"), composed=True),
    ] = None
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="AGENTIC_RUBRICS_API_KEY",
            help="API key (never written anywhere).",
            show_default=False,
        ),
    ] = None
    repeats: Annotated[
        int | None,
        typer.Option("--repeats", help="Judge each candidate R times; majority verdict."),
        Sets("judge.repeats"),
    ] = None
    items_per_call: Annotated[
        int | None,
        typer.Option("--items-per-call", help="Items per judge call (0: all, 1: one)."),
        Sets("judge.items_per_call"),
    ] = None
    max_cost: Annotated[
        float | None,
        typer.Option("--max-cost", help="Stop starting model calls after this many dollars."),
        Sets("max_cost_usd"),
    ] = None
    llm_concurrency: Annotated[
        int | None,
        typer.Option("--llm-concurrency", help="Model calls in flight at once."),
        Sets(*both_models("concurrency"), composed=True),
    ] = None
    llm_processes: Annotated[
        str | None,
        typer.Option(
            "--llm-processes",
            help="auto (default): worker processes for litellm only when the calls would saturate"
            " a core; N: always N; 0: never.",
        ),
        Sets(*both_models("processes"), composed=True),
    ] = None
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Seconds per model call."),
        Sets(*both_models("timeout"), composed=True),
    ] = None
