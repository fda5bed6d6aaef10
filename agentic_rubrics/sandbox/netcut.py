"""Cut a container's network down to its IPv4 gateway, from inside its network namespace.

Run once by the ``swerex-docker`` sandbox after SWE-ReX's runtime is up, as
``docker exec --privileged --user root CONTAINER PYTHON -c <this file>``: the privileges belong to this
one process, never to the container's own processes (which have neither NET_ADMIN nor NET_RAW).

Every route of every table but ``local`` is deleted, IPv4 and IPv6; then one host route to each IPv4
default gateway is added back. The gateway is this machine's address on the bridge, where the connections
to the published runtime port come from, so the runtime keeps answering; nothing else is routable: not
the internet, not a DNS server, not another container or machine on the bridge or the LAN.

It checks its own work (the routes left, and that public and private addresses are unroutable), prints
one JSON line, and exits 1 with a message on stderr when anything is left. Standalone on purpose: its
source is sent as ``python -c`` and runs on the image's Python (3.7 or later, standard library only).
"""

from __future__ import annotations

import errno
import json
import socket
import struct
import sys

RTM_NEWROUTE, RTM_DELROUTE, RTM_GETROUTE = 24, 25, 26
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE, NLM_F_DUMP = 0x1, 0x4, 0x200, 0x400, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_TABLE = 1, 4, 5, 6, 15
RT_TABLE_MAIN, RT_TABLE_LOCAL = 254, 255
RTPROT_BOOT, RT_SCOPE_LINK, RTN_UNICAST = 3, 253, 1
_HEADER = "=IHHII"  # nlmsghdr: length, type, flags, sequence, port
_RTMSG = "=BBBBBBBBI"  # family, dst_len, src_len, tos, table, protocol, scope, type, flags
# what a deletion needs to name one route; a dump's other attributes (cache info ...) are left out
_KEY_ATTRIBUTES = (RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY, RTA_TABLE)
# unroutable once the cut is done: public addresses (v4, v6) and the private ranges
PROBES = ("192.0.2.1", "1.1.1.1", "10.0.0.1", "172.16.0.1", "192.168.0.1", "2001:4860:4860::8888")


class Route:
    """One route of a dump: its rtmsg fields and the attributes that identify it."""

    def __init__(self, fields: tuple[int, ...], attributes: dict[int, bytes]) -> None:
        self.fields = fields
        self.attributes = attributes
        self.family, self.dst_len = fields[0], fields[1]
        table = attributes.get(RTA_TABLE)
        self.table = struct.unpack("=I", table)[0] if table else fields[4]

    def describe(self) -> str:
        dst = self.attributes.get(RTA_DST)
        where = socket.inet_ntop(self.family, dst) if dst else "default"
        gateway = self.attributes.get(RTA_GATEWAY)
        via = " via " + socket.inet_ntop(self.family, gateway) if gateway else ""
        return f"{where}/{self.dst_len}{via} table {self.table}"

    def key(self) -> bytes:
        """The rtmsg and identifying attributes, as a deletion request's payload."""
        return struct.pack(_RTMSG, *self.fields) + b"".join(
            _attribute(kind, value)
            for kind, value in sorted(self.attributes.items())
            if kind in _KEY_ATTRIBUTES
        )


def _attribute(kind: int, value: bytes) -> bytes:
    data = struct.pack("=HH", 4 + len(value), kind) + value
    return data + b"\0" * (-len(data) % 4)


class Netlink:
    """A rtnetlink socket: requests and their replies, one at a time."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)  # NETLINK_ROUTE
        self.sock.bind((0, 0))
        self.seq = 0

    def __enter__(self) -> Netlink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def request(self, kind: int, flags: int, payload: bytes) -> list[bytes]:
        """Send one request; return the bodies of its replies (raises OSError on a kernel error)."""
        self.seq += 1
        header = struct.pack(_HEADER, 16 + len(payload), kind, flags | NLM_F_REQUEST, self.seq, 0)
        self.sock.send(header + payload)
        bodies: list[bytes] = []
        while True:
            data = self.sock.recv(1 << 20)
            offset = 0
            while offset + 16 <= len(data):
                length, reply, _, seq, _ = struct.unpack_from(_HEADER, data, offset)
                body = data[offset + 16 : offset + length]
                offset += (length + 3) & ~3
                if seq != self.seq:
                    continue
                if reply == NLMSG_DONE:
                    return bodies
                if reply == NLMSG_ERROR:
                    code = struct.unpack_from("=i", body)[0]
                    if code:
                        raise OSError(-code, f"request {kind}: {errno.errorcode.get(-code, code)}")
                    return bodies
                bodies.append(body)

    def routes(self) -> list[Route]:
        """Every route of every table, both families."""
        routes = []
        query = struct.pack(_RTMSG, socket.AF_UNSPEC, 0, 0, 0, 0, 0, 0, 0, 0)
        for body in self.request(RTM_GETROUTE, NLM_F_DUMP, query):
            fields = struct.unpack_from(_RTMSG, body)
            attributes: dict[int, bytes] = {}
            offset = struct.calcsize(_RTMSG)
            while offset + 4 <= len(body):
                length, kind = struct.unpack_from("=HH", body, offset)
                if length < 4:
                    break
                attributes[kind & 0x3FFF] = body[offset + 4 : offset + length]
                offset += (length + 3) & ~3
            routes.append(Route(fields, attributes))
        return routes


def gateways(routes: list[Route]) -> list[tuple[bytes, bytes]]:
    """(gateway, output interface) of each IPv4 default route of the main table."""
    found = []
    for route in routes:
        gateway, oif = route.attributes.get(RTA_GATEWAY), route.attributes.get(RTA_OIF)
        default = route.family == socket.AF_INET and route.dst_len == 0
        if default and route.table == RT_TABLE_MAIN and gateway and oif:
            found.append((gateway, oif))
    return found


def host_route(gateway: bytes, oif: bytes) -> bytes:
    """The payload adding ``gateway/32 dev oif scope link`` to the main table."""
    fields = (socket.AF_INET, 32, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_LINK, RTN_UNICAST, 0)
    return struct.pack(_RTMSG, *fields) + _attribute(RTA_DST, gateway) + _attribute(RTA_OIF, oif)


def routable(address: str) -> bool:
    """Whether the kernel has a route to ``address`` (a UDP connect sends nothing)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((address, 53))
    except OSError as exc:
        unroutable = (
            errno.ENETUNREACH,
            errno.EHOSTUNREACH,
            errno.EADDRNOTAVAIL,
            errno.EAFNOSUPPORT,
        )
        if exc.errno in unroutable:
            return False
        raise
    return True


def cut() -> dict[str, object]:
    """Delete every non-local route, add the gateway host routes back, and check the result."""
    with Netlink() as link:  # closed also when the cut fails
        return _cut(link)


def _cut(link: Netlink) -> dict[str, object]:
    before = link.routes()
    keep = gateways(before)
    if not keep:
        raise RuntimeError(
            "no IPv4 default route: the address the runtime is reached from is unknown"
        )
    deleted = 0
    for route in before:
        if route.table == RT_TABLE_LOCAL:
            continue
        try:
            link.request(RTM_DELROUTE, NLM_F_ACK, route.key())
        except OSError as exc:
            if exc.errno != errno.ESRCH:  # gone with another one
                raise
        deleted += 1
    kept = []
    for gateway, oif in dict(keep).items():
        link.request(RTM_NEWROUTE, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, host_route(gateway, oif))
        kept.append(socket.inet_ntop(socket.AF_INET, gateway))
    left = [r for r in link.routes() if r.table != RT_TABLE_LOCAL]
    expected = {f"{gateway}/32 table {RT_TABLE_MAIN}" for gateway in kept}
    extra = [r.describe() for r in left if r.describe() not in expected]
    reachable = [address for address in PROBES if address not in kept and routable(address)]
    if extra or reachable or len(left) != len(kept):
        raise RuntimeError(f"routes left after the cut: {extra}; routable: {reachable}")
    return {"kept": kept, "deleted": deleted}


def main() -> int:
    """Cut, print the summary as JSON; on failure say why on stderr and return 1."""
    try:
        summary = cut()
    except (OSError, RuntimeError) as exc:
        sys.stderr.write(f"network cut failed: {exc}\n")
        return 1
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
