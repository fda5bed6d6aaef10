"""Sandboxes: where exploration commands run. Each implements the ``Sandbox`` protocol."""

from __future__ import annotations

from agentic_rubrics.sandbox.local import LocalCopySandbox

__all__ = ["LocalCopySandbox"]
