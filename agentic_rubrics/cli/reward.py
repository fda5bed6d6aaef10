"""``agentic-rubrics serve-reward``: the reward endpoint (see :mod:`agentic_rubrics.reward.server`)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from agentic_rubrics.cli.exit import failed
from agentic_rubrics.cli.options import RunOptions, with_run_options

if TYPE_CHECKING:
    from agentic_rubrics.reward.scorer import RewardScorer

REWARD_OPTIONS = (
    "rubrics",
    "config",
    "seed",
    "model",
    "judge_model",
    "api_base",
    "api_key",
    "repeats",
    "items_per_call",
    "max_cost",
    "llm_concurrency",
    "llm_processes",
    "timeout",
    "repo_url",
    "repo_cache",
)
"""The run options serve-reward takes: where the rubrics are, and the judge's settings."""

TasksOpt = Annotated[
    Path | None,
    typer.Option(
        "--tasks",
        help="Tasks JSONL file: each instance's issue and repository (needed by the LLM judge"
        " and by repository-aware checks).",
    ),
]
RunOpt = Annotated[
    Path | None,
    typer.Option(
        "--run",
        help="A finished run folder: its judge, policy, rubrics and tasks file (instead of"
        " --rubrics/--tasks; the judge options are then ignored except --checks-only and"
        " --timeout).",
    ),
]
ChecksOpt = Annotated[
    bool,
    typer.Option("--checks-only", help="Only the deterministic checks decide (no model, no cost)."),
]
StateOpt = Annotated[
    Path | None,
    typer.Option(
        "--state",
        help="Folder for the judge's response cache and spend log (default: a temporary one).",
    ),
]
PortOpt = Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: any free one).")]
MaxBodyOpt = Annotated[
    int, typer.Option("--max-body", help="Largest request body in bytes (larger: 413).", min=1)
]
ConcurrencyOpt = Annotated[
    int, typer.Option("--concurrency", help="Requests scored at the same time.", min=1)
]
QueueOpt = Annotated[
    int,
    typer.Option(
        "--queue", help="Requests that may wait for a slot (more: 503 with Retry-After).", min=0
    ),
]
HeaderTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--header-timeout",
        help="Seconds a connection has to send its request line and headers (from its start, or"
        " from its previous answer); past them it is closed (408 when a request was cut short).",
        min=0.001,
    ),
]
MaxConnectionsOpt = Annotated[
    int,
    typer.Option(
        "--max-connections",
        help="Connections open at once; one more gets a 503 with Retry-After and is closed.",
        min=1,
    ),
]


def _serve(
    tasks: TasksOpt = None,
    run: RunOpt = None,
    checks_only: ChecksOpt = False,
    state: StateOpt = None,
    port: PortOpt = 8321,
    max_body: MaxBodyOpt = 2 * 1024 * 1024,
    concurrency: ConcurrencyOpt = 8,
    queue: QueueOpt = 64,
    header_timeout: HeaderTimeoutOpt = 10.0,
    max_connections: MaxConnectionsOpt = 256,
    **kwargs: Any,
) -> None:
    """Serve rubric rewards on 127.0.0.1: POST /score {"instance_id", "patch"} answers S, coverage
    and per-item verdicts (S null where the score is missing). Stops on SIGTERM or Ctrl-C after the
    requests in flight finish."""
    from agentic_rubrics.reward.server import RewardServer

    scorer = _open_scorer(RunOptions(**kwargs), tasks, run, checks_only, state)
    try:
        server = RewardServer(
            scorer,
            port=port,
            max_body=max_body,
            concurrency=concurrency,
            queue=queue,
            header_timeout=header_timeout,
            max_connections=max_connections,
        ).start()
    except OSError as exc:
        scorer.close()
        raise typer.BadParameter(f"--port {port}: {exc.strerror or exc}") from exc
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    typer.echo(
        f"serving rewards on {server.url}/score (judge: {scorer.judge_name};"
        f" {scorer.instances()} instance(s))",
        err=True,
    )
    typer.echo(server.url)  # the address, alone on stdout, for scripts
    try:
        while not stop.wait(0.5):
            pass
    finally:
        finished = server.stop()
        scorer.close()
    typer.echo("stopped" + ("" if finished else " (requests still in flight were cut)"), err=True)


def _open_scorer(
    opts: RunOptions, tasks: Path | None, run: Path | None, checks_only: bool, state: Path | None
) -> RewardScorer:
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.judge.judges import JudgeConfig
    from agentic_rubrics.pipeline.config import load_config
    from agentic_rubrics.reward.scorer import RewardScorer
    from agentic_rubrics.runfolder.tasks import load_tasks

    try:
        if run is not None:
            judge: Literal["run", "checks"] = "checks" if checks_only else "run"
            return RewardScorer.from_run(
                run, judge=judge, state_dir=state, api_key=opts.api_key, timeout=opts.timeout
            )
        if opts.rubrics is None:
            raise typer.BadParameter("give --rubrics DIR (with --tasks), or --run FOLDER")
        config = load_config(opts.config, opts.overrides())
        if checks_only:
            config = config.model_copy(update={"judge": JudgeConfig()})
        return RewardScorer(
            config,
            rubrics_dir=opts.rubrics,
            tasks=load_tasks(tasks) if tasks is not None else None,
            state_dir=state,
            api_key=opts.api_key,
            timeout=opts.timeout,
        )
    except AgenticRubricsError as exc:
        raise failed(exc) from exc


LEADING = [
    "tasks",
    "run",
    "checks_only",
    "state",
    "port",
    "max_body",
    "concurrency",
    "queue",
    "header_timeout",
    "max_connections",
]
serve_reward = with_run_options(_serve, LEADING, "serve-reward", REWARD_OPTIONS)
