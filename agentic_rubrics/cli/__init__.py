"""The command line (``agentic-rubrics``): the typer app (app.py), the options shared by run, explore,
judge and demo (options.py), exit codes (exit.py) and progress bars (progress.py).

``app`` and ``main`` are handed on lazily: ``agentic_rubrics.cli:main`` stays a valid entry point.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'agentic_rubrics.cli' has no attribute {name!r}")
    return getattr(importlib.import_module("agentic_rubrics.cli.app"), name)


if TYPE_CHECKING:
    from agentic_rubrics.cli.app import app, main
