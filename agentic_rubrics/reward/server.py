"""The reward over HTTP on 127.0.0.1: ``POST /score`` ``{"instance_id", "patch"}`` → S, coverage, verdicts.

For RL frameworks that call out instead of importing Python. Every request is hostile:

- a connection is bounded (:mod:`agentic_rubrics.reward.connections`): its request line and headers
  arrive within ``header_timeout`` (a slowloris client is cut off: 408, closed), at most
  ``max_connections`` are open at once (one more: 503 with ``Retry-After``, closed at once);
- the body is bounded (``max_body`` bytes: 413 before reading it; no ``Content-Length``: 411; a body
  that does not arrive within ``read_timeout``: 408);
- malformed JSON, a body that is not an object, a missing, extra or mistyped field: 400 naming the
  field; an instance without a task or rubric: 404; another path: 404;
- at most ``concurrency`` requests are scored at once; up to ``queue`` more wait (at most
  ``queue_timeout`` seconds) for a slot; beyond that, or after the wait: 503 with ``Retry-After``;
- the judge's fault handling holds: a model that fails or stalls leaves its items ``missing`` and the
  reward absent (``"S": null`` with ``abstained`` saying why), never a made-up score; an error that
  stops the judge itself (a refused key, an unknown model) is a 502 naming it; a fault of the library
  itself, a 500 (logged);
- :meth:`RewardServer.stop` stops accepting, lets the requests in flight finish (up to ``grace``
  seconds), then closes.

``GET /health`` answers ``{"status": "ok", "judge", "instances", "in_flight", "connections"}``. Responses never hold a
prompt or a model's reply: per item only its status, value and reason codes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from typing import Any, cast

from agentic_rubrics.exceptions import AgenticRubricsError
from agentic_rubrics.reward.connections import BoundedHandler, BoundedHTTPServer
from agentic_rubrics.reward.result import Reward
from agentic_rubrics.reward.scorer import RewardScorer

log = logging.getLogger(__name__)

FIELDS = {"instance_id": "a non-empty string", "patch": "a string (a unified diff)"}
"""The request's fields, both required, no other."""


def reward_json(reward: Reward) -> dict[str, Any]:
    """The response body of one scored patch (``S`` is the reward; ``null``: abstain)."""
    out = reward.model_dump(mode="json")
    out["S"] = out.pop("score")
    return out


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers or {}


def parse_request(raw: bytes) -> tuple[str, str]:
    """``(instance_id, patch)`` from a request body, or a 400 naming what is wrong."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _Refused(400, f"body: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise _Refused(
            400, f"body: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise _Refused(400, "body: nested too deeply") from exc
    if not isinstance(body, dict):
        raise _Refused(400, f"body: expected a JSON object, got {_kind(body)}")
    extra = sorted(str(k) for k in body if k not in FIELDS)
    if extra:
        raise _Refused(
            400, f"unknown field(s) {', '.join(extra)}: expected only instance_id, patch"
        )
    for name, expected in FIELDS.items():
        if name not in body:
            raise _Refused(400, f"{name}: missing (expected {expected})")
        if not isinstance(body[name], str):
            raise _Refused(400, f"{name}: expected {expected}, got {_kind(body[name])}")
    if not body["instance_id"]:
        raise _Refused(400, "instance_id: expected a non-empty string")
    return body["instance_id"], body["patch"]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return _KINDS.get(type(value), type(value).__name__)


_KINDS = {
    bool: "a boolean",
    int: "a number",
    float: "a number",
    str: "a string",
    list: "an array",
    dict: "an object",
}


class _Server(BoundedHTTPServer):
    def __init__(self, owner: RewardServer, port: int) -> None:
        super().__init__(
            ("127.0.0.1", port),
            _Handler,
            header_timeout=owner.header_timeout,
            read_timeout=owner.read_timeout,
            max_connections=owner.max_connections,
        )
        self.owner = owner


class _Handler(BoundedHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # requests are not logged: they hold patches
        pass

    def _send(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if status >= 400 and (status not in (404, 503) or not self._read_body):
            # a body left unread (or malformed) would be taken for the next request: hang up
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(data)

    def do_GET(self) -> None:
        owner = cast(_Server, self.server).owner
        if self.path != "/health":
            self._send(404, {"error": f"{self.path}: not found (GET /health, POST /score)"})
            return
        self._send(200, owner.health())

    _read_body = False

    def do_POST(self) -> None:
        owner = cast(_Server, self.server).owner
        self._read_body = False
        try:
            if self.path != "/score":
                raise _Refused(404, f"{self.path}: not found (POST /score)")
            raw = self._body(owner.max_body)
            instance_id, patch = parse_request(raw)
            if not owner.scorer.knows(instance_id):
                raise _Refused(404, f"instance_id: unknown instance {instance_id!r}")
            reward = owner.scored(instance_id, patch)
        except _Refused as refused:
            self._send(refused.status, {"error": str(refused)}, refused.headers)
            return
        self._send(200, reward_json(reward))

    def _body(self, limit: int) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise _Refused(411, "Transfer-Encoding is not accepted: send Content-Length")
        length = self.headers.get("Content-Length")
        if length is None:
            raise _Refused(411, "Content-Length: required")
        digits = length.strip()
        if not digits.isdigit():
            raise _Refused(400, f"Content-Length: expected a number of bytes, got {length[:40]!r}")
        if len(digits) > len(str(limit)):
            raise _Refused(
                413, f"body: {digits[:40]} bytes, over the limit of {limit} (--max-body)"
            )
        size = int(digits)
        if size > limit:
            raise _Refused(413, f"body: {size} bytes, over the limit of {limit} (--max-body)")
        try:
            raw = self.read_body(size)
        except TimeoutError as exc:
            raise _Refused(408, "body: not received in time") from exc
        if len(raw) < size:
            raise _Refused(400, f"body: {len(raw)} of {size} bytes received")
        self._read_body = True
        return raw


class RewardServer:
    """The reward endpoint over a :class:`RewardScorer`, on 127.0.0.1 (``port`` 0: any free one);
    the bounds in the module's docstring."""

    def __init__(
        self,
        scorer: RewardScorer,
        *,
        port: int = 0,
        max_body: int = 2 * 1024 * 1024,
        concurrency: int = 8,
        queue: int = 64,
        queue_timeout: float = 30.0,
        read_timeout: float = 30.0,
        header_timeout: float = 10.0,
        max_connections: int = 256,
        grace: float = 60.0,
    ) -> None:
        self.scorer = scorer
        self.max_body = max_body
        self.concurrency = concurrency
        self.queue = queue
        self.queue_timeout = queue_timeout
        self.read_timeout = read_timeout
        self.header_timeout = header_timeout
        self.max_connections = max_connections
        self.grace = grace
        self._slots = threading.Semaphore(concurrency)
        self._state = threading.Condition()
        self.admitted = 0
        """Requests scored or waiting for a slot now."""
        self.max_scoring = 0
        """The most requests scored at once (never above ``concurrency``)."""
        self._scoring = 0
        self._draining = False
        self._server = _Server(self, port)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def health(self) -> dict[str, Any]:
        """What ``GET /health`` answers."""
        return {
            "status": "draining" if self._draining else "ok",
            "judge": self.scorer.judge_name,
            "instances": self.scorer.instances(),
            "in_flight": self.admitted,
            "connections": self._server.open_connections,
        }

    def scored(self, instance_id: str, patch: str) -> Reward:
        """Score one patch within the concurrency limit (a 503 when the queue is full or the wait
        runs out, or while stopping; a 502 when the judge itself stops)."""
        busy = {"Retry-After": "1"}
        with self._state:
            if self._draining:
                raise _Refused(503, "the server is stopping", busy)
            if self.admitted >= self.concurrency + self.queue:
                raise _Refused(503, f"busy: {self.admitted} requests in flight or waiting", busy)
            self.admitted += 1
        try:
            if not self._slots.acquire(timeout=self.queue_timeout):
                raise _Refused(503, f"busy: no slot within {self.queue_timeout:g} s", busy)
            try:
                with self._state:
                    self._scoring += 1
                    self.max_scoring = max(self.max_scoring, self._scoring)
                return self.scorer.score(instance_id, patch)
            except AgenticRubricsError as exc:
                log.warning("reward for %s failed: %s", instance_id, exc)
                raise _Refused(502, f"the judge failed: {type(exc).__name__}: {exc}") from exc
            except Exception as exc:  # a fault of ours: logged with its traceback, answered
                log.exception("reward for %s failed", instance_id)
                raise _Refused(500, f"internal error ({type(exc).__name__}); see the log") from exc
            finally:
                with self._state:
                    self._scoring -= 1
                self._slots.release()
        finally:
            with self._state:
                self.admitted -= 1
                self._state.notify_all()

    def start(self) -> RewardServer:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> bool:
        """Stop accepting, let the requests in flight finish (up to ``grace`` seconds), close.
        Returns whether every request in flight finished."""
        with self._state:
            self._draining = True
        self._server.shutdown()
        deadline = time.monotonic() + self.grace
        with self._state:
            while self.admitted and time.monotonic() < deadline:
                self._state.wait(timeout=0.05)
            finished = self.admitted == 0
        self._server.server_close()
        return finished

    def __enter__(self) -> RewardServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
