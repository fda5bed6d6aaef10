"""pipekit: declare small build and data pipelines as Python functions and run them in order."""

from pipekit.errors import (
    CycleError,
    DuplicateStepError,
    PipekitError,
    StepFailed,
    UnknownStepError,
)
from pipekit.graph import DependencyGraph
from pipekit.pipeline import Pipeline, RunResult
from pipekit.step import Step

__version__ = "0.6.1"

__all__ = [
    "CycleError",
    "DependencyGraph",
    "DuplicateStepError",
    "Pipeline",
    "PipekitError",
    "RunResult",
    "Step",
    "StepFailed",
    "UnknownStepError",
]
