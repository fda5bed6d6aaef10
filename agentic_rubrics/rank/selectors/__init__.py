"""Selectors: how the candidates of one task are ranked, and the one registry that names them.

A selector works twice. At judge time, :meth:`Selector.features` computes what it needs from the
patches (or from a model) and returns it as JSON values, stored in the task's record under
``baselines``: the report never needs a patch. At report time, :meth:`Selector.ranking` turns the
stored features and the candidates' rubric scores into a ranking value per candidate (higher is better,
``None`` lowest), and :meth:`Selector.values` gives the values ROC-AUC and PR-AUC rest on and that say
whether the selector has a value for a task at all (the rubric selector: S, not its tiered rank).

A new selector is one file: a class with these members, registered either in :data:`BUILTIN` (name ->
``module:attribute``, imported on first use) or, from outside the package, through the entry point
group ``agentic_rubrics.rank.selectors`` (in a distribution's ``pyproject.toml``:
``[project.entry-points."agentic_rubrics.selectors"] my_selector = "my_pkg.my_selector:MySelector"``).
A selector that needs no model has its features computed for every task (selectors are chosen at report
time); one that ``needs_model`` only when a run names it and has a judge model.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agentic_rubrics.exceptions import ConfigError, DataError

if TYPE_CHECKING:
    from agentic_rubrics.protocols import Model
    from agentic_rubrics.rubric.checks_repo import RepoAnalyses
    from agentic_rubrics.types import CandidateScore, Task

Ranking = dict[str, float | None]
"""Candidate id -> ranking value (higher is better, ``None`` lowest)."""

ENTRY_POINTS = "agentic_rubrics.selectors"
"""The entry point group other distributions register selectors under."""

BUILTIN: dict[str, str] = {
    "rubric": "agentic_rubrics.rank.selectors.rubric:RubricSelector",
    "random": "agentic_rubrics.rank.selectors.uniform:RandomSelector",
    "self_consistency": "agentic_rubrics.rank.selectors.self_consistency:SelfConsistencySelector",
    "behaviour_consensus": (
        "agentic_rubrics.rank.selectors.behaviour_consensus:BehaviourConsensusSelector"
    ),
    "patch_classifier": "agentic_rubrics.rank.selectors.patch_classifier:PatchClassifierSelector",
    "offline": "agentic_rubrics.rank.selectors.offline:OfflineSelector",
    "offline_content": "agentic_rubrics.rank.selectors.offline_content:OfflineContentSelector",
    "tests": "agentic_rubrics.rank.selectors.tests:TestsSelector",
    "hybrid": "agentic_rubrics.rank.selectors.hybrid:HybridSelector",
    "similarity": "agentic_rubrics.rank.selectors.similarity:SimilaritySelector",
}
"""The selectors that ship with the package: name -> ``module:attribute`` (a class or an instance)."""

T = TypeVar("T")


@dataclass
class FeatureInput:
    """What a selector reads at judge time: the task's public view, and the judge model if any."""

    task: Task
    model: Model | None = None
    """The run's judge model (``None`` without one); only selectors that ``needs_model`` use it."""
    repository: RepoAnalyses | None = None
    """The task's tree and its post-image analyses (the judge's, shared), when the run has one."""
    probes: dict[str, Any] | None = None
    """The outputs of the issue's examples on each candidate's tree (``consensus_probes``:
    :func:`agentic_rubrics.pipeline.probes.issue_outputs`), or why there are none; ``None``: not run."""
    _memo: dict[Any, Any] = field(default_factory=dict)

    def once(self, fn: Callable[[Mapping[str, str]], T]) -> T:
        """``fn(patches)`` computed once per task, shared by every selector that asks for it."""
        if fn not in self._memo:
            self._memo[fn] = fn(self.patches)
        result: T = self._memo[fn]
        return result

    @property
    def patches(self) -> dict[str, str]:
        """Candidate id -> patch."""
        return {c.id: c.patch for c in self.task.candidates}

    async def post_rows(self) -> tuple[dict[str, dict[str, Any] | None], int]:
        """Each candidate's post-image row (:func:`agentic_rubrics.rank.content.post_row`: ``None``
        without a tree) and how many patches were analysed (not timed out); each analysis is the
        judge's, shared."""
        from agentic_rubrics.rank.content import post_row

        results = {
            c.id: await self.repository.analysis(c.patch) if self.repository else None
            for c in self.task.candidates
        }
        analysed = sum(1 for r in results.values() if r and r.apply.method != "not_attempted")
        return {c: post_row(r) for c, r in results.items()}, analysed


class RankingInput(Protocol):
    """What a selector reads at report time of one task."""

    instance_id: str
    scores: dict[str, CandidateScore]
    """Each candidate's rubric score (S, coverage, tier)."""

    @property
    def baselines(self) -> Mapping[str, Any]:
        """The features every selector stored at judge time."""
        ...


class Selector(Protocol):
    """Ranks the candidates of a task; see the module's docstring."""

    name: str
    description: str
    needs_model: bool
    """Its features call the judge model: computed only when a run names it and has a judge model."""
    prompts: tuple[str, ...]
    """The prompts (``prompts/<name>.yaml``) its features render: their hashes guard resuming."""

    def features(self, given: FeatureInput) -> Awaitable[dict[str, Any]]:
        """Judge time: ``{key: JSON value}`` added to the task's stored ``baselines``."""
        ...

    def ranking(self, task: RankingInput) -> Ranking:
        """Report time: each candidate's ranking value."""
        ...

    def values(self, task: RankingInput, ranking: Ranking) -> Ranking:
        """The values ROC-AUC and PR-AUC rest on (and whether the selector has any for the task)."""
        ...

    def fitted_on(self, instance_ids: list[str]) -> dict[str, Any] | None:
        """What its weights were fitted on, and how many of these instances were in the fit (their
        figures are then in-sample); ``None`` for a selector without fitted weights."""
        ...


class BaseSelector:
    """Defaults for a selector: no features, no model, its ranking values are its values."""

    name = ""
    description = ""
    needs_model = False
    prompts: tuple[str, ...] = ()
    guarded = True
    """Its picks never fall on a candidate that fixes nothing (:func:`guarded`)."""

    async def features(self, given: FeatureInput) -> dict[str, Any]:
        return {}

    def values(self, task: RankingInput, ranking: Ranking) -> Ranking:
        return ranking

    def fitted_on(self, instance_ids: list[str]) -> dict[str, Any] | None:
        return None


def stored(task: RankingInput, key: str, selector: str) -> Any:
    """A feature stored at judge time, or a :class:`DataError` naming the task and the selector."""
    value = task.baselines.get(key)
    if value is None:
        raise DataError(f"{task.instance_id}: no {selector!r} values were recorded in this run")
    return value


@lru_cache(maxsize=8)
def _entry_points(path: tuple[str, ...]) -> dict[str, str]:
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINTS)}


def registry() -> dict[str, str]:
    """Every selector name -> its import path: the built-in ones, then those of entry points."""
    found = _entry_points(tuple(sys.path))
    return {**BUILTIN, **{k: v for k, v in found.items() if k not in BUILTIN}}


def selector_names() -> list[str]:
    """The names a run or a report may use: registered ones, and those given in this process."""
    return [*registry(), *(n for n in _GIVEN if n not in registry())]


_LOADED: dict[str, Selector] = {}
_GIVEN: dict[str, Selector] = {}
"""Selectors handed over in this process (:func:`register_selector`), by name."""
_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
"""A selector named by where it lives: ``module:attribute``, found on ``sys.path``."""
FUSION_PREFIXES = ("fusion", "fusion-minmax", "rrf", "fitted")
"""Name prefixes of fusions (:mod:`agentic_rubrics.rank.selectors.fusion`): ``fusion:a*2+b``,
``fusion-minmax:...``, ``rrf:a+b``, ``fitted:weights.json``; they come before ``module:attribute``."""
_FUSION = "agentic_rubrics.rank.selectors.fusion"


def is_fusion_name(name: str) -> bool:
    """Whether a selector name is a fusion's (see :data:`FUSION_PREFIXES`)."""
    prefix, sep, _ = name.partition(":")
    return bool(sep) and prefix in FUSION_PREFIXES


def _fusion(name: str) -> Selector:
    """A fusion named by its signals, or read from a weights file (once per file version)."""
    key = name
    if name.startswith("fitted:"):
        try:
            st = Path(name.removeprefix("fitted:")).stat()
        except OSError as exc:
            raise ConfigError(f"selector {name!r}: cannot read the weights file ({exc})") from exc
        key = f"{name}@{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    if key not in _LOADED:
        made: Selector = importlib.import_module(_FUSION).fusion_selector(name)
        _LOADED[key] = made
    return _LOADED[key]


def register_selector(selector: Any, name: str | None = None) -> str:
    """Hand a selector to this process's runs and reports without packaging it: a selector class
    or object (see :class:`Selector`; a member it lacks takes :class:`BaseSelector`'s default), or a
    plain function ``ranking(task) -> {candidate id: value}`` (``task`` has ``instance_id``,
    ``scores``, ``baselines``). Returns the name to put in ``selectors``, recorded in config.json and
    report.json: ``name``, else the selector's own ``name``, else ``module:qualname`` of the function
    (a lambda or a function defined inside another has no such name: give it one). What it returns is
    checked (:mod:`.given`). Its features, if any, are computed when a run names it."""
    chosen = (
        name
        or getattr(selector, "name", None)
        or (f"{getattr(selector, '__module__', '?')}:{getattr(selector, '__qualname__', '?')}")
    )
    if not isinstance(chosen, str) or not _GIVEN_NAME.match(chosen):
        raise ConfigError(
            f"selector {chosen!r} has no name a later report could know it by: expected letters,"
            " digits, '_', '.', '-' or ':' (no spaces, commas or '<'); define the function at the"
            " top level of a module, or name it: register_selector(fn, name='my_selector')"
        )
    if chosen in BUILTIN:
        raise ConfigError(f"selector {chosen!r}: a built-in selector has that name")
    _GIVEN[chosen] = _adapt(selector, chosen)
    return chosen


_GIVEN_NAME = re.compile(r"^[A-Za-z_][\w.:-]*$")
"""A name a selector may be given (it goes into config.json, report.json and file names)."""


def _adapt(found: Any, name: str) -> Selector:
    """A selector not built in, checked (:mod:`.given`, loaded by its path as every selector is)."""
    made: Selector = importlib.import_module(_CHECKED).adapt(found, name)
    return made


_CHECKED = "agentic_rubrics.rank.selectors.given"


def _import_path(name: str) -> Selector:
    """A selector named ``module:attribute``: imported from ``sys.path`` (the current directory
    too: a research script's module beside it), once per process."""
    module, _, attr = name.partition(":")
    cwd = str(Path.cwd())
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.append(cwd)
    try:  # a user's code: whatever it raises, the run names it and stops
        found: Any = importlib.import_module(module)
        for part in attr.split("."):
            found = getattr(found, part)
    except Exception as exc:
        raise ConfigError(
            f"selector {name!r}: cannot import it ({type(exc).__name__}: {exc}); a selector given"
            " as module:attribute is looked up on sys.path and in the current directory"
            + (_MAIN if module == "__main__" else "")
        ) from exc
    finally:
        if added:
            sys.path.remove(cwd)
    return _adapt(found, name)


_MAIN = (
    "; a name in __main__ was handed over by a script or notebook: hand the selector over again in"
    " Python (report_folder(out, selectors=[fn, ...])), or choose others (report --selectors)"
)


def get_selector(name: str) -> Selector:
    """The selector registered as ``name`` (imported on first use), handed over in this process, or
    named by its place (``module:attribute``); unknown names list the known ones."""
    if name in _GIVEN:
        return _GIVEN[name]
    if is_fusion_name(name):
        return _fusion(name)
    where = registry().get(name)
    if where is None:
        if _PATH.match(name):
            if name not in _LOADED:
                _LOADED[name] = _import_path(name)
            return _LOADED[name]
        raise ConfigError(
            f"unknown selector {name!r}; known: {', '.join(selector_names())}, or a"
            " module:attribute of your own"
        )
    key = f"{name}={where}"
    if key not in _LOADED:
        module, _, attr = where.partition(":")
        try:  # another package's code: whatever it raises, the run names it and stops
            found = getattr(importlib.import_module(module), attr)
            selector = found() if isinstance(found, type) else found
        except Exception as exc:
            raise ConfigError(
                f"selector {name!r}: cannot load {where}: {type(exc).__name__}: {exc}"
            ) from exc
        if getattr(selector, "name", None) != name:
            raise ConfigError(
                f"selector {name!r}: {where} calls itself {getattr(selector, 'name', None)!r}"
            )
        _LOADED[key] = selector if name in BUILTIN else _adapt(selector, name)
    return _LOADED[key]


def check_names(names: list[str]) -> None:
    """Refuse unknown, repeated or no selector names (a ``ValueError`` naming the known ones); a
    ``module:attribute`` or a fusion is accepted here and loaded when used."""
    known = selector_names()
    unknown = [s for s in names if s not in known and not _PATH.match(s) and not is_fusion_name(s)]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(
            f"selectors must be distinct names among {', '.join(known)}, a fusion (fusion:a*2+b,"
            f" rrf:a+b, fitted:weights.json), or module:attribute of your own; got {names}"
        )


def fitted_weights(names: list[str], instance_ids: list[str]) -> dict[str, Any]:
    """Per selector with fitted weights: what they were fitted on and how many of the run's instances
    were in the fit (``run_instances_in_fit``; those instances' figures are in-sample)."""
    out: dict[str, Any] = {}
    for name in names:
        fitted_on = getattr(get_selector(name), "fitted_on", None)
        found = fitted_on(instance_ids) if fitted_on is not None else None
        if found is not None:
            out[name] = {**found, "run_instances": len(set(instance_ids))}
    return out


async def compute_features(given: FeatureInput, chosen: list[str]) -> dict[str, Any]:
    """Every selector's features for one task (judge time), to store under ``baselines``.

    A built-in selector needing no model always (so that ``report --selectors`` can choose it without
    a rerun); one that ``needs_model`` when ``chosen`` names it and there is a model; one registered by
    another package only when ``chosen`` names it (installing a package never changes or breaks a run
    that does not use it). A selector may not store a feature under a key another one stored: that
    would change the other's ranking (a ``ConfigError`` names both)."""
    out: dict[str, Any] = {}
    owner: dict[str, str] = {}
    extra = [n for n in chosen if n not in selector_names()]  # module:attribute ones
    for name in [*selector_names(), *extra]:
        if name not in BUILTIN and name not in chosen:
            continue
        selector = get_selector(name)
        if selector.needs_model and (given.model is None or name not in chosen):
            continue
        if name in BUILTIN:
            found = await selector.features(given)
        else:
            try:
                found = await selector.features(given)
            except Exception as exc:
                raise ConfigError(
                    f"selector {name!r} ({registry().get(name, 'given here')}): its features failed on"
                    f" {given.task.instance_id}: {type(exc).__name__}: {exc}"
                ) from exc
        for key in found:
            if key in owner and owner[key] != name:
                raise ConfigError(
                    f"selector {name!r} stores the feature {key!r}, already stored by"
                    f" {owner[key]!r}; a selector's features need keys of their own"
                )
            owner[key] = name
        out.update(found)
    return out


def prepare_selectors(names: Sequence[str], tasks: Sequence[Any]) -> None:
    """Report time, before any ranking: the selectors with a ``prepare(tasks)`` read every task first
    (the hybrid chooses its weight on the labelled ones)."""
    for name in names:
        prepare = getattr(get_selector(name), "prepare", None)
        if prepare is not None:
            prepare(tasks)


def handed_over(names: list[str]) -> dict[str, Any]:
    """The selectors among ``names`` handed over in this process (:func:`register_selector`), as they
    were given: what another process running the run's tasks (a Ray worker) must be handed too."""
    return {n: getattr(_GIVEN[n], "inner", _GIVEN[n]) for n in names if n in _GIVEN}
