"""The loopback OpenAI-compatible chat server (a real socket on 127.0.0.1), scriptable per request."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from agentic_rubrics.testing.replies import Reply, Script, completion_body, judge_answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, owner: LoopbackServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner


class _Handler(BaseHTTPRequestHandler):
    """One request: recorded by the server, answered as its script (or the API's refusal) says."""

    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: headers and body are two writes; with Nagle's algorithm the second waits for the
    # client's delayed ACK, about 40 ms per request on a reused connection
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        owner = cast(_Server, self.server).owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = {}
        number = owner.arrived(body, {k.lower(): v for k, v in self.headers.items()}, self.path)
        try:
            reply = owner.refuse(body, self.path) or owner.script(body, number)
            if owner.latency:
                time.sleep(owner.latency)
        finally:
            owner.left()
        if reply.action == "hang":
            owner.stopping.wait(600)
            self.close_connection = True
            return
        if reply.action == "drop":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        data = owner.reply_bytes(reply, body)
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self._send_body(data, reply.trickle, owner.stopping) and reply.status == 200:
            owner.answered_one(number)

    def _send_body(self, data: bytes, trickle: float, stopping: threading.Event) -> bool:
        """Write the body (a byte at a time when trickling); False once the client left."""
        if not trickle:
            self.wfile.write(data)
            return True
        for i in range(len(data)):
            if stopping.wait(trickle):
                return False
            try:
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
            except OSError:  # the client gave up: stop trickling
                self.close_connection = True
                return False
        return True


class LoopbackServer:
    """An OpenAI-compatible chat server on 127.0.0.1 (a real socket), scriptable per request.

    ``requests`` holds every request body received, in arrival order, ``headers`` their headers,
    ``paths`` their paths, ``answered`` the numbers of the requests that got a completion, and
    ``max_in_flight`` the most requests it was working on at once. Subclasses speak other APIs by
    overriding :meth:`refuse` (what the real API rejects before answering), :meth:`success_body` and
    :meth:`error_body`.
    """

    def __init__(self, script: Script | None = None, *, latency: float = 0.0) -> None:
        self.script = script or judge_answer(1)
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.answered: list[int] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        """Set when the server stops: hanging and trickling requests end."""
        self._server = _Server(self)
        # serve_forever looks for a shutdown every poll_interval: at its default (0.5 s) every stop
        # waited up to half a second, which a test suite of a hundred servers pays for
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def arrived(self, body: dict[str, Any], headers: dict[str, str], path: str) -> int:
        """Record a request; its number (arrival order)."""
        with self._lock:
            number = len(self.requests)
            self.requests.append(body)
            self.headers.append(headers)
            self.paths.append(path)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return number

    def left(self) -> None:
        """A request's reply is decided (it no longer counts as in flight)."""
        with self._lock:
            self.in_flight -= 1

    def answered_one(self, number: int) -> None:
        """Request ``number`` got its whole completion."""
        with self._lock:
            self.answered.append(number)

    def reply_bytes(self, reply: Reply, body: dict[str, Any]) -> bytes:
        """The response body a reply sends: raw bytes as scripted, a completion, or an error."""
        if reply.raw is not None:
            raw = reply.raw
            return raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
        if reply.status == 200:
            return json.dumps(self.success_body(reply, body)).encode()
        return json.dumps(self.error_body(reply)).encode()

    def refuse(self, body: dict[str, Any], path: str) -> Reply | None:
        """The error the real API gives this request before any answer (``None``: none)."""
        return None

    def success_body(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        """The response body of an answered request."""
        return completion_body(reply, str(body.get("model", "loopback")))

    def error_body(self, reply: Reply) -> dict[str, Any]:
        """The response body of a refused request."""
        return {"error": {"message": reply.error, "type": "scripted", "code": reply.status}}

    @property
    def url(self) -> str:
        """The ``api_base`` to give litellm."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> LoopbackServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release hanging requests."""
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
