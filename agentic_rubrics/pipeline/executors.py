"""Where a run's tasks run: one configuration per executor, chosen by ``kind`` (``local`` when unset).

Each configuration names its executor class by import path (``runs_on``), which the driver opens
(:func:`~agentic_rubrics.pipeline.driver.open_executor`): resolved when the run starts, so Ray is
imported only by a run that uses it, and no import runs from here back to the executors, which take the
whole :class:`~agentic_rubrics.pipeline.config.RunConfig`. A new executor is its class (the ``Executor``
protocol of :mod:`~agentic_rubrics.pipeline.driver`) and its configuration here, added to the union.

Configuration files and options written before these configurations had sections still work:
``executor: ray`` names the kind, and top-level ``ray_address`` and ``workers`` go into the section
(:func:`executor_section`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag


class _Executor(BaseModel):
    """What every executor's configuration holds (the same fields for every kind)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    runs_on: ClassVar[str]
    """The executor class, as ``module:Class`` (constructed with the run's configuration, folder, API
    key and the dollars spent before)."""

    kind: str
    """``local``: tasks run in this process; ``ray``: each task is a Ray task (``agentic-rubrics[ray]``)."""
    address: str | None = None
    """The Ray cluster to join (``None``: start a local one)."""
    workers: int | None = Field(default=None, ge=1)
    """Ray tasks in flight at once (``None``: the cluster's CPUs)."""


class LocalExecutorConfig(_Executor):
    """Tasks in this process, ``task_concurrency`` at a time."""

    runs_on: ClassVar[str] = "agentic_rubrics.pipeline.driver:LocalExecutor"
    kind: Literal["local"] = "local"
    """Discriminator."""


class RayExecutorConfig(_Executor):
    """Each task a Ray task, ``workers`` at a time."""

    runs_on: ClassVar[str] = "agentic_rubrics.pipeline.executor_ray:RayExecutor"
    kind: Literal["ray"] = "ray"
    """Discriminator."""


def _kind(value: Any) -> str | None:
    if isinstance(value, dict):
        return str(value.get("kind", "local"))
    return getattr(value, "kind", None)


ExecutorConfig = Annotated[
    Annotated[LocalExecutorConfig, Tag("local")] | Annotated[RayExecutorConfig, Tag("ray")],
    Discriminator(
        _kind,
        custom_error_type="executor_kind",
        custom_error_message="kind should be 'local' or 'ray'",
    ),
]
"""Where tasks run; chosen by ``kind`` (``local`` when unset)."""

_FLAT = {"ray_address": "address", "workers": "workers"}
"""Top-level settings of the flat form, and their place in the section."""


def executor_section(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (RunConfig's settings) with the executor as a section: ``executor: ray`` becomes
    ``executor: {kind: ray}``; top-level ``ray_address`` and ``workers`` (unset when ``None``) move in."""
    if not any(key in data for key in ("executor", *_FLAT)):
        return data
    out = dict(data)
    section = out.pop("executor", None)
    section = {"kind": section} if isinstance(section, str) else dict(section or {})
    for flat, inner in _FLAT.items():
        value = out.pop(flat, None)
        if value is not None:
            section[inner] = value
    out["executor"] = section
    return out
