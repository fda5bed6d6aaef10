"""Fakes that ship with the package: real implementations of the model interface, for tests and dry runs.

- :class:`LoopbackServer`: an OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1, scriptable
  per request (answers, status codes with headers, hangs, dropped connections, latency, raw bodies, bodies
  trickled a byte at a time). Point any
  litellm model ``openai/<name>`` at it with ``api_base=server.url``: requests go through litellm's real
  HTTP path.
- :class:`ScriptedProvider`: a litellm ``CustomLLM`` registered as the ``local`` provider, so
  ``model="local/<name>"`` is answered by Python code, in process, through the same door as real models.
- :func:`judge_answer`: a reply function that answers every item a judge prompt asks about.

Run a server in its own process: ``python -m agentic_rubrics.testing serve --latency 0.2``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# --------------------------------------------------------------------------- replies


@dataclass
class Reply:
    """What the fake server (or provider) answers to one request.

    ``action`` ``"hang"`` never answers (until the server stops); ``"drop"`` closes the connection
    without a response. ``status`` other than 200 sends ``error`` as an OpenAI-style error body.
    ``raw`` replaces the body the server would build (malformed JSON, ``"choices": []`` ...);
    ``trickle`` sends the body one byte every ``trickle`` seconds (the loopback server only).
    """

    content: str | None = ""
    finish_reason: str = "stop"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error: str = "scripted error"
    refusal: str | None = None
    action: str | None = None
    prompt_tokens: int = 100
    completion_tokens: int = 20
    logprobs: list[Any] | None = None
    raw: str | bytes | None = None
    trickle: float = 0.0


Script = Callable[[dict[str, Any], int], Reply]
"""``script(request_body, request_number)`` -> the reply; request numbers start at 0."""

_ITEM_IDS = re.compile(r"Answer for exactly these item ids: (\[[^\n]*\])")


def requested_ids(body: dict[str, Any]) -> list[str]:
    """The item ids a judge prompt asks about (the judge template lists them as a JSON list)."""
    text = str((body.get("messages") or [{}])[-1].get("content") or "")
    found = _ITEM_IDS.findall(text)
    if not found:
        return []
    ids = json.loads(found[-1])
    return [str(i) for i in ids]


def judge_answer(value: int | Callable[[str], Any] = 1, *, fenced: bool = True) -> Script:
    """A script answering every requested item with ``value`` (or ``value(item_id)``), as JSON."""

    def script(body: dict[str, Any], _: int) -> Reply:
        answer = {i: value(i) if callable(value) else value for i in requested_ids(body)}
        text = json.dumps(answer)
        return Reply(content=f"Verdicts:\n```json\n{text}\n```" if fenced else text)

    return script


def completion_body(reply: Reply, model: str) -> dict[str, Any]:
    """An OpenAI chat.completion response body for ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.refusal is not None:
        message["refusal"] = reply.refusal
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": reply.finish_reason}
    if reply.logprobs is not None:
        choice["logprobs"] = {"content": reply.logprobs}
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


# --------------------------------------------------------------------------- the loopback server


class LoopbackServer:
    """An OpenAI-compatible chat server on 127.0.0.1 (a real socket), scriptable per request.

    ``requests`` holds every request body received, in arrival order, ``headers`` their headers,
    ``answered`` the numbers of the requests that got a completion, and ``max_in_flight`` the most
    requests it was working on at once.
    """

    def __init__(self, script: Script | None = None, *, latency: float = 0.0) -> None:
        self.script = script or judge_answer(1)
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.answered: list[int] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = {}
                with server._lock:
                    number = len(server.requests)
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server.script(body, number)
                    if server.latency:
                        time.sleep(server.latency)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                if reply.action == "hang":
                    server._stop.wait(600)
                    self.close_connection = True
                    return
                if reply.action == "drop":
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.raw is not None:
                    custom = reply.raw
                    data = (
                        custom.encode("utf-8", "surrogatepass")
                        if isinstance(custom, str)
                        else custom
                    )
                elif reply.status == 200:
                    payload = completion_body(reply, str(body.get("model", "loopback")))
                    data = json.dumps(payload).encode()
                else:
                    error = {"message": reply.error, "type": "scripted", "code": reply.status}
                    data = json.dumps({"error": error}).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if not self._send_body(data, reply.trickle):
                    return
                if reply.status == 200:
                    with server._lock:
                        server.answered.append(number)

            def _send_body(self, data: bytes, trickle: float) -> bool:
                """Write the body (a byte at a time when trickling); False once the client left."""
                if not trickle:
                    self.wfile.write(data)
                    return True
                for i in range(len(data)):
                    if server._stop.wait(trickle):
                        return False
                    try:
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up: stop trickling
                        self.close_connection = True
                        return False
                return True

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

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
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- the in-process provider

_PROVIDER_LOCK = threading.Lock()
_SCRIPTS: dict[str, Script] = {}
_CALLS: dict[str, list[dict[str, Any]]] = {}


def register_script(model: str, script: Script) -> str:
    """Answer ``model`` (e.g. ``"local/judge-all-ones"``) with ``script``; returns the model string.

    The ``local`` provider is registered with litellm on first use, and the model is registered with
    a zero price so that cost lookup works (it is a fake: it costs nothing).
    """
    if not model.startswith("local/"):
        raise ValueError("scripted models are named local/<name>")
    with _PROVIDER_LOCK:
        _SCRIPTS[model.removeprefix("local/")] = script
        _CALLS[model.removeprefix("local/")] = []
    _install_provider(model)
    return model


def scripted_calls(model: str) -> list[dict[str, Any]]:
    """Request bodies the scripted ``model`` has received."""
    return _CALLS.get(model.removeprefix("local/"), [])


def _install_provider(model: str) -> None:
    from agentic_rubrics.llm import import_litellm

    litellm = import_litellm()
    from litellm import CustomLLM, ModelResponse

    class ScriptedProvider(CustomLLM):  # type: ignore[misc]  # litellm is untyped here
        """Routes ``local/<name>`` to the registered script."""

        def _answer(self, model: str, messages: list[Any], optional_params: dict[str, Any]) -> Any:
            name = model.removeprefix("local/")
            script = _SCRIPTS.get(name)
            if script is None:
                raise ValueError(f"no script registered for local/{name}")
            body = {"model": model, "messages": messages, **optional_params}
            with _PROVIDER_LOCK:
                number = len(_CALLS.setdefault(name, []))
                _CALLS[name].append(body)
            reply = script(body, number)
            if reply.status != 200:
                from litellm.llms.custom_llm import CustomLLMError

                raise CustomLLMError(status_code=reply.status, message=reply.error)
            return ModelResponse(**completion_body(reply, model))

        def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            return self._answer(model, messages, kwargs.get("optional_params") or {})

        async def acompletion(
            self, model: str, messages: list[Any], *args: Any, **kwargs: Any
        ) -> Any:
            return self._answer(model, messages, kwargs.get("optional_params") or {})

    with _PROVIDER_LOCK:
        if not any(p.get("provider") == "local" for p in litellm.custom_provider_map):
            litellm.custom_provider_map = [
                *litellm.custom_provider_map,
                {"provider": "local", "custom_handler": ScriptedProvider()},
            ]
            from litellm.utils import custom_llm_setup

            custom_llm_setup()
        litellm.register_model(
            {
                model: {
                    "litellm_provider": "local",
                    "mode": "chat",
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "max_tokens": 1_000_000,
                }
            }
        )


# --------------------------------------------------------------------------- command line


def serve_in_subprocess(latency: float = 0.0) -> tuple[Any, str]:
    """Start ``python -m agentic_rubrics.testing serve`` in its own process; return it and its URL.

    Benchmarks use it so the server's work does not count against the process being measured.
    """
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "agentic_rubrics.testing", "serve", "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def main(argv: list[str] | None = None) -> int:
    """``python -m agentic_rubrics.testing serve``: a loopback server answering judge prompts with 1."""
    parser = argparse.ArgumentParser(prog="python -m agentic_rubrics.testing")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve judge answers on 127.0.0.1 until killed")
    serve.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    serve.add_argument("--value", type=int, choices=(0, 1), default=1)
    args = parser.parse_args(argv)
    server = LoopbackServer(judge_answer(args.value), latency=args.latency).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
