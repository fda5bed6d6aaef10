"""Fakes that ship with the package: real implementations of the model interface, for tests and dry runs.

- :class:`LoopbackServer`: an OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1, scriptable
  per request (answers, native tool calls, reasoning, status codes with headers, hangs, dropped
  connections, latency, raw bodies, bodies trickled a byte at a time). Point any litellm model
  ``openai/<name>`` (or ``hosted_vllm/<name>``) at it with ``api_base=server.url``: requests go through
  litellm's real request building and HTTP path.
- :class:`AnthropicServer`: the same for Anthropic's Messages API (``/v1/messages``), refusing what the
  real API refuses (a temperature other than 1 with extended thinking, ``max_tokens`` not above the
  thinking budget ...); point ``anthropic/<model>`` at it.
- :func:`register_script`: a litellm ``CustomLLM`` registered as the ``local`` provider, so
  ``model="local/<name>"`` is answered by Python code, in process, through the same door as real models.
- :func:`judge_answer`: a reply function that answers every item a judge prompt asks about;
  :func:`fake_model`: one that plays every role (rubric agent, issue-only writer, judge, classifier).

Run a server in its own process: ``python -m agentic_rubrics.testing serve --latency 0.2``.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from typing import Any

from agentic_rubrics.testing.agent import fake_model
from agentic_rubrics.testing.anthropic import AnthropicServer
from agentic_rubrics.testing.provider import register_script, scripted_calls
from agentic_rubrics.testing.replies import (
    Reply,
    Script,
    completion_body,
    judge_answer,
    message_text,
    requested_ids,
)
from agentic_rubrics.testing.server import LoopbackServer

__all__ = [
    "AnthropicServer",
    "LoopbackServer",
    "Reply",
    "Script",
    "completion_body",
    "fake_model",
    "judge_answer",
    "main",
    "message_text",
    "register_script",
    "requested_ids",
    "scripted_calls",
    "serve_in_subprocess",
]

# --------------------------------------------------------------------------- command line


@contextlib.contextmanager
def serve_in_subprocess(latency: float = 0.0) -> Iterator[tuple[Any, str]]:
    """``python -m agentic_rubrics.testing serve`` in its own process, as ``(process, URL)``; killed,
    reaped and its pipe closed on leaving.

    Benchmarks use it so the server's work does not count against the process being measured.
    """
    import subprocess
    import sys

    with subprocess.Popen(
        [sys.executable, "-m", "agentic_rubrics.testing", "serve", "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        try:
            yield proc, proc.stdout.readline().strip()
        finally:
            proc.kill()


def main(argv: list[str] | None = None) -> int:
    """``python -m agentic_rubrics.testing serve``: a loopback server that plays every role of a run
    (rubric agent, issue-only writer, judge answering ``--value``, classifier)."""
    parser = argparse.ArgumentParser(prog="python -m agentic_rubrics.testing")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve a fake model on 127.0.0.1 until killed")
    serve.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    serve.add_argument("--value", type=int, choices=(0, 1), default=1, help="the judge's verdicts")
    args = parser.parse_args(argv)
    server = LoopbackServer(fake_model(args.value), latency=args.latency).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0
