"""The local copy sandbox: commands run in a throwaway copy, with a timeout, an output cap, a clean env."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from agentic_rubrics import Sandbox
from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox import LocalCopySandbox


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text("def f():\n    return 1\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def test_commands_run_in_a_copy_and_leave_the_original_alone(repo: Path) -> None:
    async def go() -> None:
        async with LocalCopySandbox(repo) as sb:
            assert isinstance(sb, Sandbox)
            out = await sb.run("ls pkg && echo changed > pkg/core.py && cat pkg/core.py")
            assert out.exit_code == 0 and "core.py" in out.output and "changed" in out.output
            assert await sb.read_file("pkg/core.py") == "changed\n"
            assert (await sb.run("test -d .git")).exit_code == 1  # .git is not copied by default
            copy = sb.root
        assert not copy.exists()

    asyncio.run(go())
    assert (repo / "pkg" / "core.py").read_text() == "def f():\n    return 1\n"


def test_timeout_output_cap_and_exit_codes(repo: Path) -> None:
    async def go() -> None:
        async with LocalCopySandbox(repo) as sb:
            started = time.monotonic()
            slow = await sb.run("sleep 5; echo never", timeout=0.3)
            assert slow.timed_out and slow.exit_code is None and "never" not in slow.output
            assert time.monotonic() - started < 3
            big = await sb.run("yes x | head -c 100000", max_output=1000)
            assert big.truncated and big.output.startswith("x\nx\n")
            assert "[... output truncated at 1000 characters ...]" in big.output
            assert len(big.output) < 1100
            err = await sb.run("echo oops >&2; exit 3")
            assert err.exit_code == 3 and "oops" in err.output

    asyncio.run(go())


def test_environment_is_clean(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-that-must-not-leak")

    async def go() -> str:
        async with LocalCopySandbox(repo) as sb:
            return (await sb.run("env")).output

    env = asyncio.run(go())
    assert "sk-secret-value" not in env and "OPENAI_API_KEY" not in env
    assert os.environ["OPENAI_API_KEY"]  # the caller's own environment is untouched


def test_read_file_refuses_paths_outside_the_copy(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")

    async def go() -> None:
        async with LocalCopySandbox(repo) as sb:
            for bad in ("../secret.txt", "pkg/../../secret.txt"):
                with pytest.raises(SandboxError, match="outside the repository"):
                    await sb.read_file(bad)
            with pytest.raises(SandboxError, match="cannot read"):
                await sb.read_file("pkg/missing.py")
            assert await sb.read_file("/pkg/core.py") == "def f():\n    return 1\n"

    asyncio.run(go())


def test_missing_repository_is_a_sandbox_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="does not exist"):
        LocalCopySandbox(tmp_path / "nope")
