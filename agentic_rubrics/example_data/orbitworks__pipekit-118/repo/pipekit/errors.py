"""Exceptions raised by pipekit."""

from __future__ import annotations


class PipekitError(Exception):
    """Base class for every error pipekit raises on purpose."""


class DuplicateStepError(PipekitError):
    """A step name was registered twice in the same pipeline or graph."""

    def __init__(self, name: str) -> None:
        super().__init__(f"step {name!r} is already defined")
        self.name = name


class UnknownStepError(PipekitError):
    """A step requires (or a caller asked for) a step that does not exist."""

    def __init__(self, name: str, required_by: str | None = None) -> None:
        if required_by is None:
            message = f"unknown step {name!r}"
        else:
            message = f"step {required_by!r} requires unknown step {name!r}"
        super().__init__(message)
        self.name = name
        self.required_by = required_by


class CycleError(PipekitError):
    """The ``requires`` edges form a cycle, so no execution order exists."""

    def __init__(self, cycle: list[str]) -> None:
        super().__init__("dependency cycle: " + " -> ".join(cycle))
        self.cycle = cycle


class StepFailed(PipekitError):
    """A step raised while the pipeline was running with ``fail_fast=True``."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(f"step {name!r} failed: {error!r}")
        self.name = name
        self.error = error
