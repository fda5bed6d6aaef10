"""The isolated bubblewrap sandbox. In CI (AGENTIC_RUBRICS_REQUIRE_BWRAP=1) these fail, never skip."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from agentic_rubrics import Sandbox
from agentic_rubrics.datasets.bundled import EXAMPLES_DIR
from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox import AutoConfig, LocalCopyConfig, open_sandbox
from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox, bwrap_problem

REQUIRED = os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1"
_problem = bwrap_problem()
if REQUIRED and _problem is not None:  # pragma: no cover - a broken CI machine
    raise RuntimeError(f"CI requires bubblewrap: {_problem}")
require_bwrap = pytest.mark.skipif(
    _problem is not None, reason=f"bubblewrap unavailable: {_problem}"
)

REPO = EXAMPLES_DIR / "harbourline__pagewise-214" / "repo"


def run_in(sandbox: BubblewrapSandbox, command: str, **kw: float) -> tuple[int | None, str]:
    result = asyncio.run(sandbox.run(command, **kw))  # type: ignore[arg-type]
    return result.exit_code, result.output


@require_bwrap
def test_isolation() -> None:
    sb = BubblewrapSandbox(REPO)
    try:
        assert isinstance(sb, Sandbox) and sb.isolated
        code, out = run_in(sb, "pwd; ls")
        assert code == 0 and out.startswith("/workspace\n") and "pagewise" in out
        # no network
        code, out = run_in(
            sb, "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)\""
        )
        assert code == 1 and ("unreachable" in out or "Errno" in out)
        # the rest of the file system is read-only or absent
        code, out = run_in(
            sb, "touch /usr/x 2>&1; touch /etc/x 2>&1; ls /root /work /home/sandbox/.. 2>&1"
        )
        assert out.count("Read-only file system") == 2 and "cannot access '/root'" in out
        assert "cannot access '/work'" in out
        # the hidden tests beside the repository are not mounted
        code, out = run_in(
            sb, "ls .. ; find / -name 'hidden_tests' -not -path '/proc/*' 2>/dev/null | head"
        )
        assert "hidden_tests" not in out
        # the workspace is writable, and it is a copy
        code, out = run_in(sb, "echo changed > pagewise/__init__.py && cat pagewise/__init__.py")
        assert out == "changed\n" and (REPO / "pagewise" / "__init__.py").read_text() != "changed\n"
        assert asyncio.run(sb.read_file("/workspace/pagewise/__init__.py")) == "changed\n"
        with pytest.raises(SandboxError, match="outside"):
            asyncio.run(sb.read_file("../hidden_tests/test_hidden.py"))
    finally:
        asyncio.run(sb.close())
    assert not sb.root.exists()


@require_bwrap
def test_timeout_output_cap_and_clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-reach-the-sandbox-000000")

    async def go() -> None:
        async with BubblewrapSandbox(REPO) as sb:
            started = time.monotonic()
            slow = await sb.run("sleep 30", timeout=0.5)
            assert slow.timed_out and slow.exit_code is None and time.monotonic() - started < 5
            big = await sb.run("seq 1 100000", max_output=500)
            assert big.truncated and "[... output truncated at 500 characters ...]" in big.output
            env = (await sb.run("env")).output
            assert "OPENAI_API_KEY" not in env and "sk-must-not" not in env
            assert "HOME=/home/sandbox" in env

    asyncio.run(go())


@require_bwrap
def test_auto_picks_bubblewrap() -> None:
    async def go() -> str:
        sb = await open_sandbox(
            AutoConfig(), instance_id="t", repo_path=str(REPO), model_commands=True
        )
        try:
            return str(sb.kind)
        finally:
            await sb.close()

    assert asyncio.run(go()) == "bubblewrap"


def test_unisolated_sandboxes_need_the_explicit_flag(caplog: pytest.LogCaptureFixture) -> None:
    async def go(allow: bool) -> str:
        sb = await open_sandbox(
            LocalCopyConfig(),
            instance_id="t",
            repo_path=str(REPO),
            model_commands=True,
            allow_unisolated=allow,
        )
        try:
            return str(sb.kind)
        finally:
            await sb.close()

    with pytest.raises(SandboxError, match="--unsafe-local-sandbox"):
        asyncio.run(go(False))
    assert asyncio.run(go(True)) == "local-copy"
    assert "UNISOLATED" in caplog.text

    # the library's own commands (the static explorer) may use it without the flag
    async def static() -> str:
        sb = await open_sandbox(
            LocalCopyConfig(), instance_id="t", repo_path=str(REPO), model_commands=False
        )
        await sb.close()
        return str(sb.kind)

    assert asyncio.run(static()) == "local-copy"


def test_a_task_without_a_repository_cannot_open_a_local_sandbox() -> None:
    with pytest.raises(SandboxError, match="needs the task's repo_path"):
        asyncio.run(
            open_sandbox(AutoConfig(), instance_id="t", repo_path=None, model_commands=False)
        )


def test_missing_repository_folder(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="does not exist"):
        asyncio.run(
            open_sandbox(
                LocalCopyConfig(),
                instance_id="t",
                repo_path=str(tmp_path / "nope"),
                model_commands=False,
            )
        )
