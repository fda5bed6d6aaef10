"""The pipeline: the run's configuration and context, one task's stages, the driver and its executors
(local, Ray), and ``run`` (runner.py) tying explore, judge and report to one run folder.

``run``, ``run_async`` and ``write_report`` are handed on lazily, so ``from agentic_rubrics.pipeline
import run`` keeps working and importing this package loads nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "run": "agentic_rubrics.pipeline.runner",
    "run_async": "agentic_rubrics.pipeline.runner",
    "write_report": "agentic_rubrics.pipeline.runner",
}

__all__ = ["run", "run_async", "write_report"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentic_rubrics.pipeline' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


if TYPE_CHECKING:
    from agentic_rubrics.pipeline.runner import run, run_async, write_report
