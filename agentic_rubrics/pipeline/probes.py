"""The issue's examples and the changed definitions' own run on each candidate's tree for
``behaviour_consensus`` (``consensus_probes``).

Where the tests verifier's tests run in bubblewrap — the task's tree copied once, the Python its spec
builds or ``tests.python`` (:class:`~agentic_rubrics.pipeline.verifiers.tests_tree.TaskTree`) — the
probe of :mod:`agentic_rubrics.rank.probes` (its inputs: :mod:`agentic_rubrics.rank.probe_inputs`)
runs twice on the base tree and once per distinct patch, each run one of the run's sandbox slots. What comes back is hashes of outputs, or the reason there are
none (``no_examples``, ``docker_not_supported``, ``no_repository``, ``env_build_failed``,
``sandbox_error``, ``probe_error``, ...); the
consensus record stores only how many candidates were probed and how many examples told them apart.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.pipeline.context import SANDBOX_SLOT, RunContext
from agentic_rubrics.rank.probe_inputs import issue_snippets, tree_snippets
from agentic_rubrics.rank.probes import probe_pool
from agentic_rubrics.types import Task

log = logging.getLogger(__name__)


async def issue_outputs(task: Task, ctx: RunContext) -> dict[str, Any]:
    """``{"base": hashes, "outputs": {candidate id: hashes}, "reasons": {...}}`` of the task, or
    ``{"reason": code}`` when the examples could not run. Never raises for what the task holds: an
    error there leaves the consensus without outputs (``probe_error``, logged)."""
    from agentic_rubrics.pipeline.verifiers.tests import settings
    from agentic_rubrics.pipeline.verifiers.tests_grading import limits_of
    from agentic_rubrics.pipeline.verifiers.tests_tree import TaskTree

    config = settings(ctx).tests
    if config.docker is not None:
        return {"reason": "docker_not_supported"}
    where = TaskTree(task, ctx, config)
    try:
        path = await where.path()
        interpreter = await where.env()
        if path is None or interpreter is None:
            return {"reason": where.problem or "no_repository"}
        distinct = {c.patch: f"p{n}" for n, c in enumerate(task.candidates)}
        issue = issue_snippets(task.problem_statement or "")
        snippets = issue + await asyncio.to_thread(tree_snippets, path, list(distinct))
        if not snippets:
            return {"reason": "no_examples"}
        found = await probe_pool(
            path,
            {pid: patch for patch, pid in distinct.items()},
            snippets,
            python=interpreter.python,
            read_only=interpreter.read_only,
            limits=limits_of(config),
            slot=lambda: ctx.limiter.slot(SANDBOX_SLOT),
        )
    except SandboxError as exc:  # bubblewrap cannot start here: the consensus goes without outputs
        log.warning("%s: the examples did not run: %s", task.instance_id, str(exc)[-300:])
        return {"reason": "sandbox_error"}
    except Exception as exc:  # hostile input must not end the run
        kind, text = type(exc).__name__, str(exc)[-300:]
        log.warning("%s: the examples did not run: %s: %s", task.instance_id, kind, text)
        return {"reason": "probe_error"}
    finally:
        await where.close()
    by_id = {c.id: distinct[c.patch] for c in task.candidates}
    return {
        "base": list(found.base) if found.base is not None else None,
        "outputs": {c: list(found.outputs[p]) for c, p in by_id.items() if p in found.outputs},
        "reasons": {c: found.reasons[p] for c, p in by_id.items() if p in found.reasons},
        **({"reason": found.reasons["base"]} if "base" in found.reasons else {}),
        **({"approximate_tree": True} if where.approximate else {}),
    }
