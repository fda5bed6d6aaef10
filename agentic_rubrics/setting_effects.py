"""What a run setting changes, declared on its field: ``workers: Annotated[int | None, SPEED]``.

- ``results``: a finished task's result may differ, so the setting is hashed and resuming a run folder
  with another value is refused;
- ``speed``: how fast, how far or by which road a run goes (concurrency, budget, executor, how a model
  is reached): not hashed;
- ``report``: applied by the report to the verdicts on disk (``report --seed/--selectors``): not hashed.

A field without a marker takes its section's effect (``judge.repeats`` is ``results`` because ``judge``
is; ``judge.model.timeout`` is ``speed`` because :class:`~agentic_rubrics.llm.door.LLMConfig` marks it).
:class:`~agentic_rubrics.pipeline.config.RunConfig` marks every one of its own fields and says whether a
command-line option sets it (``cli``); a test holds both declarations to the code that reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel
from pydantic.fields import FieldInfo

Kind = Literal["results", "speed", "report"]


@dataclass(frozen=True)
class Effect:
    """What a setting changes (an ``Annotated`` marker on a config field)."""

    kind: Kind
    """``results`` (hashed), ``speed`` or ``report`` (not hashed)."""
    cli: bool = False
    """Whether an option of ``run``/``explore``/``judge``/``demo`` sets it (or, for a section, some
    of its fields); declared on RunConfig's own fields, checked against ``cli_options``."""


SPEED = Effect("speed")
REPORT = Effect("report")


def effect_of(info: FieldInfo) -> Effect | None:
    """The marker a field declares (``None``: it takes its section's)."""
    return next((m for m in info.metadata if isinstance(m, Effect)), None)


def model_classes(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's annotation can hold (``X``, ``X | None``, a tagged union)."""
    if isinstance(annotation, type):
        return [annotation] if issubclass(annotation, BaseModel) else []
    return [model for arg in get_args(annotation) for model in model_classes(arg)]


def results_part(
    model: BaseModel, dumped: dict[str, Any], kind: Kind = "results"
) -> dict[str, Any]:
    """``dumped`` (``model.model_dump(mode="json")``) keeping only the fields whose effect is
    ``results``, in sections too."""
    out: dict[str, Any] = {}
    for name, info in type(model).model_fields.items():
        effect = effect_of(info)
        own = effect.kind if effect else kind
        if own != "results" or name not in dumped:
            continue
        value = getattr(model, name)
        inner = dumped[name]
        if isinstance(value, BaseModel) and isinstance(inner, dict):
            out[name] = results_part(value, inner, own)
        else:
            out[name] = inner
    return out


def kind_at(root: type[BaseModel], path: Sequence[str]) -> Kind | None:
    """The effect of the setting at ``path`` (``["judge", "model", "timeout"]``); ``None``: no such
    setting. Below a leaf (a key of ``extra_params``) the leaf's effect holds."""
    kind: Kind = "results"
    classes: list[type[BaseModel]] = [root]
    for part in path:
        if not classes:
            return kind
        info = next((c.model_fields[part] for c in classes if part in c.model_fields), None)
        if info is None:
            return None
        effect = effect_of(info)
        kind = effect.kind if effect else kind
        classes = model_classes(info.annotation)
    return kind


def leaf_paths(root: type[BaseModel], prefix: str = "") -> list[str]:
    """Every setting's dotted path under ``root`` (each member of a union of sections walked)."""
    out: list[str] = []
    for name, info in root.model_fields.items():
        models = model_classes(info.annotation)
        if not models:
            out.append(prefix + name)
        for model in models:
            out += [p for p in leaf_paths(model, f"{prefix}{name}.") if p not in out]
    return out
