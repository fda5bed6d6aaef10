"""The options shared by ``run``, ``explore``, ``judge`` and ``demo``, each declared once.

Each option is one field of :class:`RunOptions`: its type, default and ``typer.Option`` (flag, help), and,
for the options that set run settings, a :class:`Sets` naming the :class:`~agentic_rubrics.pipeline.config.RunConfig`
settings it sets. The commands' signatures are made from these fields (:func:`with_run_options`), and the
settings from their values (:meth:`RunOptions.overrides`); a test holds the ``Sets`` declarations to what
``overrides`` really sets and to the fields RunConfig marks as set from the command line.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from agentic_rubrics.cli.option_sets import Sets, as_text, names, off_only, on_only, sandbox_type
from agentic_rubrics.cli.options_models import ModelOptions
from agentic_rubrics.cli.options_verifiers import VerifierOptions


@dataclass
class RunOptions(ModelOptions, VerifierOptions):
    """The options shared by run, explore, judge and demo, each declared once: the run's own here,
    the verifiers' (:class:`VerifierOptions`) and the models' (:class:`ModelOptions`) beside."""

    config: Annotated[Path | None, typer.Option("--config", help="YAML file of run settings.")] = (
        None
    )
    explorer: Annotated[
        str | None,
        typer.Option(
            "--explorer",
            help="static (rules, no model), agent (a model in a sandbox) or issue-only.",
        ),
        Sets("explorer.kind", "explorer.model"),
    ] = None
    selectors: Annotated[
        str | None,
        typer.Option(
            "--selectors", help="Comma-separated selectors; the first writes selections.jsonl."
        ),
        Sets("selectors", convert=names),
    ] = None
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Tie-break, shuffle and bootstrap seed."),
        Sets("seed"),
    ] = None
    restart: Annotated[
        bool, typer.Option("--restart", help="Discard the folder's results instead of resuming.")
    ] = False
    redo_changed: Annotated[
        bool,
        typer.Option(
            "--redo-changed",
            help="Redo the tasks whose patches, candidates or issue text changed since they were"
            " scored (only those).",
        ),
    ] = False
    retry_missing: Annotated[
        bool,
        typer.Option(
            "--retry-missing/--no-retry-missing",
            help="On resume, retry the verdicts and rubrics that failed transiently (provider"
            " errors, budget, sandbox, no repository), keeping every other result.",
        ),
    ] = True
    trajectories: Annotated[
        bool,
        typer.Option("--trajectories/--no-trajectories", help="Write exploration trajectories."),
        Sets("trajectories", convert=off_only),
    ] = True
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the report.")] = False
    consensus_probes: Annotated[
        bool,
        typer.Option(
            "--consensus-probes",
            help="behaviour_consensus also runs the issue's and the changed functions' examples on"
            " each candidate's tree (bubblewrap, the tests' environment: --test-python,"
            " --test-env-spec).",
        ),
        Sets("consensus_probes", convert=on_only),
    ] = False
    sandbox: Annotated[
        str | None,
        typer.Option(
            "--sandbox",
            help="auto, bubblewrap, local-copy, swerex-local, swerex-docker or swerex-modal"
            " (swerex-remote: through --config).",
        ),
        Sets("explorer.sandbox", convert=sandbox_type),
    ] = None
    unsafe_local_sandbox: Annotated[
        bool,
        typer.Option("--unsafe-local-sandbox", help="Let a model's commands run unisolated here."),
        Sets("explorer.allow_unisolated", convert=on_only),
    ] = False
    max_turns: Annotated[
        int | None,
        typer.Option("--max-turns", help="The agent explorer's turn budget."),
        Sets("explorer.max_turns"),
    ] = None
    executor: Annotated[
        str | None,
        typer.Option("--executor", help="local (this process) or ray (needs [ray])."),
        Sets("executor.kind"),
    ] = None
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", help="Ray cluster to join (default: a local one)."),
        Sets("executor.address"),
    ] = None
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="Ray tasks in flight at once."),
        Sets("executor.workers"),
    ] = None
    repo_url: Annotated[
        str | None,
        typer.Option(
            "--repo-url",
            help="Where a task's repository is fetched from: a URL with {repo}, {owner}, {name}"
            " (default https://github.com/{repo}.git); none: fetch nothing.",
        ),
        Sets("repos.url_template"),
    ] = None
    repo_cache: Annotated[
        Path | None,
        typer.Option("--repo-cache", help="Folder of fetched repositories (default: user cache)."),
        Sets("repos.cache_dir", convert=as_text),
    ] = None

    def overrides(self) -> dict[str, Any]:
        """Nested settings for :func:`agentic_rubrics.pipeline.config.load_config` (``None`` = unset)."""
        out: dict[str, Any] = {}
        for name, sets in option_settings().items():
            value = getattr(self, name)
            if sets.composed:
                continue
            value = sets.convert(value) if sets.convert else value
            if value is not None:
                _put(out, sets.paths[0], value)

        def llm(model: str | None) -> dict[str, Any] | None:
            if model is None:
                return None
            return {
                "model": model,
                "api_base": self.api_base,
                "concurrency": self.llm_concurrency,
                "processes": self.llm_processes,
                "timeout": self.timeout,
            }

        judge_model = self.judge_model or self.model
        if (self.explorer or "static") != "static" or self.explorer_model:
            _put(out, "explorer.model", llm(self.explorer_model or self.model))
        _put(out, "judge.kind", "llm" if judge_model else None)
        _put(out, "judge.model", llm(judge_model))
        return out


def _put(out: dict[str, Any], path: str, value: Any) -> None:
    if value is None:
        return
    *sections, last = path.split(".")
    for section in sections:
        out = out.setdefault(section, {})
    out[last] = value


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(RunOptions, include_extras=True)


def option_settings() -> dict[str, Sets]:
    """Each option that sets run settings, by field name, with what it sets."""
    out: dict[str, Sets] = {}
    for name, hint in _hints().items():
        found = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Sets)]
        if found:
            out[name] = found[0]
    return out


STAGE_OF: dict[str, str] = {
    "explorer": "explore",
    "explorer_model": "explore",
    "sandbox": "explore",
    "unsafe_local_sandbox": "explore",
    "max_turns": "explore",
    "trajectories": "explore",
    "judge_model": "judge",
    "consensus_probes": "judge",
    "repeats": "judge",
    "items_per_call": "judge",
}
"""The options only one stage uses (the others: every stage). An option another stage uses is still
offered: it sets the run folder's configuration, which every stage run on that folder must match."""

_UNUSED = {
    "explore": "Not used by explore: recorded in the run folder's configuration, which `judge` on"
    " this folder must be given the same. ",
    "judge": "Not used by judge (the rubrics are written): recorded in the run folder's"
    " configuration, which must be what `explore` was given. ",
}


def real_default(name: str) -> str | None:
    """What an option that leaves its setting unset gets: the setting's default in RunConfig (the
    first path it sets), as help shows it; ``None`` when there is none to show."""
    from agentic_rubrics.pipeline.config import RunConfig

    sets = option_settings().get(name)
    if sets is None or sets.composed:
        return None
    value: Any = RunConfig().setting(sets.paths[0])
    if value is None or isinstance(value, bool):
        return None
    if name == "selectors":
        from agentic_rubrics.rank.rerank import BASE_SELECTORS, MODEL_SELECTORS

        return f"{','.join(BASE_SELECTORS)}; with a model {','.join(MODEL_SELECTORS)}"
    kind = getattr(value, "type", None) or getattr(value, "kind", None)
    return str(kind if kind is not None else value)


def with_run_options(
    target: Any, leading: list[str], command: str = "run", only: tuple[str, ...] | None = None
) -> Any:
    """Give ``target`` its leading parameters, then one per option (typer reads the signature); it
    takes the options as ``**kwargs`` for ``RunOptions(**kwargs)``. For ``explore`` and ``judge``,
    an option the other stage uses says so; every option with a setting shows its real default.
    ``only``: just these options (the others keep their defaults)."""
    own_hints = typing.get_type_hints(target, include_extras=True)
    own = inspect.signature(target).parameters
    params = [own[name].replace(annotation=own_hints[name]) for name in leading]
    for field in dataclasses.fields(RunOptions):
        if only is not None and field.name not in only:
            continue
        hint = _hints()[field.name]
        option = next(m for m in hint.__metadata__ if isinstance(m, typer.models.ParameterInfo))
        option = copy.copy(option)
        stage = STAGE_OF.get(field.name)
        if command in _UNUSED and stage is not None and stage != command:
            option.help = _UNUSED[command] + (option.help or "")
        default = real_default(field.name)
        if default is not None and field.default is None:
            option.show_default = default
        params.append(
            inspect.Parameter(
                field.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=field.default,
                annotation=Annotated[hint.__origin__, option],
            )
        )
    target.__signature__ = inspect.Signature(params)
    target.__annotations__ = {p.name: p.annotation for p in params}
    return target
