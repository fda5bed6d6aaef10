"""Every model request a run pays for, recorded as it happens, so budget and cost span the whole run.

``spend.jsonl`` in the run folder gets a ``sent`` row before a request leaves, then an ``answered`` row
(tokens, dollars) or a ``failed`` row when it ends. Each row is one ``write`` to a file opened for
appending: it survives the process being killed (a power cut may lose the last rows). Every process of a
run appends to it (resumes, Ray workers). A ``sent`` row that never ended is a request in flight when its
process died, or abandoned on a deadline: the provider may have billed it, so it is counted as spent with
an unknown cost.

An answer of unknown cost (a model with no price, or no usable token counts from the provider) carries
the estimate the budget was charged (``estimated_usd``, :mod:`agentic_rubrics.llm.price`), kept apart
from measured dollars. On resume the run's budget starts from what this file says was spent: known
dollars, the estimates, plus each request in flight at a kill at the mean cost of an answered request. A request starts only while that total is
below ``--max-cost``; requests already in flight finish, so the run can overshoot by at most the cost of
the requests in flight at that moment — at most ``concurrency`` requests per model.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentic_rubrics.llm.errors import CallFailed
from agentic_rubrics.protocols import Completion, Usage
from agentic_rubrics.runfolder.rows import read_row
from agentic_rubrics.runfolder.spend import SpendRow
from agentic_rubrics.types import SCHEMA

_FIELDS = (
    "requests",
    "calls",
    "failed_calls",
    "in_flight_unknown",
    "prompt_tokens",
    "completion_tokens",
    "usd",
    "unknown_cost_calls",
    "unreported_usage_calls",
    "estimated_usd",
)


class SpendLog:
    """The writer: one per process and run folder (cheap: one ``write`` per event)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._prefix = f"{os.getpid()}-{os.urandom(4).hex()}"
        self._numbers = count()

    def _write(self, row: SpendRow) -> None:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self._fd, (json.dumps(row.to_json(), sort_keys=True) + "\n").encode())

    def sent(self, *, model: str, phase: str, task: str) -> str:
        """Record a request about to leave; returns its id for the ending row."""
        call = f"{self._prefix}-{next(self._numbers)}"
        self._write(SpendRow(event="sent", call=call, model=model, phase=phase, instance_id=task))
        return call

    def answered(self, call: str, usage: Usage) -> None:
        """Record an answer: its tokens and known dollars (``None``: unknown), and for an unknown cost
        the estimate the budget was charged (``estimated_usd``); ``reported: false`` when the provider
        gave no usable token counts."""
        more: dict[str, Any] = {}
        if usage.cost_usd is None and usage.estimated_usd is not None:
            more["estimated_usd"] = usage.estimated_usd
        if not usage.reported:
            more["reported"] = False
        self._write(
            SpendRow(
                event="answered",
                call=call,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                usd=usage.cost_usd,
                **more,
            )
        )

    def failed(self, call: str, kind: str, status: int | None = None) -> None:
        """Record a request that ended without an answer (its failure kind, and HTTP status if any)."""
        self._write(SpendRow(event="failed", call=call, failure=kind, status=status))

    def close(self) -> None:
        """Close the file (a later event opens it again)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


async def recorded(
    log: SpendLog | None,
    send: Callable[[], Awaitable[Completion]],
    model: str,
    phase: str,
    task: str,
) -> Completion:
    """One request (``send``), recorded in ``log`` before it leaves and when it ends: answered or
    failed. A cancelled request (a deadline, a kill) keeps only its ``sent`` row: its cost is unknown."""
    if log is None:
        return await send()
    call = log.sent(model=model, phase=phase, task=task)
    try:
        completion = await send()
    except CallFailed as failure:
        log.failed(call, failure.kind, getattr(failure.__cause__, "status_code", None))
        raise
    log.answered(call, completion.usage)
    return completion


@dataclass
class Spending:
    """What ``spend.jsonl`` says a run has spent, in total and by phase."""

    totals: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_FIELDS, 0))
    by_phase: dict[str, dict[str, float]] = field(default_factory=dict)
    failures: Counter[str] = field(default_factory=Counter)
    unreadable_rows: int = 0
    """Lines that are no spend row (a torn write, a hand edit): skipped."""
    """Failed requests by ``kind`` (and ``kind/status`` when the provider sent an HTTP status)."""

    @property
    def mean_known_usd(self) -> float:
        """Mean dollars of an answered request, measured or estimated (0 with none)."""
        calls = self.totals["calls"]
        return (self.totals["usd"] + self.totals["estimated_usd"]) / calls if calls else 0.0

    @property
    def budget_charge(self) -> float:
        """Dollars counted against ``--max-cost``: known dollars, the estimates charged for answers of
        unknown cost, and each request in flight at a kill at the mean cost of an answered request."""
        t = self.totals
        return t["usd"] + t["estimated_usd"] + t["in_flight_unknown"] * self.mean_known_usd


def read_spending(path: Path) -> Spending:
    """Sum up a spend log (a missing file: nothing spent). A torn line (a write cut by a kill) or one
    that is not a spend row is skipped and counted (``unreadable_rows``); a row of another run-folder
    version is a :class:`DataError` naming the file, the line and the version."""
    out = Spending()
    if not path.exists():
        return out
    sent: dict[str, dict[str, Any]] = {}
    ended: dict[str, dict[str, Any]] = {}
    text = path.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not an object")
            if record.get("schema", SCHEMA) != SCHEMA:
                read_row(SpendRow, record, f"{path}:{number}")  # names the version it reads
            row = SpendRow.model_validate(record).to_json()
        except (ValueError, RecursionError, ValidationError):
            out.unreadable_rows += 1
            continue
        if row["event"] == "sent":
            sent[row["call"]] = row
        else:
            ended[row["call"]] = row
    for call, start in sent.items():
        end = ended.get(call, {})
        phase = out.by_phase.setdefault(str(start.get("phase")), dict.fromkeys(_FIELDS, 0))
        for into in (out.totals, phase):
            _count(into, end)
        if end.get("event") == "failed":
            status = end.get("status")
            out.failures[f"{end.get('failure')}" + (f"/{status}" if status else "")] += 1
    return out


def _count(into: dict[str, float], end: dict[str, Any]) -> None:
    into["requests"] += 1
    event = end.get("event")
    if event == "answered":
        into["calls"] += 1
        into["prompt_tokens"] += int(end.get("prompt_tokens") or 0)
        into["completion_tokens"] += int(end.get("completion_tokens") or 0)
        if end.get("usd") is None:
            into["unknown_cost_calls"] += 1
            into["estimated_usd"] += _dollars(end.get("estimated_usd"))
        else:
            into["usd"] += _dollars(end["usd"])
        if end.get("reported") is False:
            into["unreported_usage_calls"] += 1
    elif event == "failed":
        into["failed_calls"] += 1
    else:
        into["in_flight_unknown"] += 1


def _dollars(value: Any) -> float:
    """A dollar figure from the log: a finite number >= 0, else 0 (a hand-edited line cannot crash it)."""
    try:
        usd = float(value)
    except (TypeError, ValueError):
        return 0.0
    return usd if math.isfinite(usd) and usd >= 0 else 0.0


def cost_summary(
    spending: Spending, cached_calls: float, tasks: int, max_cost_usd: float | None
) -> dict[str, Any]:
    """The report's cost: every request of the run from ``spend.jsonl`` (across resumes and processes),
    and the calls served from the response cache."""
    total = dict(spending.totals)
    return {
        **total,
        "cached_calls": cached_calls,
        "usd_per_task": total["usd"] / tasks if tasks else None,
        "by_phase": spending.by_phase,
        "failures": dict(sorted(spending.failures.items())),
        "max_cost_usd": max_cost_usd,
        "budget_charge_usd": spending.budget_charge,
        "unreadable_rows": spending.unreadable_rows,
    }
