"""What an option of :class:`~agentic_rubrics.cli.options.RunOptions` sets (:class:`Sets`), and the
conversions from an option's value to a setting's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Sets:
    """The RunConfig settings an option sets (dotted paths; a section's path covers its fields)."""

    paths: tuple[str, ...]
    """``judge.repeats``, ``judge.model`` …: the value goes to the first (unless ``composed``); the
    others change with it in :meth:`RunOptions.overrides` (``--explorer agent`` gives the explorer
    ``--model``)."""
    convert: Callable[[Any], Any] | None = None
    """The option's value to the setting's (``None`` from it: leave the setting unset)."""
    composed: bool = False
    """Set together with other options in :meth:`RunOptions.overrides` (the model options)."""

    def __init__(
        self, *paths: str, convert: Callable[[Any], Any] | None = None, composed: bool = False
    ) -> None:
        object.__setattr__(self, "paths", paths)
        object.__setattr__(self, "convert", convert)
        object.__setattr__(self, "composed", composed)


def as_text(value: Any) -> str | None:
    return str(value) if value else None


def env_specs(value: Path | None) -> dict[str, Any] | None:
    from agentic_rubrics.sandbox.testenv import load_specs

    return {k: v.model_dump() for k, v in load_specs(value).items()} if value else None


def test_docker(value: str | None) -> Any:
    """``--test-docker``: ``swebench`` (SWE-bench's published instance images, conda's ``testbed``),
    ``local`` (the images ``build-env`` made here), or a JSON file with a whole swerex-docker
    configuration (validated here: its ``null``s are settings, not "unset")."""
    from pydantic import ValidationError

    from agentic_rubrics.exceptions import ConfigError
    from agentic_rubrics.runfolder.files import read_json
    from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig

    if value is None or value in ("swebench", "local"):
        return value
    if not value.endswith(".json"):
        raise ConfigError(f"--test-docker {value!r}: swebench, local or a .json file")
    data = read_json(Path(value), ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"--test-docker {value}: a JSON object of swerex-docker settings")
    try:
        return SweRexDockerConfig.model_validate({**data, "type": "swerex-docker"})
    except ValidationError as exc:
        raise ConfigError(f"--test-docker {value}: {exc}") from None


def names(value: str | None) -> list[str] | None:
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


def off_only(value: bool) -> bool | None:
    return None if value else False


def on_only(value: bool) -> bool | None:
    return True if value else None


def sandbox_type(value: str | None) -> dict[str, str] | None:
    return {"type": value} if value else None


def both_models(name: str) -> tuple[str, str]:
    return (f"judge.model.{name}", f"explorer.model.{name}")
