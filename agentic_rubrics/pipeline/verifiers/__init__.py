"""Verifiers: what a run measures candidates with (``--verifiers rubric,tests``), and the one registry
that names them.

A verifier is an artifact written once per task into its own folder of the run folder
(``rubrics/<id>/``, ``tests/<id>/``, ``proxies/<id>/``) — by a writer (an explorer, or an agent in the
explorer's sandbox) or given (``--rubrics DIR``, ``--tests DIR`` …) — and a grader that turns
(artifact, candidate) into scores with their provenance (judged, executed, checked, or missing with a
reason). Its scores reach the report through the selectors it brings (``rubric``; ``tests`` and
``hybrid``; ``similarity``).

A new verifier is one module in this folder (or in a package of its own): its class (:class:`Verifier`:
``earlier`` and ``run``), its settings if it has any (a :class:`VerifierSettings` whose fields are the
configuration keys it adds), and its :class:`VerifierSpec` — in :data:`BUILTIN`, or from another
distribution under the entry point group ``agentic_rubrics.verifiers``
(``[project.entry-points."agentic_rubrics.verifiers"] mine = "my_pkg.mine:SPEC"``), or from a script
with :func:`register_verifier`; then the selectors that read its grades (``rank/selectors/``) and its
tests. :mod:`.run` runs a task's verifiers in the run's order; :mod:`.artifacts` holds what every
verifier does the same way (an earlier artifact read back, an agent in the explorer's sandbox).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ValidationError as CoreValidationError

from agentic_rubrics.exceptions import ConfigError
from agentic_rubrics.runfolder.recorded import VerifierEntry

if TYPE_CHECKING:
    from agentic_rubrics.rubric.checks_repo import RepoAnalyses
    from agentic_rubrics.runfolder.folder import RunFolder
    from agentic_rubrics.runfolder.records import ArtifactRecord
    from agentic_rubrics.runfolder.retry import RetryPlan
    from agentic_rubrics.types import Task, Verdict

ENTRY_POINTS = "agentic_rubrics.verifiers"
"""The entry point group other distributions register verifiers under (each a :class:`VerifierSpec`)."""


class VerifierSettings(BaseModel):
    """A verifier's settings: each field is a key of the run's configuration (``tests_dir``,
    ``tests``), marked with what it changes (:mod:`agentic_rubrics.setting_effects`), hashed only in runs that
    name the verifier."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def given(self) -> str | None:
        """The folder of given artifacts (``--tests DIR``): then no writer runs."""
        return None

    def prompts(self, config: Any) -> list[str]:
        """The prompts the verifier sends in a run of ``config`` (their hashes guard resuming)."""
        return []

    def hashed(self, data: dict[str, Any]) -> dict[str, Any]:
        """Its part of the configuration hash (``data``: its settings that change results), for
        settings whose default must hash as a run without them did."""
        return data


@dataclass(frozen=True)
class VerifierSpec:
    """One verifier as the registry knows it (nothing of it is imported until it is used)."""

    name: str
    """The name a run gives in ``verifiers``."""
    folder: str
    """Its folder in the run folder: ``<folder>/<safe id>/`` per task, ``status.json`` written last."""
    implementation: Any
    """``module:attribute`` (a class or an instance), or the object itself."""
    settings: Any = None
    """``module:Class`` or the class of its :class:`VerifierSettings` (``None``: it has none)."""
    record: str | None = None
    """The key of its record in a task's ``baselines`` (``None``: its grades are verdict rows)."""
    scores: str | None = None
    """The key of the candidates' scores (id -> value or ``None``) in that record."""
    artifact: str = "artifact"
    """What one of its artifacts is called in the report (``script``, ``proxy``)."""
    selectors: tuple[str, ...] = ()
    """The selectors it brings into a run's default comparison."""
    selector_needs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """A selector it brings -> the other verifiers that selector also reads (``hybrid``: the rubric)."""
    needs_judge_model: bool = False
    """It grades with the judge's model: a run naming it needs one."""
    given_option: str = ""
    """The command-line option that gives its artifacts instead of writing them (``--tests DIR``)."""
    explore_first: bool = False
    """Only the ``explore`` stage writes its artifact: ``judge`` alone refuses a task without one
    (unless its artifacts are given)."""
    trajectory: str = "{folder}/{id}/trajectory.json"
    """Where its writer's trajectory goes (``{folder}``, ``{id}``: the task's safe name)."""

    def entry(self) -> VerifierEntry:
        """What the run folder records of it (``config.json``'s ``verifiers``): what its readers need."""
        return VerifierEntry(
            folder=self.folder, record=self.record, scores=self.scores, artifact=self.artifact
        )


BUILTIN: dict[str, VerifierSpec] = {
    s.name: s
    for s in (
        VerifierSpec(
            name="rubric",
            folder="rubrics",
            implementation="agentic_rubrics.pipeline.verifiers.rubric:RubricVerifier",
            settings="agentic_rubrics.pipeline.verifiers.rubric:RubricSettings",
            artifact="rubric",
            given_option="--rubrics DIR",
            explore_first=True,
            trajectory="trajectories/{id}.json",
        ),
        VerifierSpec(
            name="tests",
            folder="tests",
            implementation="agentic_rubrics.pipeline.verifiers.tests:TestsVerifier",
            settings="agentic_rubrics.pipeline.verifiers.tests:TestsSettings",
            record="tests",
            scores="pass_rate",
            artifact="script",
            given_option="--tests DIR",
            selectors=("tests", "hybrid"),
            selector_needs={"hybrid": ("rubric",)},
        ),
        VerifierSpec(
            name="similarity",
            folder="proxies",
            implementation="agentic_rubrics.pipeline.verifiers.similarity:SimilarityVerifier",
            settings="agentic_rubrics.pipeline.verifiers.similarity:SimilaritySettings",
            record="proxy_similarity",
            scores="value",
            artifact="proxy",
            given_option="--proxies DIR",
            selectors=("similarity",),
            needs_judge_model=True,
        ),
    )
}
"""The verifiers that ship with the package, in the order a run runs them."""
DEFAULT_VERIFIERS = ("rubric",)
"""What a run measures with when it names nothing (a run folder from before the setting reads so:
its configuration hash is unchanged). The first is the primary verifier: when a run leaves it out, the
selectors of the first other verifier lead the comparison."""

_REGISTERED: dict[str, VerifierSpec] = {}
"""Verifiers handed over in this process (:func:`register_verifier`)."""
_LOADED: dict[str, Any] = {}


@lru_cache(maxsize=8)
def _entry_points(path: tuple[str, ...]) -> tuple[VerifierSpec, ...]:
    from importlib.metadata import entry_points

    found = []
    for ep in entry_points(group=ENTRY_POINTS):
        spec = ep.load()
        if not isinstance(spec, VerifierSpec) or spec.name != ep.name:
            raise ConfigError(
                f"entry point {ep.name} = {ep.value}: expected a VerifierSpec named so"
            )
        found.append(spec)
    return tuple(found)


def registry() -> dict[str, VerifierSpec]:
    """Every verifier a run may name, in running order: the built-in ones, those of entry points,
    then those registered in this process."""
    out = dict(BUILTIN)
    for spec in (*_entry_points(tuple(sys.path)), *_REGISTERED.values()):
        out.setdefault(spec.name, spec)
    return out


def register_verifier(spec: VerifierSpec) -> str:
    """Hand a verifier to this process's runs without packaging it (for the local executor; a Ray
    worker knows the built-in verifiers and those of entry points). Its settings' keys must be new
    configuration keys. Returns its name."""
    if spec.name in BUILTIN or spec.folder in {s.folder for s in BUILTIN.values()}:
        raise ConfigError(f"verifier {spec.name!r} (folder {spec.folder!r}) is built in")
    _REGISTERED[spec.name] = spec
    _LOADED.pop(spec.name, None)
    return spec.name


def check_verifiers(names: list[str]) -> None:
    """Refuse unknown, repeated or no verifier names (a ``ValueError`` naming the known ones)."""
    known = registry()
    unknown = [n for n in names if n not in known]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"verifiers must be distinct names among {', '.join(known)}; got {names}")


def get_spec(name: str) -> VerifierSpec:
    """The spec of the verifier ``name`` (a ``ValueError`` naming the known ones)."""
    spec = registry().get(name)
    if spec is None:
        check_verifiers([name])
    assert spec is not None
    return spec


def in_order(names: list[str]) -> list[VerifierSpec]:
    """The specs of ``names`` in running order (the registry's: the rubric first)."""
    chosen = set(names)
    return [s for s in registry().values() if s.name in chosen]


def _load(where: Any) -> Any:
    if not isinstance(where, str):
        return where
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module), attr)


def settings_class(spec: VerifierSpec) -> type[VerifierSettings] | None:
    """The class of a verifier's settings (imported on first use)."""
    found = _load(spec.settings) if spec.settings is not None else None
    if found is not None and not (isinstance(found, type) and issubclass(found, VerifierSettings)):
        raise ConfigError(f"verifier {spec.name!r}: its settings are no VerifierSettings class")
    return found


def settings_keys(taken: set[str]) -> dict[str, tuple[str, type[VerifierSettings]]]:
    """Each configuration key the verifiers' settings add -> (that verifier, its settings class).

    Raises:
        ConfigError: two verifiers claim one key, or one claims a key of ``taken`` (RunConfig's own).
    """
    out: dict[str, tuple[str, type[VerifierSettings]]] = {}
    for spec in registry().values():
        kind = settings_class(spec)
        for key in kind.model_fields if kind is not None else ():
            if key in out or key in taken:
                raise ConfigError(f"verifier {spec.name!r}: its setting {key!r} is taken")
            assert kind is not None
            out[key] = (spec.name, kind)
    return out


def located(exc: ValidationError) -> Exception:
    """A verifier's settings error as the configuration's own (its keys are top-level keys)."""
    errors: list[Any] = []
    for err in exc.errors(include_url=False):
        one = {"type": err["type"], "loc": tuple(err["loc"]), "input": err.get("input")}
        if "ctx" in err:
            one["ctx"] = err["ctx"]
        errors.append(one)
    try:
        return CoreValidationError.from_exception_data("RunConfig", errors)
    except (TypeError, ValueError, KeyError):  # an error type that cannot be rebuilt
        return ValueError(str(exc))


def get_verifier(name: str) -> Verifier:
    """The verifier registered as ``name`` (imported on first use)."""
    if name not in _LOADED:
        found = _load(get_spec(name).implementation)
        _LOADED[name] = found() if isinstance(found, type) else found
    verifier: Verifier = _LOADED[name]
    return verifier


def default_selectors(verifiers: list[str], base: list[str]) -> list[str]:
    """The selectors a run of ``verifiers`` compares when it names none: ``base`` (the primary
    verifier's and the no-model ones), each other verifier's own appended — or leading, for the first
    of them, when the primary verifier is not in the run."""
    chosen = list(base)
    primary = DEFAULT_VERIFIERS[0] in verifiers
    for n, spec in enumerate(s for s in in_order(verifiers) if s.name != DEFAULT_VERIFIERS[0]):
        own = [
            s
            for s in spec.selectors
            if set(spec.selector_needs.get(s, ())) <= set(verifiers) and s not in chosen
        ]
        chosen = [*own, *chosen] if n == 0 and not primary else [*chosen, *own]
    return chosen


@dataclass
class Graded:
    """What grading one task's candidates with one verifier gives (nothing written yet)."""

    baselines: dict[str, Any] = field(default_factory=dict)
    """Added to the task's progress row ``baselines``: what the verifier's selectors read."""
    files: dict[str, str] = field(default_factory=dict)
    """Run-folder-relative path -> text, written before the progress row (outcome rows ...)."""
    cost: dict[str, dict[str, int | float]] = field(default_factory=dict)
    """Added to the progress row's ``cost`` by phase (CPU-seconds of execution, not dollars)."""
    verdicts: list[Verdict] = field(default_factory=list)
    """``verdicts.jsonl`` rows (the rubric's item verdicts)."""
    progress: dict[str, Any] = field(default_factory=dict)
    """Fields of the task's progress row it fills (the rubric: its summary, the verdicts' digest)."""


@dataclass
class TaskScope:
    """One task while its verifiers run: what they share, and what its selectors read after them."""

    task: Task
    """The task's public view: no writer or grader sees labels, the gold patch or hidden tests."""
    ctx: Any
    """The run's :class:`~agentic_rubrics.pipeline.context.RunContext`."""
    plan: RetryPlan | None = None
    """A retry of transient failures: grade only what it names, keep the rest."""
    analyses: RepoAnalyses | None = None
    """The task's tree and the post-image analysis of each patch on it, once a verifier opened them
    (the selectors' features read them too)."""


class Verifier(Protocol):
    """A verifier's implementation (see the module's docstring)."""

    name: str

    def earlier(self, folder: RunFolder, instance_id: str) -> ArtifactRecord | None:
        """The artifact an earlier attempt left in the run folder (its status file written last);
        a :class:`~agentic_rubrics.exceptions.DataError` when it is damaged (it is written again)."""
        ...

    async def run(
        self, scope: TaskScope, earlier: ArtifactRecord | None, *, grade: bool
    ) -> tuple[ArtifactRecord, Graded | None]:
        """The task's artifact (``earlier``, given, or written and validated now) and, with
        ``grade``, every candidate graded against it. A failure of the artifact or of one candidate's
        grading is a reason in what it returns, never an exception (but for what stops the whole run:
        a model that refuses every call, a budget spent)."""
        ...
