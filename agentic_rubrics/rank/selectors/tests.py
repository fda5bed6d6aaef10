"""The tests selector: the pass rate of the ``tests`` verifier's script on each candidate.

The verifier (:mod:`agentic_rubrics.pipeline.verifiers.tests`) stores, per task, under ``baselines``
``tests``: the script's validation (``status``, ``reason``) and each candidate's ``pass_rate`` (the
share of the script's counted tests that passed on the candidate's tree; 0 for a patch that does not
apply) or ``None`` with its reason (``timeout``, ``sandbox_error`` ...; every candidate of a task whose
script failed validation, e.g. ``tests_pass_on_base``). A missing pass rate ranks last and is never 0.
"""

from __future__ import annotations

from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.rank.selectors import BaseSelector, Ranking, RankingInput, stored

FEATURE = "tests"
"""The key of the verifier's record in a task's ``baselines``."""


def pass_rates(task: RankingInput) -> dict[str, float | None]:
    """Each candidate's pass rate (``None``: none), read from the task's stored record."""
    record: Any = stored(task, FEATURE, "tests")
    rates = record.get("pass_rate") if isinstance(record, dict) else None
    if not isinstance(rates, dict):
        raise DataError(f"{task.instance_id}: its 'tests' record holds no pass_rate mapping")
    out: dict[str, float | None] = {}
    for cid in task.scores:
        value = rates.get(cid)
        out[cid] = float(value) if isinstance(value, int | float) else None
    return out


class TestsSelector(BaseSelector):
    """See the module's docstring."""

    __test__ = False  # a selector, not a pytest class
    name = "tests"
    description = (
        "pass rate of the tests verifier's script (validated to fail on the base tree) on each"
        " candidate's tree, executed in a sandbox; missing (timeout, invalid script) ranks last"
    )

    def ranking(self, task: RankingInput) -> Ranking:
        return dict(pass_rates(task))
