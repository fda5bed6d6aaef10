"""The configuration of a run: every component's config in one object, hashed to guard resuming."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from agentic_rubrics.datasets.repos_config import RepoConfig
from agentic_rubrics.exceptions import ConfigError
from agentic_rubrics.explore import ExplorerConfig, StaticExplorerConfig
from agentic_rubrics.judge.judges import JudgeConfig
from agentic_rubrics.pipeline.executors import ExecutorConfig, LocalExecutorConfig, executor_section
from agentic_rubrics.pipeline.verifiers import (
    DEFAULT_VERIFIERS,
    VerifierSettings,
    check_verifiers,
    default_selectors,
    in_order,
    located,
    registry,
    settings_class,
    settings_keys,
)
from agentic_rubrics.rank.rerank import BASE_SELECTORS, MODEL_SELECTORS
from agentic_rubrics.rank.scoring import DecisionPolicy
from agentic_rubrics.rank.selectors import check_names, get_selector, register_selector
from agentic_rubrics.setting_effects import REPORT, SPEED, Effect, Kind, kind_at, results_part

_CLI_RESULTS = Effect("results", cli=True)
_CLI_SPEED = Effect("speed", cli=True)
_CLI_REPORT = Effect("report", cli=True)
S = TypeVar("S", bound=VerifierSettings)


def verifier_sections() -> dict[str, tuple[str, type[VerifierSettings]]]:
    """Each configuration key a verifier's settings add -> (that verifier, its settings class)."""
    return settings_keys(set(RunConfig.model_fields))


def setting_fields() -> dict[str, FieldInfo]:
    """Every top-level setting a configuration takes, by key: RunConfig's own, then those the
    verifiers' settings add."""
    own = {k: v for k, v in RunConfig.model_fields.items() if k != "verifier_settings"}
    return {**own, **{k: kind.model_fields[k] for k, (_, kind) in verifier_sections().items()}}


def setting_kind(parts: list[str]) -> Kind | None:
    """What the setting at ``parts`` changes (``["tests", "reruns"]``), verifiers' settings included;
    ``None``: no such setting."""
    section = verifier_sections().get(parts[0]) if parts else None
    return kind_at(section[1] if section else RunConfig, parts)


class RunConfig(BaseModel):
    """The whole configuration of a run; its hash guards resuming.

    Each field declares what it changes (:mod:`agentic_rubrics.setting_effects`): ``results`` is hashed;
    ``report`` settings are applied by ``report`` to the verdicts on disk without a rerun (except what
    they change while judging: see :meth:`hashed`); ``speed`` settings never change a result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    explorer: Annotated[ExplorerConfig, _CLI_RESULTS] = Field(default_factory=StaticExplorerConfig)
    """How rubrics are written."""
    judge: Annotated[JudgeConfig, _CLI_RESULTS] = Field(default_factory=JudgeConfig)
    """How candidates are judged."""
    policy: Annotated[DecisionPolicy, REPORT] = Field(default_factory=DecisionPolicy)
    """Thresholds for decisions."""
    selectors: Annotated[list[str], _CLI_REPORT] = Field(
        default_factory=lambda: list(BASE_SELECTORS)
    )
    """Selectors compared in the report; the first one writes selections.jsonl. Without a model
    ``offline`` leads; with a judge model, ``rubric`` leads and ``patch_classifier`` joins."""
    verifiers: Annotated[list[str], _CLI_RESULTS] = Field(
        default_factory=lambda: list(DEFAULT_VERIFIERS)
    )
    """What candidates are measured with (:mod:`agentic_rubrics.pipeline.verifiers`): ``rubric``
    (rubrics.yaml, judged), ``tests`` (a test script, executed), ``similarity`` (a proxy patch); each
    writes its artifact once per task."""
    verifier_settings: Annotated[dict[str, Any], Effect("results")] = Field(
        default_factory=dict, exclude=True, repr=False
    )
    """Each registered verifier's settings (its :class:`VerifierSettings`), by verifier: given, read
    and written as the top-level keys they define (``rubrics_dir``; ``tests_dir``, ``tests``;
    ``proxies_dir``, ``similarity``), hashed only in runs that name the verifier."""
    consensus_probes: Annotated[bool, _CLI_RESULTS] = False
    """``behaviour_consensus`` also runs the issue's and the changed definitions' examples on each
    candidate's tree (:mod:`agentic_rubrics.pipeline.probes`), in bubblewrap with the tests
    verifier's environment; hashed only when set, with that environment (``probe_environment``)."""
    repos: Annotated[RepoConfig, _CLI_SPEED] = Field(default_factory=RepoConfig)
    """Where a task without ``repo_path`` gets its repository at ``base_commit`` (fetched, cached)."""
    seed: Annotated[int, _CLI_REPORT] = Field(default=0, ge=0)
    """Seed of the tie-break, of the item shuffles between repeats, and of the bootstrap."""
    max_k: Annotated[int, REPORT] = Field(default=16, ge=1)
    """Largest K reported for Best@K."""
    bootstrap_resamples: Annotated[int, REPORT] = Field(default=1000, ge=0)
    """Resamples of the 95% intervals (0 turns them off)."""
    plots: Annotated[bool, SPEED] = True
    """Draw the report's plots (PNG files in plots/, with matplotlib). ``false`` draws none and leaves
    matplotlib unimported; every number of the report is the same (does not change results)."""
    max_cost_usd: Annotated[float | None, _CLI_SPEED] = Field(default=None, ge=0)
    """Stop starting model calls once this much is spent; what is left is ``missing: budget``."""
    task_concurrency: Annotated[int, SPEED] = Field(default=4, ge=1)
    """Tasks explored and judged at the same time (does not change results)."""
    trajectories: Annotated[bool, _CLI_SPEED] = True
    """Write exploration trajectories to trajectories/ (does not change results)."""
    max_sandboxes: Annotated[int, SPEED] = Field(default=4, ge=1)
    """Sandboxes open at the same time across the whole run (does not change results)."""
    executor: Annotated[ExecutorConfig, _CLI_SPEED] = Field(default_factory=LocalExecutorConfig)
    """Where tasks run: ``local`` (this process) or ``ray`` (each task a Ray task, ``agentic-rubrics[ray]``;
    ``address``, ``workers``). ``executor: ray`` and top-level ``ray_address``/``workers`` still read."""

    @model_validator(mode="before")
    @classmethod
    def _executor_section(cls, data: Any) -> Any:
        return executor_section(data) if isinstance(data, dict) else data

    @model_validator(mode="before")
    @classmethod
    def _verifier_sections(cls, data: Any) -> Any:
        """Each verifier's keys gathered into its settings (a bad one named by its key's path)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        given = data.pop("verifier_settings", None) or {}
        by_verifier: dict[str, dict[str, Any]] = {}
        for key, (name, _) in verifier_sections().items():
            if key in data:
                by_verifier.setdefault(name, {})[key] = data.pop(key)
        out: dict[str, VerifierSettings] = {}
        for spec in registry().values():
            kind = settings_class(spec)
            if kind is None:
                continue
            earlier = given.get(spec.name)
            if isinstance(earlier, BaseModel):
                earlier = earlier.model_dump()
            try:
                out[spec.name] = kind.model_validate(
                    {**(earlier or {}), **by_verifier.get(spec.name, {})}
                )
            except ValidationError as exc:
                raise located(exc) from None
        return {**data, "verifier_settings": out}

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        """Every verifier's settings written as the top-level keys they define."""
        data = handler(self)
        if isinstance(data, dict):
            for section in self.verifier_settings.values():
                data.update(section.model_dump(mode=info.mode, by_alias=info.by_alias))
        return data

    def section(self, name: str, kind: type[S]) -> S:
        """The settings of verifier ``name`` (of class ``kind``)."""
        found = self.verifier_settings.get(name)
        if not isinstance(found, kind):
            raise ConfigError(f"verifier {name!r} has no settings of type {kind.__name__}")
        return found

    def setting(self, path: str) -> Any:
        """The value at a dotted setting path (``tests.reruns``), verifiers' settings included."""
        parts = path.split(".")
        owner = verifier_sections().get(parts[0])
        value: Any = self.verifier_settings.get(owner[0]) if owner else self
        for part in parts:
            value = getattr(value, part, None)
        return value

    @field_validator("selectors", mode="before")
    @classmethod
    def _given_selectors(cls, value: Any) -> Any:
        """A selector object or function given in Python is registered here, under its name."""
        if isinstance(value, list | tuple):
            return [v if isinstance(v, str) else register_selector(v) for v in value]
        return value

    @model_validator(mode="before")
    @classmethod
    def _default_selectors(cls, data: Any) -> Any:
        if isinstance(data, dict) and "selectors" not in data:
            judge = data.get("judge") or {}
            kind = judge.get("kind") if isinstance(judge, dict) else getattr(judge, "kind", None)
            base = list(MODEL_SELECTORS if kind == "llm" else BASE_SELECTORS)
            verifiers = data.get("verifiers")
            chosen = default_selectors(verifiers, base) if isinstance(verifiers, list) else base
            if kind == "llm" or chosen != list(BASE_SELECTORS):
                return {**data, "selectors": chosen}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        check_names(self.selectors)
        check_verifiers(self.verifiers)
        for spec in in_order(self.verifiers):
            if spec.needs_judge_model and self.judge.model is None:
                raise ValueError(
                    f"the {spec.name} verifier needs a judge model (--model or --judge-model)"
                )
        if self.judge.kind == "llm" and self.judge.model is None:
            raise ValueError("judge.kind 'llm' needs judge.model (or --judge-model / --model)")
        for name in self.model_selectors():
            if self.judge.model is None:
                raise ValueError(f"the {name} selector needs a judge model")
        return self

    def model_selectors(self) -> list[str]:
        """The selectors named here whose features call the judge model."""
        return [s for s in self.selectors if get_selector(s).needs_model]

    def prompt_hashes(self) -> dict[str, str]:
        """The hash of every prompt template this configuration sends to a model."""
        from agentic_rubrics.prompts import load_prompt

        names = list(self.explorer.prompts)
        if self.judge.kind == "llm":
            names.append("judge")
        names += [p for s in self.model_selectors() for p in get_selector(s).prompts]
        for spec in in_order(self.verifiers):
            section = self.verifier_settings.get(spec.name)
            names += section.prompts(self) if section is not None else []
        return {name: load_prompt(name).hash for name in names}

    def hashed(self) -> dict[str, Any]:
        """The settings that can change a finished task's result (what :meth:`content_hash` hashes):
        the model and how it is asked (prompts included), not how it is reached, nor what the report
        computes from the verdicts."""
        # the fields marked ``results`` (agentic_rubrics.setting_effects), then what a speed or report
        # setting changes while judging: where a repository comes from does not change a result (its
        # commit is verified), whether repositories are fetched at all does; the selectors that call
        # the model; the seed when it orders the items of repeated judgements
        data = self.results_settings()
        if self.verifiers == list(DEFAULT_VERIFIERS):
            data.pop("verifiers")  # a run of the rubric alone hashes as before it was a setting
        # a run without the examples hashes as before they were a setting; with them, the
        # environment they run in (the tests verifier's) is part of the result
        data.pop("consensus_probes", None)
        if self.consensus_probes and (tests := self.verifier_settings.get("tests")) is not None:
            data["consensus_probes"] = tests.probe_environment()
        data["repos"] = {"fetch": self.repos.url_template is not None}
        if self.repos.approximate_trees is not None:
            data["repos"]["approximate_trees"] = True  # another tree than the base commit's
        data["model_selectors"] = self.model_selectors()
        if self.judge.kind == "llm" and self.judge.repeats > 1:
            data["seed"] = self.seed  # it orders the items of repeated judgements
        data["prompts"] = self.prompt_hashes()
        return data

    def results_settings(self) -> dict[str, Any]:
        """The settings marked ``results`` (:mod:`agentic_rubrics.setting_effects`), in sections too, a
        verifier's only where the run names it (as it hashes them)."""
        data = results_part(self, self.model_dump(mode="json"))
        for spec in in_order(self.verifiers):
            section = self.verifier_settings.get(spec.name)
            if section is not None:
                data.update(section.hashed(results_part(section, section.model_dump(mode="json"))))
        return data

    def content_hash(self) -> str:
        """Hash of every setting that can change a finished task's result."""
        blob = json.dumps(self.hashed(), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def config_differences(recorded: dict[str, Any], wanted: dict[str, Any]) -> dict[str, list[str]]:
    """Settings that differ between two recorded configurations, as ``key: old -> new`` lines, grouped:
    ``results`` (hashed: the folder cannot be resumed), ``report`` (report-time settings: ``report``
    applies them without a rerun) and ``transport`` (speed, spending, how a model is reached)."""
    old, new = _flat(recorded), _flat(wanted)
    out: dict[str, list[str]] = {"results": [], "report": [], "transport": []}
    for key in sorted(set(old) | set(new)):
        if key == "tasks_file" or old.get(key) == new.get(key):
            continue
        parts = key.split(".")
        judge = wanted.get("judge") or {}
        if key == "seed" and judge.get("kind") == "llm" and (judge.get("repeats") or 1) > 1:
            group = "results"  # it orders the items of repeated judgements
        elif parts[0] == "repos":
            fetch_changed = (old.get("repos.url_template") is None) != (
                new.get("repos.url_template") is None
            )
            results = (key == "repos.url_template" and fetch_changed) or (
                key == "repos.approximate_trees"
                and (old.get(key) is None) != (new.get(key) is None)
            )
            group = "results" if results else "transport"
        else:
            kind = setting_kind(parts)
            group = {"report": "report", "speed": "transport"}.get(kind or "results", "results")
        out[group].append(f"{key}: {old.get(key, '(unset)')!r} -> {new.get(key, '(unset)')!r}")
    return out


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        elif isinstance(value, dict):
            out[key] = _merge({}, value)
        else:
            out[key] = value
    return out


def _setting_path(data: Any, loc: tuple[int | str, ...]) -> list[str]:
    """An error's location as the settings a user writes: the tag pydantic adds for the member of a
    tagged union (``explorer.agent.model``: the ``agent`` explorer's ``model``) is left out."""
    out: list[str] = []
    for part in loc:
        if (
            isinstance(data, dict)
            and part not in data
            and part
            in (
                data.get("kind", "static"),
                data.get("type"),
            )
        ):
            continue  # the union member's tag, not a setting
        out.append(str(part))
        data = data.get(part) if isinstance(data, dict) else None
    return out


def load_config(
    path: Path | str | None = None, overrides: dict[str, Any] | None = None
) -> RunConfig:
    """A RunConfig from a YAML file (optional) with overrides (nested dicts; ``None`` = unset) on top.

    Raises:
        ConfigError: the file is unreadable or a field is unknown or invalid (named with the file).
    """
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        except RecursionError:  # 100,000 nested lists: YAML (or JSON) nested too deeply
            raise ConfigError(f"{path}: nested too deeply") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping of settings")
        data = loaded
    data = _merge(executor_section(data), executor_section(overrides or {}))
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(_setting_path(data, err["loc"])) or "configuration"
        raise ConfigError(f"{path or 'configuration'}: {where}: {err['msg']}") from exc


def resume_refusal(root: Path, recorded: dict[str, Any], wanted: dict[str, Any]) -> str:
    """Why a run folder cannot be resumed with ``wanted``: the settings that differ, and which of them
    the ``report`` command can take without a rerun."""
    diff = config_differences(recorded, wanted)
    lines = [f"{root}: this run folder was started with another configuration."]
    if diff["results"]:
        lines.append("Settings that change results differ:")
        lines += [f"  {line}" for line in diff["results"]]
    else:
        lines.append("(Its configuration hash was made another way, e.g. by another version.)")
    lines.append("Use another --out folder, or --restart to discard its results.")
    if diff["report"]:
        lines.append(
            "Also different, and applied without a rerun by `agentic-rubrics report --out"
            f" {root}` (--seed, --selectors; the others from the configuration):"
        )
        lines += [f"  {line}" for line in diff["report"]]
    return "\n".join(lines)
