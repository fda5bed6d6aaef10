"""Progress bars for long phases (rich): tasks done, missing verdicts and cost so far.

Quiet when the output is not a terminal (CI logs, pipes, notebooks): nothing is printed then.
"""

from __future__ import annotations

from typing import Any

ProgressEvent = str
"""``explored`` (a task's rubric is ready), ``judged`` (a task is finished), ``skipped`` (finished earlier)."""


class RunProgress:
    """A pipeline hook that draws one bar over the run's tasks on stderr."""

    def __init__(self, total: int, *, title: str = "tasks", force: bool | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = Console(stderr=True)
        enabled = self.console.is_terminal if force is None else force
        self.missing = 0
        self.cost = 0.0
        self.calls = 0
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=self.console,
            disable=not enabled,
            transient=False,
        )
        self.task = self.progress.add_task(title, total=total, status="")

    def __enter__(self) -> RunProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    @property
    def status(self) -> str:
        """The counters shown beside the bar."""
        cost = f"${self.cost:.4f}" if self.calls else "no model calls"
        return f"missing verdicts {self.missing} · {cost}"

    def __call__(self, event: ProgressEvent, instance_id: str, info: dict[str, Any]) -> None:
        if event in ("judged", "skipped"):
            self.missing += int(info.get("missing", 0))
            self.progress.advance(self.task)
        if event == "explored" and info.get("explore_only"):
            self.progress.advance(self.task)
        self.cost = float(info.get("usd", self.cost))
        self.calls = int(info.get("calls", self.calls))
        self.progress.update(self.task, status=self.status)
