"""What a container per candidate costs: K candidates' tests in docker (one prepared image per task,
each candidate in a container of its own) against the same tests in the bubblewrap sandbox, in the
same run.

    DOCKER_HOST=unix:///... .venv/bin/python benchmarks/docker_candidates.py [--k 8]

Prints, per backend, the wall time of the K runs (one at a time, then two at a time for docker) and
each run's phases (start, staging, the script, removal); the ratio docker / bubblewrap is the
per-candidate overhead on this machine. Needs a docker daemon, debootstrap (the base image, cached)
and bubblewrap.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from agentic_rubrics.sandbox.base import Where
from agentic_rubrics.sandbox.docker_images import ensure_env_image
from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig
from agentic_rubrics.sandbox.testenv import EnvSpec, build_env
from agentic_rubrics.sandbox.testrun import ExecLimits, PreparedTree, run_tests

TEST = b"import pkg\n\ndef test_f():\n    assert pkg.f() == 3\n"


def patch(value: int) -> str:
    return (
        "diff --git a/pkg.py b/pkg.py\n--- a/pkg.py\n+++ b/pkg.py\n@@ -1,2 +1,2 @@\n"
        f" def f():\n-    return 2\n+    return {value}\n"
    )


async def docker_runs(k: int, parallel: int) -> tuple[float, list[dict[str, float]]]:
    from agentic_rubrics.sandbox.testrun_docker import run_candidates_docker

    config = SweRexDockerConfig(image="agentic-rubrics/test-env:pkg", conda_env=None, pull="never")
    patches = {f"c{i}": patch(3 if i % 2 else 4) for i in range(k)}
    start = time.perf_counter()
    runs = await run_candidates_docker(
        config, Where("bench__pkg-1", None), patches, {"test_f.py": TEST}, parallel=parallel
    )
    wall = time.perf_counter() - start
    assert all(r.outcomes for r in runs.values()), {c: r.reason for c, r in runs.items()}
    return wall, [r.timings for r in runs.values()]


async def bwrap_runs(tree: Path, python: str, read_only: dict[str, Path], k: int) -> float:
    start = time.perf_counter()
    for i in range(k):
        run = await run_tests(
            tree,
            patch(3 if i % 2 else 4),
            {"test_f.py": TEST},
            python=python,
            read_only=read_only,
            limits=ExecLimits(),
        )
        assert run.outcomes, run.reason
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--k", type=int, default=8)
    k = parser.parse_args().k
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp).chmod(0o755)  # the bubblewrap sandbox's user walks down to the venv
        tree = Path(tmp) / "tree"
        tree.mkdir()
        (tree / "pkg.py").write_text("def f():\n    return 2\n")
        spec = EnvSpec(requirements=["pytest"], install_tree=False)
        ensure_env_image(
            "agentic-rubrics/test-env:pkg",
            spec,
            tree,
            repo="demo/pkg",
            version="1",
            commit="c0ffee",
        )
        prepared = PreparedTree(tree)
        interpreter = build_env(
            spec, prepared.path, cache_dir=Path(tmp) / "envs", repo="demo/pkg", repo_version="1"
        )
        bwrap = asyncio.run(bwrap_runs(prepared.path, interpreter.python, interpreter.read_only, k))
        prepared.close()
    serial, timings = asyncio.run(docker_runs(k, 1))
    two, _ = asyncio.run(docker_runs(k, 2))
    phases = {
        key: round(statistics.median(t[key] for t in timings), 1)
        for key in ("start_ms", "prepare_ms", "run_ms", "close_ms")
    }
    print(
        json.dumps(
            {
                "k": k,
                "bubblewrap_s_per_candidate": round(bwrap / k, 3),
                "docker_s_per_candidate_serial": round(serial / k, 3),
                "docker_s_per_candidate_two_at_a_time": round(two / k, 3),
                "ratio_serial": round(serial / bwrap, 2),
                "docker_median_phases_ms": phases,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
