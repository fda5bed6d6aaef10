"""A docker command line with no daemon behind it, for the swerex-docker tests.

It answers what the sandbox's container deployment calls, and appends each call's arguments as one JSON
line to ``$FAKE_DOCKER_LOG``. The "container" of ``run -d`` is a real ``swerex-remote`` on this machine
(``$FAKE_DOCKER_SWEREX``) started in the background on the port and with the token of the command, so
the sandbox's own commands really run; ``inspect`` gives it the address 127.0.0.1 and the network mode
``$FAKE_DOCKER_NETWORK_MODE`` (default: the one it was started with). The network cut (``run --rm
--network container:NAME``) never runs its command (it must not touch this machine): it prints
``$FAKE_DOCKER_EXEC_STDOUT`` / ``$FAKE_DOCKER_EXEC_STDERR`` and exits with ``$FAKE_DOCKER_EXEC_STATUS``;
with ``$FAKE_DOCKER_EXEC_KILLS`` set it also kills the "container" (as a cut that takes the runtime's
connections with it would). ``image inspect`` finds the images listed in ``$FAKE_DOCKER_IMAGES``; ``exec`` (the cut container's
resolver replaced) is logged and does nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from pathlib import Path


def _state(name: str) -> Path:
    return Path(os.environ["FAKE_DOCKER_LOG"] + f".{name}.json")


def main(argv: list[str]) -> int:
    with Path(os.environ["FAKE_DOCKER_LOG"]).open("a", encoding="utf-8") as log:
        log.write(json.dumps(argv) + "\n")
    command = argv[0]
    if argv[:2] == ["image", "inspect"]:
        if argv[-1] in os.environ.get("FAKE_DOCKER_IMAGES", "").split(","):
            print(json.dumps({"agentic_rubrics.runtime": os.environ["FAKE_DOCKER_SWEREX"]}))
            return 0
        sys.stderr.write(f"Error: No such image: {argv[-1]}\n")
        return 1
    if command == "run" and "-d" in argv:
        name = argv[argv.index("--name") + 1]
        network = argv[argv.index("--network") + 1]
        port, token = argv[argv.index("--port") + 1], argv[argv.index("--auth-token") + 1]
        exe = os.environ["FAKE_DOCKER_SWEREX"]
        # a daemon that outlives this command, as a container does: spawned, not a Popen this
        # process would have to wait for
        quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
        argv = [exe, "--host", "127.0.0.1", "--port", port, "--auth-token", token]
        pid = os.posix_spawn(exe, argv, os.environ, file_actions=quiet, setsid=True)
        _state(name).write_text(json.dumps({"pid": pid, "network": network}))
        print("0" * 64)
        return 0
    if command == "run":  # the network cut: run --rm ... --network container:NAME ...
        target = argv[argv.index("--network") + 1].removeprefix("container:")
        if os.environ.get("FAKE_DOCKER_EXEC_KILLS"):
            os.kill(json.loads(_state(target).read_text())["pid"], signal.SIGKILL)
        sys.stdout.write(os.environ.get("FAKE_DOCKER_EXEC_STDOUT", ""))
        sys.stderr.write(os.environ.get("FAKE_DOCKER_EXEC_STDERR", ""))
        return int(os.environ.get("FAKE_DOCKER_EXEC_STATUS", "0"))
    if command == "inspect":
        state = json.loads(_state(argv[-1]).read_text())
        fmt = argv[argv.index("--format") + 1]
        mode = os.environ.get("FAKE_DOCKER_NETWORK_MODE", state["network"])
        if "HostConfig.NetworkMode" in fmt:
            print(f"{mode} 0")  # no pid: the namespace is not looked at here
        elif "Networks" in fmt:
            print(json.dumps({state["network"]: {"IPAddress": "127.0.0.1"}}))
        else:
            print(json.dumps({"Running": True, "OOMKilled": False, "ExitCode": 0}))
        return 0
    if command == "rm":
        path = _state(argv[-1])
        if path.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(json.loads(path.read_text())["pid"], signal.SIGKILL)
            path.unlink()
        return 0
    if command in ("ps", "kill", "pull", "rmi", "logs", "exec") or argv[:2] in (
        ["network", "create"],
        ["network", "rm"],
        ["network", "ls"],
        ["image", "ls"],
    ):
        return 0
    sys.stderr.write(f"fake docker: unknown command {command}\n")
    return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
