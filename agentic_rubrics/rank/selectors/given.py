"""A selector that is not built in — a research script's function or class, or another package's —
as the registry hands it on: the members it lacks take their defaults, and what it returns is checked.

A ranking (and the values ROC-AUC rests on) must map the task's candidate ids to numbers or ``None``
(no value, ranked lowest); a candidate it leaves out has ``None``; ``bool`` counts as 0/1 and every
number is kept as a float. Anything else — another type, a candidate the task does not have, NaN, an
exception from its code — is a :class:`ConfigError` naming the selector, the task and what was
expected, never a traceback from the metrics far from the cause. Errors of the package's own
(``stored`` finding no feature: a :class:`DataError`) pass unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from numbers import Real
from typing import Any

from agentic_rubrics.exceptions import AgenticRubricsError, ConfigError
from agentic_rubrics.rank.selectors import FeatureInput, Ranking, RankingInput, Selector

_SHOWN = 3
"""Candidate ids quoted in an error, at most."""


class GivenSelector:
    """A selector object, or a plain function ``ranking(task) -> {candidate id: value}``, checked
    (see the module's docstring); ``name`` is the one the run and the report know it by."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner, self.name = inner, name
        self._ranking: Callable[[RankingInput], Any] = getattr(inner, "ranking", inner)
        doc = getattr(inner, "description", None) or getattr(inner, "__doc__", None) or name
        self.description = str(doc).strip().splitlines()[0] if str(doc).strip() else name
        self.needs_model = bool(getattr(inner, "needs_model", False))
        self.prompts = tuple(getattr(inner, "prompts", ()) or ())

    async def features(self, given: FeatureInput) -> dict[str, Any]:
        compute = getattr(self.inner, "features", None)
        if compute is None:
            return {}
        found = await compute(given)
        if not isinstance(found, dict):
            raise ConfigError(
                f"selector {self.name!r}: its features of {given.task.instance_id} are a"
                f" {type(found).__name__}: expected a dict {{feature key: JSON value}}"
            )
        return found

    def ranking(self, task: RankingInput) -> Ranking:
        return self._checked("ranking", task, lambda: self._ranking(task))

    def values(self, task: RankingInput, ranking: Ranking) -> Ranking:
        values = getattr(self.inner, "values", None)
        if values is None:
            return ranking
        return self._checked("values", task, lambda: values(task, ranking))

    def fitted_on(self, instance_ids: list[str]) -> dict[str, Any] | None:
        fitted_on = getattr(self.inner, "fitted_on", None)
        found: dict[str, Any] | None = fitted_on(instance_ids) if fitted_on is not None else None
        return found

    def _checked(self, member: str, task: RankingInput, call: Callable[[], Any]) -> Ranking:
        where = f"selector {self.name!r}: its {member} of {task.instance_id}"
        try:  # a user's code: whatever it raises is named, the package's own errors pass
            found = call()
        except AgenticRubricsError:
            raise
        except Exception as exc:
            raise ConfigError(f"{where} raised {type(exc).__name__}: {exc}") from exc
        return checked_ranking(found, list(task.scores), where)


def checked_ranking(found: Any, candidates: list[str], where: str) -> Ranking:
    """``found`` as a ranking of ``candidates`` (see the module's docstring); ``where`` starts errors."""
    expected = "expected a dict {candidate id: number or None}"
    if not isinstance(found, Mapping):
        raise ConfigError(f"{where} is a {type(found).__name__}: {expected}")
    known = set(candidates)
    unknown = [k for k in found if k not in known]
    if unknown:
        raise ConfigError(
            f"{where} names {len(unknown)} candidate(s) the task does not have"
            f" ({', '.join(repr(k) for k in unknown[:_SHOWN])}); its candidates are"
            f" {', '.join(repr(c) for c in candidates[:_SHOWN])}{' ...' * (len(candidates) > _SHOWN)}"
        )
    out: Ranking = {}
    for cid in candidates:
        value = found.get(cid)
        if value is not None and (not isinstance(value, Real) or math.isnan(float(value))):
            raise ConfigError(
                f"{where}: candidate {cid!r} has {value!r}: expected a number (not NaN) or None"
            )
        out[cid] = None if value is None else float(value)
    return out


def adapt(found: Any, name: str) -> Selector:
    """A selector class (made with no arguments), object or plain ranking function, checked, as the
    selector ``name``; anything else is a :class:`ConfigError` saying what was expected."""
    expected = (
        "expected a selector (a class or object with ranking(task)) or a function"
        " ranking(task) -> {candidate id: value}"
    )
    if isinstance(found, type):
        if not callable(getattr(found, "ranking", None)):
            raise ConfigError(f"selector {name!r} is the class {found.__name__}: {expected}")
        try:  # a user's class: whatever its constructor raises is named
            found = found()
        except Exception as exc:
            raise ConfigError(
                f"selector {name!r}: {found.__name__}() failed ({type(exc).__name__}: {exc});"
                " a selector class is made with no arguments"
            ) from exc
    if isinstance(found, GivenSelector):
        found = found.inner
    if not callable(getattr(found, "ranking", None)) and not callable(found):
        raise ConfigError(f"selector {name!r} is a {type(found).__name__}: {expected}")
    return GivenSelector(found, name)
