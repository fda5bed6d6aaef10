"""The proxy-patch author of the patch-similarity verifier: the rubric agent's loop in a "solve" role.

The agent explores the repository in its sandbox, edits files to fix the issue (with ``bash``: the
workspace is writable, the rest of the file system read-only, no network) and submits; the difference
between its workspace and the base tree is the proxy patch candidates are compared with. Before the
first turn the workspace is committed to a git repository kept in the sandbox's home, outside the
workspace (``git diff`` then needs no ``.git`` in the tree: exported trees have none); at submit, or when
the turns run out, ``git add -A`` and ``git diff --cached`` give the patch, its output capped at
``max_patch_chars``. The agent sees the task's public view only: the issue and the repository, never the
candidates, the gold patch or the hidden tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentic_rubrics.exceptions import ExplorationFailed, SandboxError
from agentic_rubrics.explore.agent import AgentExplorer
from agentic_rubrics.explore.agent_actions import SOLVE_TOOLS
from agentic_rubrics.explore.agent_tools import Run, Tools
from agentic_rubrics.llm.door import LLM
from agentic_rubrics.protocols import Sandbox
from agentic_rubrics.types import Task

# the base snapshot: a git directory in the sandbox's home (it persists between commands, and is not
# in the workspace, so the diff never holds it); hooks, signing and line-ending rewrites off
_GIT = (
    'export GIT_DIR="${HOME:-/tmp}/.proxy-base.git" GIT_WORK_TREE=. && '
    "g() { git -c safe.directory='*' -c core.autocrlf=false -c core.hooksPath=/dev/null"
    ' -c commit.gpgsign=false -c user.name=proxy -c user.email=proxy@invalid "$@"; }'
)
SNAPSHOT = f"{_GIT} && g init -q && g add -A && g commit -q --no-verify --allow-empty -m base"
"""Commit the workspace as it is before the agent's first turn."""
DIFF = (
    f"{_GIT} && g add -A && g diff --cached --no-color --no-ext-diff --no-renames HEAD 2>/dev/null"
)
"""The workspace's changes since the snapshot (new, changed and deleted files)."""
SNAPSHOT_TIMEOUT = 300.0
"""Seconds for the snapshot and the diff (``git add -A`` over a large tree)."""


@dataclass
class ProxyPatch:
    """What the agent left: its workspace's diff, and whether it was read whole."""

    diff: str
    submitted: bool
    """The agent submitted (False: its turns ran out and the diff was taken as it stood)."""
    truncated: bool = False
    """The diff was over ``max_patch_chars`` (it is not used: a cut diff does not apply)."""


async def workspace_diff(sandbox: Sandbox, max_chars: int) -> tuple[str, bool]:
    """The workspace's diff since :data:`SNAPSHOT`, and whether it was cut at ``max_chars``.

    Raises:
        SandboxError: git failed or timed out (the sandbox's own failures too).
    """
    result = await sandbox.run(DIFF, timeout=SNAPSHOT_TIMEOUT, max_output=max_chars)
    if result.timed_out or (result.exit_code != 0 and not result.truncated):
        raise SandboxError(f"git diff in the workspace failed (exit status {result.exit_code})")
    return result.output, result.truncated


@dataclass
class SolveTools(Tools):
    """The rubric agent's bash, view and search; ``submit`` ends the work with the workspace's diff
    (an empty diff is sent back once while turns remain)."""

    max_patch_chars: int = 1_000_000

    async def run(self, run: Run, tool: str, argument: str, turn: int) -> tuple[str, Any]:
        """The observation, or the proxy patch once a submit is accepted."""
        if tool != "submit":
            return await super().run(run, tool, argument, turn)
        diff, truncated = await workspace_diff(run.sandbox, self.max_patch_chars)
        run.steps[-1].update(output_chars=len(diff), truncated=truncated)
        if diff.strip() or truncated or run.warned or turn >= self.max_turns:
            return "", ProxyPatch(diff, submitted=True, truncated=truncated)
        run.warned = True
        return self.prompt.render("empty_diff", turns_left=self.turns_left(turn)), None


class ProxyAuthor(AgentExplorer):
    """The agent that writes a task's proxy patch (``solve``); same model loop as the rubric agent."""

    name = "proxy-agent"
    prompt_name = "proxy_agent"
    tool_names = SOLVE_TOOLS
    phase = "proxy"

    def __init__(
        self,
        llm: LLM,
        *,
        max_turns: int = 30,
        command_timeout: float = 60.0,
        max_observation: int = 10_000,
        tool_calls: Literal["auto", "native", "text"] = "auto",
        max_patch_chars: int = 1_000_000,
    ) -> None:
        super().__init__(
            llm,
            max_turns=max_turns,
            command_timeout=command_timeout,
            max_observation=max_observation,
            tool_calls=tool_calls,
        )
        self.max_patch_chars = max_patch_chars
        self.tools = SolveTools(
            self.prompt,
            max_turns,
            command_timeout,
            max_observation,
            max_patch_chars=max_patch_chars,
        )

    async def solve(self, task: Task, sandbox: Sandbox) -> tuple[ProxyPatch, list[dict[str, Any]]]:
        """Run the agent; its workspace's diff (also when its turns ran out) and its steps.

        Raises:
            ExplorationFailed: the snapshot failed (``snapshot_failed``), or the loop did (budget,
                model error, context window), carrying the steps.
        """
        done = await sandbox.run(SNAPSHOT, timeout=SNAPSHOT_TIMEOUT, max_output=4000)
        if done.exit_code != 0:
            raise ExplorationFailed("snapshot_failed", [])
        run = Run(task.public(), sandbox)
        try:
            patch, steps = await self._loop(run)
        except ExplorationFailed as failed:
            if failed.reason != "turn_budget_exhausted":
                raise
            try:
                diff, truncated = await workspace_diff(sandbox, self.max_patch_chars)
            except SandboxError:
                raise ExplorationFailed("diff_failed", failed.steps) from None
            return ProxyPatch(diff, submitted=False, truncated=truncated), failed.steps
        assert isinstance(patch, ProxyPatch)
        return patch, steps
