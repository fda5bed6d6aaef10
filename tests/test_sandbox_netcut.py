"""The swerex-docker network cut (agentic_rubrics/sandbox/netcut.py) in real network namespaces.

A throwaway namespace is laid out as docker lays out a container's on its default bridge (eth0 at
172.17.0.2/16, the host's end at 172.17.0.1 in a second namespace, default routes for IPv4 and IPv6);
the script runs there exactly as ``docker exec`` runs it (``python3 -c <source>``). Nothing touches this
machine's own network. Needs root (namespaces, veth); tests run as root here and in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentic_rubrics.sandbox import netcut

NETCUT_SOURCE = Path(netcut.__file__).read_text(encoding="utf-8")  # what ``docker exec`` is given

# the "container" listens on 8000 (SWE-ReX's runtime port) before the cut; after it the "host" must
# still reach it, while the container reaches nothing but the gateway
SCRIPT = r"""
set -euo pipefail
ip link add eth0 type veth peer name peer0
ip link set lo up
ip link set eth0 up
ip addr add 172.17.0.2/16 dev eth0
ip -6 addr add fd00:77::2/64 dev eth0 nodad
unshare -n sleep 120 & host=$!
trap 'kill $host' EXIT
for _ in $(seq 50); do [ "$(readlink /proc/$host/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break; sleep 0.1; done
ip link set peer0 netns $host
nsenter -t $host -n ip link set peer0 up
nsenter -t $host -n ip addr add 172.17.0.1/16 dev peer0
ip route add default via 172.17.0.1 dev eth0
ip -6 route add default via fd00:77::1 dev eth0
"$PY" -c '
import socket
with socket.socket() as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 8000)); s.listen(1)
    print("listening", flush=True)
    c, peer = s.accept(); c.sendall(("alive, seen from %s" % peer[0]).encode()); c.close()
' > server.out &
server=$!
for _ in $(seq 50); do grep -q listening server.out && break; sleep 0.1; done
echo "BEFORE $(ip -o route show table all | grep -vc 'table local')"
echo "CUT $("$PY" -c "$NETCUT")"
echo "LEFT $(ip -o route; ip -o -6 route)"
nsenter -t $host -n "$PY" -c '
import socket
with socket.create_connection(("172.17.0.2", 8000), timeout=10) as c:
    print("HOST", c.recv(100).decode())'
wait $server
"$PY" -c '
import errno, socket
for family, address in [(socket.AF_INET, "8.8.8.8"), (socket.AF_INET, "172.17.0.3"),
                        (socket.AF_INET6, "fd00:77::5"), (socket.AF_INET6, "2001:db8::1")]:
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        try:
            s.connect((address, 53)); print("ROUTE", address, "routable")
        except OSError as exc:
            print("ROUTE", address, errno.errorcode[exc.errno])
with socket.socket() as s:
    try:
        s.connect(("172.17.0.1", 9))
    except OSError as exc:
        print("GATEWAY", errno.errorcode[exc.errno])
'
"""


def _lines(out: str, tag: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith(tag + " ")]


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and veth need root")
def test_the_cut_keeps_the_runtime_and_nothing_else(tmp_path: object) -> None:
    assert shutil.which("ip") and shutil.which("unshare"), "install iproute2 and util-linux"
    env = {**os.environ, "PY": sys.executable, "NETCUT": NETCUT_SOURCE}
    proc = subprocess.run(
        ["unshare", "--net", "bash", "-c", SCRIPT],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    # default + subnet (IPv4); prefix, link-local and default (IPv6)
    assert _lines(out, "BEFORE") == ["5"]
    assert json.loads(_lines(out, "CUT")[0]) == {"kept": ["172.17.0.1"], "deleted": 5}
    assert _lines(out, "LEFT") == ["172.17.0.1 dev eth0 scope link "]
    assert _lines(out, "HOST") == ["alive, seen from 172.17.0.1"]
    assert _lines(out, "ROUTE") == [
        "8.8.8.8 ENETUNREACH",
        "172.17.0.3 ENETUNREACH",
        "fd00:77::5 ENETUNREACH",
        "2001:db8::1 ENETUNREACH",
    ]
    assert _lines(out, "GATEWAY") == ["ECONNREFUSED"]  # this machine stays reachable (README)


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_no_default_route_is_an_error() -> None:
    proc = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", NETCUT_SOURCE],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        "network cut failed: no IPv4 default route: the address the runtime is reached from is"
        " unknown\n"
    )
