"""The ``tests`` verifier's script written by the test-writing agent
(:mod:`agentic_rubrics.explore.test_writer`) in the explorer's sandbox, with the explorer's model.

The agent gets the task with no candidates at all (and, as every explorer, no labels, gold patch or
hidden tests): what it writes cannot be fitted to the patches it will grade.
"""

from __future__ import annotations

from agentic_rubrics.pipeline.context import RunContext
from agentic_rubrics.pipeline.verifiers.artifacts import write_in_sandbox, writer_trajectory
from agentic_rubrics.runfolder.rows import Trajectory
from agentic_rubrics.types import Task


async def write_tests(
    task: Task, ctx: RunContext
) -> tuple[dict[str, str], str, Trajectory | None, int | None]:
    """The script (``{file name: text}``, empty when none was written), why not, the trajectory
    (when trajectories are kept) and the turns used."""
    from agentic_rubrics.explore.test_writer import TEST_FILE, TestWriterAgent
    from agentic_rubrics.sandbox.testlayout import layout_for

    cfg = ctx.config.explorer
    assert ctx.explorer_model is not None, "the test writer needs the explorer's model"
    writer = TestWriterAgent(
        ctx.explorer_model,
        max_turns=cfg.max_turns,
        command_timeout=cfg.command_timeout,
        max_observation=cfg.max_observation,
        tool_calls=cfg.tool_calls,
        layout=layout_for(task.repo),  # the test where the repository's runner finds it
    )
    shown = task.model_copy(update={"candidates": []})  # never a candidate's patch
    written = await write_in_sandbox(task, ctx, lambda sandbox: writer.write(shown, sandbox))
    reason = written.reason("writer_error")
    model = cfg.model.model if cfg.model else None
    trajectory = writer_trajectory(
        task, ctx, written, writer=writer.name, model=model, phase=writer.phase, reason=reason
    )
    text = written.product
    files = {TEST_FILE: str(ctx.redact(text))} if text is not None else {}
    return files, reason, trajectory, written.turns
