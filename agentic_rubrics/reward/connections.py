"""HTTP connections held to deadlines and a cap, for the reward endpoint (:mod:`agentic_rubrics.reward.server`).

A thread per connection (``http.server``) is simple and enough on loopback, and it is what a slow or
hostile client attacks: a socket timeout bounds each read, not a request, so a client sending a byte of
its headers every few seconds (slowloris) held a thread for ever, and a few hundred of them held the
server. Here:

- every read of a connection is bounded by what is left of a deadline (:class:`DeadlineReader`): the
  request line and headers must arrive within ``header_timeout`` of the connection's start (or of the
  end of its previous response: an idle kept-alive connection closes then too), the body within
  ``read_timeout`` of the headers' end. A request cut short gets a 408 and the connection is closed;
  an idle connection is closed without a word (a 408 there would answer the client's next request);
- at most ``max_connections`` connections are open at once (:class:`BoundedHTTPServer`): one more is
  answered a 503 with ``Retry-After`` and closed, at once, by the accepting thread — no thread, no
  read — so the connections being served keep theirs.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def raw_response(status: str, error: str, *headers: str) -> bytes:
    """A whole HTTP/1.1 response with a JSON error body that closes the connection."""
    body = json.dumps({"error": error}).encode()
    head = [f"HTTP/1.1 {status}", "Content-Type: application/json", *headers, "Connection: close"]
    return ("\r\n".join([*head, f"Content-Length: {len(body)}", "", ""])).encode() + body


REFUSAL = raw_response(
    "503 Service Unavailable", "busy: too many open connections; retry", "Retry-After: 1"
)
"""What a connection over the cap is sent before it is closed."""

TIMED_OUT = raw_response("408 Request Timeout", "request not received in time")
"""What a request whose headers did not arrive in time is sent before its connection is closed."""


class DeadlineReader(io.RawIOBase):
    """A connection's bytes, each read bounded by what is left of the current deadline (none: by the
    idle timeout). Past the deadline a read raises ``TimeoutError``, however the bytes trickle."""

    def __init__(self, sock: socket.socket, idle: float) -> None:
        self.sock = sock
        self.idle = idle
        self.deadline: float | None = None
        self.received = 0
        """Bytes read since the deadline was set."""
        self.expired = False
        """A read ran into the deadline."""

    def arm(self, seconds: float | None) -> None:
        """Bound the reads to come by ``seconds`` from now (``None``: the idle timeout per read)."""
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.received = 0
        self.expired = False
        self.sock.settimeout(self.idle)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.expired = True
                raise TimeoutError("deadline passed")
            self.sock.settimeout(left)
        try:
            got = self.sock.recv_into(buffer)
        except TimeoutError:
            self.expired = self.deadline is not None
            raise
        self.received += got
        return got


class BoundedHandler(BaseHTTPRequestHandler):
    """A request handler whose request line and headers arrive within the server's
    ``header_timeout``; :meth:`read_body` reads a body within its ``read_timeout``."""

    reader: DeadlineReader

    def setup(self) -> None:
        super().setup()
        limits = self._limits()
        self.rfile.close()  # http.server's buffered file: replaced by one over the deadline reader
        self.reader = DeadlineReader(self.connection, limits.read_timeout)
        self.rfile = io.BufferedReader(self.reader)
        self.connection.settimeout(limits.read_timeout)

    def _limits(self) -> BoundedHTTPServer:
        server = self.server
        assert isinstance(server, BoundedHTTPServer)
        return server

    def handle_one_request(self) -> None:
        self.reader.arm(self._limits().header_timeout)
        self._answered = False
        super().handle_one_request()
        if self.reader.expired:
            self.close_connection = True
            if self.reader.received and not self._answered:  # a request was cut short
                with contextlib.suppress(OSError):
                    self.wfile.write(TIMED_OUT)

    def parse_request(self) -> bool:
        done = super().parse_request()
        self.reader.arm(None)  # the headers are in: no deadline until the body is read
        return done

    def send_response(self, code: int, message: str | None = None) -> None:
        self._answered = True
        super().send_response(code, message)

    def read_body(self, size: int) -> bytes:
        """``size`` bytes of body, within ``read_timeout`` of now (``TimeoutError`` past it)."""
        self.reader.arm(self._limits().read_timeout)
        try:
            return self.rfile.read(size)
        finally:
            self.reader.arm(None)


class BoundedHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server with at most ``max_connections`` open connections (see the module's
    docstring); ``open_connections`` counts them."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BoundedHandler],
        *,
        header_timeout: float,
        read_timeout: float,
        max_connections: int,
    ) -> None:
        self.header_timeout = header_timeout
        self.read_timeout = read_timeout
        self.max_connections = max_connections
        self.open_connections = 0
        self.refused_connections = 0
        self._count = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._count:
            full = self.open_connections >= self.max_connections
            if full:
                self.refused_connections += 1
            else:
                self.open_connections += 1
        if full:
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._closed()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._closed()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up or ran out of time is no fault of the server's: nothing printed."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)

    def _closed(self) -> None:
        with self._count:
            self.open_connections -= 1

    def _refuse(self, request: socket.socket) -> None:
        """Answer 503 without waiting for anything (a full send buffer: the bytes are dropped) and
        close; the accepting thread does it, so it never blocks on a client."""
        with contextlib.suppress(OSError):
            request.setblocking(False)
            request.send(REFUSAL)
        self.shutdown_request(request)
