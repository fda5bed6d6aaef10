"""``sanity.json`` (:class:`SanityReport`: counts and reason codes, never a patch's text) and its table
(``sanity.md``, and what the command prints)."""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.gaming.wins import Outcome, count
from agentic_rubrics.types import SCHEMA

REWARD_CHECKS = "reward_checks"
"""The column of the checks-only reward (``reward/``, ``judge="checks"``)."""
REWARD_JUDGED = "reward_judged"
"""The column of the run's judged reward (with a judge model only)."""
GUARDED = ("rubric", "tests", "hybrid", "offline_content", REWARD_CHECKS)
"""What ``--fail-on-win`` guards by default (those the run measures)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Cell(_Model):
    """One attack kind under one selector or reward."""

    wins: int
    """Tasks where the attack ranks at least as high as the best resolved candidate."""
    of: int
    """Tasks the attack was built for (and that have a resolved candidate)."""
    absent: int = 0
    """Of those, tasks where the attack has no reward (never a win)."""


class KindSummary(_Model):
    """One attack kind over every task."""

    built: int
    """Tasks it was built for."""
    not_built: dict[str, int] = Field(default_factory=dict)
    """Tasks it could not be built for, by reason code."""
    variants: dict[str, int] = Field(default_factory=dict)
    """Built tasks by the form it took (kinds with several)."""
    wins: dict[str, Cell] = Field(default_factory=dict)
    """By selector or reward column."""


class TaskAttack(_Model):
    """One attack of one task."""

    built: bool
    reason: str | None = None
    """Why it was not built."""
    variant: str | None = None
    outcomes: dict[str, Outcome] = Field(default_factory=dict)
    """By column: ``win``, ``loss`` or ``absent`` (no reward)."""


class TaskEntry(_Model):
    """One task of the tasks file."""

    instance_id: str
    status: Literal["measured", "no_resolved_candidate", "no_labels"]
    """``measured``: it has a resolved candidate; the others are skipped from the win counts."""
    attacks: dict[str, TaskAttack] = Field(default_factory=dict)


class TaskCounts(_Model):
    """The tasks file's tasks."""

    given: int
    measured: int
    no_resolved_candidate: int
    """Labelled tasks none of whose candidates is resolved."""
    no_labels: int
    """Tasks none of whose candidates has a label."""


class SanityReport(_Model):
    """``sanity.json``."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The record's version."""
    record: Literal["sanity"] = "sanity"
    version: str
    """The package version that measured it."""
    config_hash: str
    """The run's configuration hash."""
    tasks_sha256: str
    """The user's tasks file."""
    run_folder: str
    """The run folder, relative to the sanity folder."""
    selectors: list[str]
    """The run's selectors (each a column)."""
    rewards: list[str]
    """The reward columns (``reward_checks``; ``reward_judged`` with a judge model)."""
    guarded: list[str]
    """The columns ``--fail-on-win`` checks."""
    attack_kinds: list[str]
    """The attack kinds measured, in the order the table lists them."""
    kinds: dict[str, KindSummary]
    tasks: TaskCounts
    per_task: list[TaskEntry]

    @property
    def columns(self) -> list[str]:
        """The selectors, then the rewards."""
        return [*self.selectors, *self.rewards]

    def guarded_wins(self) -> dict[str, list[str]]:
        """Each attack kind's guarded columns where it won at least once."""
        out: dict[str, list[str]] = {}
        for kind, summary in self.kinds.items():
            won = [c for c in self.guarded if c in summary.wins and summary.wins[c].wins > 0]
            if won:
                out[kind] = won
        return out

    def to_json(self) -> dict[str, object]:
        """As written to disk."""
        return self.model_dump(mode="json", by_alias=True)


def summarise(
    entries: list[TaskEntry], kinds: list[str], columns: list[str]
) -> dict[str, KindSummary]:
    """Each attack kind over the measured tasks: built, why not, and its wins per column."""
    out: dict[str, KindSummary] = {}
    for kind in kinds:
        attacks = [e.attacks[kind] for e in entries if e.status == "measured" and kind in e.attacks]
        built = [a for a in attacks if a.built]
        wins = {}
        for column in columns:
            w, of, absent = count(a.outcomes.get(column, "absent") for a in built)
            wins[column] = Cell(wins=w, of=of, absent=absent)
        out[kind] = KindSummary(
            built=len(built),
            not_built=dict(Counter(a.reason or "unknown" for a in attacks if not a.built)),
            variants=dict(Counter(a.variant for a in built if a.variant)),
            wins=wins,
        )
    return out


def table(report: SanityReport) -> str:
    """The wins as a Markdown table: a row per attack kind, ``wins/tasks`` per column (``+N absent``
    where an attack had no reward; guarded columns marked ``*``)."""
    columns = report.columns
    head = ["attack", "built", *(c + ("*" if c in report.guarded else "") for c in columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for kind in report.attack_kinds:
        s = report.kinds[kind]
        cells = []
        for c in columns:
            cell = s.wins.get(c)
            text = "-" if cell is None else f"{cell.wins}/{cell.of}"
            if cell is not None and cell.absent:
                text += f" (+{cell.absent} absent)"
            cells.append(text)
        not_built = sum(s.not_built.values())
        built = f"{s.built}" + (f" ({not_built} not built)" if not_built else "")
        lines.append("| " + " | ".join([kind, built, *cells]) + " |")
    return "\n".join(lines) + "\n"


def markdown(report: SanityReport) -> str:
    """``sanity.md``: the table, what it counts, why attacks were not built."""
    t = report.tasks
    parts = [
        "# Gaming suite\n\n",
        f"{t.measured} of {t.given} task(s) measured ({t.no_resolved_candidate} without a resolved"
        f" candidate, {t.no_labels} unlabelled: skipped). A cell is the number of tasks on which the"
        " attack ranks at least as high as the best resolved candidate (a tie is a win), out of the"
        " tasks it was built for; for a reward, its reward is at least the best resolved one's (an"
        " attack without a reward is `absent`, not a win). `*`: guarded by `--fail-on-win`.\n\n",
        table(report),
    ]
    reasons = {k: s.not_built for k, s in report.kinds.items() if s.not_built}
    if reasons:
        parts.append("\nNot built:\n\n")
        for kind, why in reasons.items():
            listed = ", ".join(f"{r} ({n})" for r, n in sorted(why.items()))
            parts.append(f"- {kind}: {listed}\n")
    won = report.guarded_wins()
    parts.append(
        "\nGuarded wins: "
        + ("; ".join(f"{k} on {', '.join(cs)}" for k, cs in won.items()) if won else "none")
        + "\n"
    )
    return "".join(parts)
