"""A docker command line with no daemon behind it, for the swerex-docker tests.

It answers what SWE-ReX's ``DockerDeployment`` and the sandbox call, and appends each call's arguments as
one JSON line to ``$FAKE_DOCKER_LOG``. The "container" of ``run`` is a real ``swerex-remote`` on this
machine (``$FAKE_DOCKER_SWEREX``), serving the published port with the token from the command, so the
sandbox's own commands really run. ``exec`` never runs its command (the network cut must not touch this
machine): it prints ``$FAKE_DOCKER_EXEC_STDOUT`` / ``$FAKE_DOCKER_EXEC_STDERR`` and exits with
``$FAKE_DOCKER_EXEC_STATUS``; with ``$FAKE_DOCKER_EXEC_KILLS`` set it also kills the "container" (as a
cut that takes the runtime's connections with it would). ``inspect`` finds the images listed in
``$FAKE_DOCKER_IMAGES``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    with Path(os.environ["FAKE_DOCKER_LOG"]).open("a", encoding="utf-8") as log:
        log.write(json.dumps(argv) + "\n")
    command = argv[0]
    if command == "inspect":
        return 0 if argv[1] in os.environ.get("FAKE_DOCKER_IMAGES", "").split(",") else 1
    if command == "build":
        dockerfile = sys.stdin.buffer.read()
        print("sha256:" + hashlib.sha256(dockerfile + " ".join(argv).encode()).hexdigest())
        return 0
    if command == "run":
        port = argv[argv.index("-p") + 1].split(":")[0]
        match = re.search(r"--auth-token (\S+)", argv[-1])
        assert match, argv
        name = argv[argv.index("--name") + 1]
        Path(os.environ["FAKE_DOCKER_LOG"] + f".{name}.pid").write_text(str(os.getpid()))
        exe = os.environ["FAKE_DOCKER_SWEREX"]
        host = ["--host", "127.0.0.1", "--port", port, "--auth-token", match.group(1)]
        os.execv(exe, [exe, *host])
    if command == "exec":
        if os.environ.get("FAKE_DOCKER_EXEC_KILLS"):
            assert argv[1:4] == ["--privileged", "--user", "root"], argv
            pid = Path(os.environ["FAKE_DOCKER_LOG"] + f".{argv[4]}.pid").read_text()
            os.kill(int(pid), signal.SIGKILL)
        sys.stdout.write(os.environ.get("FAKE_DOCKER_EXEC_STDOUT", ""))
        sys.stderr.write(os.environ.get("FAKE_DOCKER_EXEC_STDERR", ""))
        return int(os.environ.get("FAKE_DOCKER_EXEC_STATUS", "0"))
    if command in ("kill", "pull", "rmi"):
        return 0
    sys.stderr.write(f"fake docker: unknown command {command}\n")
    return 125


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
