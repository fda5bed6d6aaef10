"""The marks of a test module that needs a real docker daemon (and debootstrap for its base images):
skipped where there is none, and a failure instead under AGENTIC_RUBRICS_REQUIRE_DOCKER=1 (CI)."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

from agentic_rubrics.sandbox.docker_cli import daemon_problem


def docker_marks() -> list[Any]:
    """``pytestmark`` for such a module (run in one xdist group: they share the daemon's images)."""
    problem = daemon_problem() or (None if shutil.which("debootstrap") else "no debootstrap here")
    if os.environ.get("AGENTIC_RUBRICS_REQUIRE_DOCKER") == "1" and problem is not None:
        raise RuntimeError(f"CI requires a docker daemon: {problem}")  # pragma: no cover
    return [
        pytest.mark.docker,
        pytest.mark.xdist_group("docker"),
        pytest.mark.skipif(problem is not None, reason=f"no docker daemon here: {problem}"),
    ]
