"""The ``similarity`` verifier's artifact: a proxy patch, given (``--proxies DIR``) or written by the
proxy-patch author (:mod:`agentic_rubrics.explore.solver`: the explorer's model — the judge's when the
explorer has none — in the explorer's sandbox, shown the issue and the repository only, never a
candidate, the gold patch or hidden tests), then checked before any candidate is rated: an empty one is
``proxy_empty``, one over ``similarity.max_proxy_chars`` ``proxy_too_large``, one that is not a diff or
does not apply to the base tree (applied as the harness applies a patch, confined)
``proxy_does_not_apply``.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import PatchParseError, RepoError
from agentic_rubrics.llm.door import LLM
from agentic_rubrics.patch import is_empty_patch, parse_patch
from agentic_rubrics.pipeline.context import RunContext
from agentic_rubrics.pipeline.verifiers.artifacts import (
    given_names,
    write_in_sandbox,
    writer_trajectory,
)
from agentic_rubrics.runfolder.proxies import PROXY_FILE
from agentic_rubrics.runfolder.rows import Trajectory
from agentic_rubrics.types import Task


def diff_hash(diff: str) -> str:
    """``sha256:`` of the proxy's bytes (what its status records)."""
    return "sha256:" + hashlib.sha256(diff.encode("utf-8", "surrogateescape")).hexdigest()


def given_proxy(root: Path, instance_id: str, max_chars: int) -> tuple[str | None, str]:
    """The proxy ``--proxies DIR`` holds for a task (``DIR/<safe name>/proxy.diff`` first, then
    ``DIR/<instance_id>/proxy.diff`` for a plain relative id, never outside ``DIR``), or why none."""
    base = root.resolve()
    for name in given_names(instance_id):
        try:
            path = (root / name / PROXY_FILE).resolve()
            if not path.is_relative_to(base) or not path.is_file():
                continue
            if path.stat().st_size > 4 * max_chars:  # utf-8: at most 4 bytes a character
                return None, "proxy_too_large"
            return path.read_bytes().decode("utf-8"), ""
        except UnicodeDecodeError:
            return None, "proxy_does_not_apply"  # not text: no tree takes it
        except (OSError, ValueError):
            continue
    return None, "proxy_not_found"


def _applies(repo: Path, diff: str) -> bool | None:
    """Whether the proxy applies to the base tree as the harness applies a patch (``None``: not
    tried, e.g. no confinement where it is required)."""
    from agentic_rubrics.rubric.postimage.apply import apply_like_harness

    with tempfile.TemporaryDirectory(prefix="proxy-apply-") as work:
        applied = apply_like_harness(repo, diff.encode("utf-8", "surrogateescape"), Path(work))
    if applied.method == "not_attempted":
        return None
    return applied.method != "failed"


async def check_proxy(
    task: Task, ctx: RunContext, diff: str, max_chars: int
) -> tuple[str | None, dict[str, Any]]:
    """Why the proxy cannot be used (``None``: it can), and what was measured of it."""
    if is_empty_patch(diff):
        return "proxy_empty", {}
    if len(diff) > max_chars:
        return "proxy_too_large", {}
    try:
        parsed = parse_patch(diff)
    except PatchParseError:
        return "proxy_does_not_apply", {}
    measured: dict[str, Any] = {"files": len(parsed.files), "changed_lines": parsed.changed_lines}
    if parsed.is_empty:
        return "proxy_empty", measured
    try:
        tree = await asyncio.to_thread(ctx.repository, task)
    except RepoError:
        tree = None
    if tree is not None and await asyncio.to_thread(_applies, tree.path, diff) is False:
        return "proxy_does_not_apply", measured
    return None, measured


def first_model(*models: Any) -> LLM | None:
    """The first of the run's models given (the proxy author: the explorer's, then the judge's; the
    similarity judge: the judge's, then the explorer's)."""
    return next((m for m in models if isinstance(m, LLM)), None)


async def write_proxy(
    task: Task, ctx: RunContext, max_turns: int | None, max_chars: int
) -> tuple[str | None, str, dict[str, Any], Trajectory | None]:
    """The proxy-patch author's diff (or why there is none), its facts (model, prompt, turns, cost,
    whether it submitted) and its trajectory."""
    from agentic_rubrics.explore.solver import ProxyAuthor

    cfg = ctx.config.explorer
    llm = first_model(ctx.explorer_model, ctx.selector_model)
    if llm is None:
        return None, "proxy_failed:no_model", {}, None
    author = ProxyAuthor(
        llm,
        max_turns=max_turns or cfg.max_turns,
        command_timeout=cfg.command_timeout,
        max_observation=cfg.max_observation,
        tool_calls=cfg.tool_calls,
        max_patch_chars=max_chars + 1,
    )
    facts: dict[str, Any] = {"model": llm.config.model, "prompt": author.prompt.ref}
    written = await write_in_sandbox(
        task, ctx, lambda sandbox: author.solve(task.public(), sandbox)
    )
    diff, reason = None, ""
    if written.product is None:
        reason = f"proxy_failed:{written.reason('author_error')}"
    else:
        facts["submitted"] = written.product.submitted
        if written.product.truncated:
            reason = "proxy_too_large"
        else:
            diff = written.product.diff
    if written.turns is not None:
        facts["turns"] = written.turns
    facts["cost"] = {"proxy": ctx.ledger.for_task(task.instance_id).get("proxy", {})}
    trajectory = writer_trajectory(
        task, ctx, written, writer=author.name, model=llm.config.model, phase="proxy", reason=reason
    )
    return diff, reason, facts, trajectory
