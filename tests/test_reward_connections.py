"""The reward endpoint's connections are bounded: a client trickling its headers or its body (slowloris)
is cut off at its deadline with a 408, an idle one closed, and past ``max_connections`` a connection is
refused at once with a 503 — while the requests of the others are served."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agentic_rubrics.reward import RewardServer

from .test_reward import _checks_scorer, _post, _score_body


@contextmanager
def _server(tmp_path: Path, **bounds: float) -> Iterator[RewardServer]:
    scorer = _checks_scorer(tmp_path)
    with scorer, RewardServer(scorer, **bounds) as server:  # type: ignore[arg-type]
        yield server


def _connect(server: RewardServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=30)


def _until_closed(sock: socket.socket, limit: float) -> tuple[bytes, float]:
    """What the server sends until it closes the connection, and when it closed it (seconds from
    now); fails when it is still open after ``limit`` seconds."""
    started = time.monotonic()
    sock.settimeout(limit)
    got = b""
    try:
        while chunk := sock.recv(4096):
            got += chunk
    except TimeoutError:
        pytest.fail(f"still open after {limit} s (sent {got[:80]!r})")
    except ConnectionResetError:
        pass
    return got, time.monotonic() - started


def _trickle(sock: socket.socket, data: bytes, every: float, stop: threading.Event) -> None:
    """Send ``data`` a byte every ``every`` seconds until the server hangs up or ``stop``."""
    for byte in data:
        if stop.wait(every):
            return
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return


def test_a_client_trickling_its_headers_or_body_is_cut_off_at_its_deadline(
    tmp_path: Path,
) -> None:
    with _server(tmp_path, header_timeout=1.0, read_timeout=1.0) as server:
        stop = threading.Event()
        cases = {
            # a byte every 0.2 s: each read is quick, the request never ends
            "headers": b"POST /score HTTP/1.1\r\nX-Padding: " + b"a" * 1000,
            "body": b"POST /score HTTP/1.1\r\nContent-Length: 1000\r\n\r\n" + b"{" * 1000,
        }
        socks = {name: _connect(server) for name in cases}
        for name, data in cases.items():
            head = data.index(b"\r\n\r\n") + 4 if name == "body" else 0
            socks[name].sendall(data[:head])
            threading.Thread(
                target=_trickle, args=(socks[name], data[head:], 0.2, stop), daemon=True
            ).start()
        idle = _connect(server)
        # meanwhile a request of another client is served
        status, body, _ = _post(server.url, _score_body())
        assert status == 200 and body["S"] == 1.0
        try:
            for name, sock in socks.items():
                got, took = _until_closed(sock, 15)
                assert took < 10, (name, took)
                assert got.startswith(b"HTTP/1.1 408"), (name, got[:80])
                assert b"not received in time" in got
            got, took = _until_closed(idle, 15)  # sent nothing: closed without a word
            assert got == b"" and took < 10
        finally:
            stop.set()
            for sock in [*socks.values(), idle]:
                sock.close()
        assert _post(server.url, _score_body())[0] == 200


def test_past_max_connections_a_connection_is_refused_at_once(tmp_path: Path) -> None:
    with _server(tmp_path, header_timeout=30.0, max_connections=2) as server:
        held = [_connect(server), _connect(server)]  # two clients that send nothing
        deadline = time.monotonic() + 10
        while server.health()["connections"] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.health()["connections"] == 2
        extra = _connect(server)
        got, took = _until_closed(extra, 10)
        extra.close()
        assert got.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in got and took < 5
        assert json.loads(got.split(b"\r\n\r\n", 1)[1])["error"].startswith("busy")
        try:  # a refused request, never a score: its 503, or the connection gone
            refused: int | None = _post(server.url, _score_body())[0]
        except OSError:
            refused = None
        assert refused in (None, 503)
        # one of the held connections goes: the next client is served
        held.pop().close()
        deadline = time.monotonic() + 10
        while server.health()["connections"] > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        status, body, _ = _post(server.url, _score_body())
        assert status == 200 and body["S"] == 1.0
        held.pop().close()
