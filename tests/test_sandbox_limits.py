"""The bubblewrap sandbox holds as root: no capabilities, an unprivileged uid, capped writes and processes.

These run as root here and in CI (the case that broke: root kept every capability inside the sandbox and
could remount the host's /usr read-write). With AGENTIC_RUBRICS_REQUIRE_BWRAP=1 they fail, never skip.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
import uuid
from pathlib import Path

import pytest

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.protocols import CommandResult
from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox, bwrap_problem
from tests.test_sandbox_bwrap import REPO, require_bwrap

pytestmark = require_bwrap


def _run(sandbox: BubblewrapSandbox, command: str, timeout: float = 20.0) -> CommandResult:
    return asyncio.run(sandbox.run(command, timeout=timeout, max_output=50_000))


@pytest.fixture
def sandbox() -> BubblewrapSandbox:  # type: ignore[misc]
    sb = BubblewrapSandbox(REPO)
    yield sb
    asyncio.run(sb.close())


def test_the_command_has_no_capability_and_is_not_root(sandbox: BubblewrapSandbox) -> None:
    result = _run(sandbox, "id -u; grep -E '^Cap(Prm|Eff|Bnd|Amb):' /proc/self/status")
    lines = result.output.split()
    assert lines[0] != "0", result.output
    for name in ("CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"):
        assert lines[lines.index(name) + 1] == "0000000000000000", result.output


@pytest.mark.parametrize(
    "attempt",
    [
        "mount -o remount,bind,rw /usr && touch /usr/{marker}",
        "mount -o remount,rw /etc && touch /etc/{marker}",
        "umount -l /etc && touch /etc/{marker}",
        "umount /usr && mkdir -p /usr && touch /usr/{marker}",
        "mount -t proc proc /tmp && ls /tmp/1",
        "mount -t tmpfs none /usr && touch /usr/{marker}",
        "unshare -Urm sh -c 'mount -o remount,bind,rw /usr && touch /usr/{marker}'",
    ],
)
def test_mounts_are_refused(sandbox: BubblewrapSandbox, attempt: str) -> None:
    marker = f"agentic-rubrics-escape-{uuid.uuid4().hex}"
    result = _run(sandbox, attempt.format(marker=marker))
    assert result.exit_code not in (0, None), result.output
    assert not (Path("/usr") / marker).exists()
    assert not (Path("/etc") / marker).exists()


def test_nothing_written_inside_reaches_the_host(sandbox: BubblewrapSandbox) -> None:
    marker = f"agentic-rubrics-escape-{uuid.uuid4().hex}"
    targets = ["/usr", "/etc", "/root", "/tmp", "/", "/home", "/dev", "/var", "/opt"]
    script = "; ".join(f"echo x > {t.rstrip('/')}/{marker}" for t in targets)
    _run(sandbox, f"{script}; mkdir -p /root /var/tmp && echo x > /root/{marker}")
    for target in targets:
        assert not (Path(target) / marker).exists(), target
    # the sandbox's own root is read-only too (no unbounded tmpfs to fill)
    result = _run(sandbox, f"touch /{marker}")
    assert result.exit_code != 0 and "Read-only file system" in result.output


def test_writes_in_the_workspace_are_capped(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("a\n")

    async def go() -> None:
        async with BubblewrapSandbox(repo, max_write_bytes=4 << 20, max_tmp_bytes=4 << 20) as sb:
            small = await sb.run("head -c 1000000 /dev/zero > one && echo ok")
            assert small.output == "ok\n"
            big = await sb.run("head -c 20000000 /dev/zero > two; echo rc=$?; du -sk two")
            assert "No space left on device" in big.output and "rc=1" in big.output
            assert int(big.output.split("rc=1\n")[1].split()[0]) <= 4096
            # the home folder shares the cap; files written before it stay readable
            home = await sb.run("head -c 20000000 /dev/zero > ~/three; echo rc=$?")
            assert "rc=1" in home.output
            assert await sb.read_file("one", max_bytes=10) == "\0" * 10
            # the same command with room to spare succeeds once space is freed
            freed = await sb.run("rm two ~/three; head -c 2000000 /dev/zero > four && echo ok")
            assert freed.output == "ok\n"
            # /tmp of each command is capped as well
            tmp = await sb.run("head -c 20000000 /dev/zero > /tmp/x; echo rc=$?")
            assert "rc=1" in tmp.output and "No space left on device" in tmp.output

    asyncio.run(go())
    assert sorted(p.name for p in repo.iterdir()) == ["a.txt"]  # the original is untouched


_FORKS = """
import os, time
started = 0
for _ in range(60):
    try:
        if os.fork() == 0:
            time.sleep(5)
            os._exit(0)
    except OSError as exc:
        print(exc)
        break
    started += 1
print(f"started={started}")
"""


def test_the_number_of_processes_is_capped(tmp_path: Path) -> None:
    async def go() -> CommandResult:
        async with BubblewrapSandbox(REPO, max_processes=24) as sb:
            return await sb.run(f"python3 -c {shlex.quote(_FORKS)}; ulimit -u", timeout=20)

    result = asyncio.run(go())
    assert "Resource temporarily unavailable" in result.output, result.output
    started = int(result.output.split("started=")[1].split()[0])
    assert started < 24, result.output
    assert result.output.rstrip().endswith("24")


def test_a_fork_bomb_ends_with_the_timeout(tmp_path: Path) -> None:
    async def go() -> tuple[CommandResult, float, CommandResult]:
        async with BubblewrapSandbox(REPO, max_processes=32) as sb:
            # refuse to set the bomb off unless the limit really holds (a safety for the CI machine)
            limit = await sb.run("ulimit -u")
            assert limit.output.strip() == "32", limit.output
            started = time.monotonic()
            bomb = await sb.run("bomb() { bomb | bomb & }; bomb; sleep 60", timeout=3)
            elapsed = time.monotonic() - started
            after = await sb.run("echo alive")
            return bomb, elapsed, after

    bomb, elapsed, after = asyncio.run(go())
    assert bomb.timed_out and bomb.exit_code is None
    assert elapsed < 15
    assert after.output == "alive\n"
    # nothing of the bomb is left running on the host
    assert [p for p in _processes() if "bomb()" in _cmdline(p)] == []


def _processes() -> list[Path]:
    return [p for p in Path("/proc").iterdir() if p.name.isdigit()]


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_commands_never_run_as_the_host_root() -> None:
    marker = f"{uuid.uuid4().int % 1000 + 1000}.5"

    async def go() -> set[int]:
        async with BubblewrapSandbox(REPO) as sb:
            task = asyncio.create_task(sb.run(f"sleep {marker}", timeout=20))
            owners: set[int] = set()
            for _ in range(100):
                await asyncio.sleep(0.1)
                owners = {
                    p.stat().st_uid for p in _processes() if _cmdline(p) == f"sleep\0{marker}\0"
                }
                if owners:
                    break
            task.cancel()
            return owners

    assert bwrap_problem() is None
    owners = asyncio.run(go())
    assert owners, "the sandboxed command was not seen running"
    if os.geteuid() == 0:
        assert 0 not in owners  # root hands the command to an unprivileged host user
    else:
        assert owners == {os.geteuid()}


def test_reading_a_file_never_follows_a_link_out_of_the_workspace(
    sandbox: BubblewrapSandbox,
) -> None:
    made = _run(
        sandbox,
        "ln -s /etc/shadow leak && ln -s ../../../../etc/hostname climb"
        " && ln -s /workspace/pagewise/__init__.py absolute && ln -s pagewise/__init__.py relative"
        " && mkdir -p d && ln -s .. d/up && ln -s loop loop && echo new > pagewise/new.py",
    )
    assert made.exit_code == 0, made.output
    original = (REPO / "pagewise" / "__init__.py").read_text()
    with pytest.raises(SandboxError, match="outside"):
        asyncio.run(sandbox.read_file("leak"))
    with pytest.raises(SandboxError, match="cannot read"):
        asyncio.run(sandbox.read_file("climb"))  # clamped at the workspace: no etc/hostname there
    with pytest.raises(SandboxError, match="cannot read"):
        asyncio.run(sandbox.read_file("loop"))
    with pytest.raises(SandboxError, match="cannot read"):
        asyncio.run(sandbox.read_file("pagewise"))  # a folder
    assert asyncio.run(sandbox.read_file("absolute")) == original
    assert asyncio.run(sandbox.read_file("relative")) == original
    assert asyncio.run(sandbox.read_file("d/up/pagewise/__init__.py")) == original
    assert asyncio.run(sandbox.read_file("/workspace/pagewise/new.py")) == "new\n"


def test_a_command_cannot_take_the_machine_s_memory(sandbox: BubblewrapSandbox) -> None:
    """2 GiB of address space per process by default: a 2 GiB allocation fails, 100 MiB works."""
    big = _run(sandbox, "python3 -c 'bytearray(2 << 30)' 2>&1; echo exit=$?")
    assert "MemoryError" in big.output and "exit=1" in big.output, big.output
    small = _run(sandbox, "python3 -c 'b = bytearray(100 << 20); print(len(b))'")
    assert small.output.strip() == str(100 << 20), small.output


def test_the_memory_limit_is_configurable(tmp_path: Path) -> None:
    async def go() -> str:
        async with BubblewrapSandbox(REPO, max_memory_bytes=256 << 20) as sb:
            result = await sb.run("python3 -c 'bytearray(300 << 20)' 2>&1 | tail -1", timeout=20)
            return result.output

    assert "MemoryError" in asyncio.run(go())


def test_thread_pools_are_held_to_four_threads_so_numpy_fits_the_memory_limit(
    sandbox: BubblewrapSandbox,
) -> None:
    """OpenBLAS starts a thread per core, each with 40 MiB of address space: on 64 cores `import
    numpy` took 2.6 GiB and failed under the 2 GiB limit ("OpenBLAS error: Memory allocation still
    failed"); with four threads a pool it takes 220 MiB. The command may still ask for more."""
    result = _run(sandbox, 'echo "$OPENBLAS_NUM_THREADS $OMP_NUM_THREADS $MKL_NUM_THREADS"')
    assert result.output.split() == ["4", "4", "4"], result.output
    mine = _run(sandbox, "OMP_NUM_THREADS=2 bash -c 'echo $OMP_NUM_THREADS'")
    assert mine.output.strip() == "2"
