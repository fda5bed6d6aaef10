"""What a litellm worker process runs: its own event loop, ``litellm.acompletion`` per request, the
answer or a classified failure sent back (see :mod:`agentic_rubrics.llm.pool`)."""

from __future__ import annotations

import asyncio
import json
import threading
from multiprocessing.connection import Connection
from typing import Any

READY = -1
"""The request number a worker sends once it has started."""
STOP = b""
"""What the pool writes to a worker's pipe to end it."""


def worker_main(conn: Connection) -> None:  # pragma: no cover - runs in a child process
    from agentic_rubrics.llm.clients import close_loop_clients
    from agentic_rubrics.llm.errors import classify
    from agentic_rubrics.llm.params import import_litellm
    from agentic_rubrics.llm.reply import to_completion
    from agentic_rubrics.worker_processes import exit_with_parent

    exit_with_parent()
    litellm = import_litellm()
    loop = asyncio.new_event_loop()
    send_lock = threading.Lock()
    with send_lock:
        conn.send((READY, True, None))  # start-up (importing litellm) is over: deadlines may start

    priced: set[str] = set()

    async def handle(rid: int, kwargs: dict[str, Any]) -> None:
        price = kwargs.pop("_price", None)
        if price and kwargs["model"] not in priced:
            litellm.register_model(price)  # a price set in the configuration holds here too
            priced.add(kwargs["model"])
        try:
            # the whole call ends at its timeout, however slowly the answer trickles in
            async with asyncio.timeout(kwargs.get("timeout")):
                response = await litellm.acompletion(**kwargs)
            out: tuple[Any, ...] = (
                rid,
                True,
                to_completion(response, litellm, kwargs["model"]).model_dump(),
            )
        except TimeoutError:
            message = f"no complete answer within {kwargs.get('timeout')} s"
            out = (rid, False, ("transient", message, None))
        except Exception as exc:
            failure = classify(exc)
            out = (rid, False, (failure.kind, str(failure), failure.retry_after))
        with send_lock:
            conn.send(out)

    def reader() -> None:
        while True:
            try:
                message = conn.recv_bytes()
            except (EOFError, OSError):
                break
            if message == STOP:
                break
            try:
                rid, kwargs = json.loads(message)  # the pool's own JSON
            except (ValueError, RecursionError) as exc:  # nested deeper than this decoder goes
                try:
                    rid = int(message[1 : message.index(b",")])
                except ValueError:
                    continue  # not the pool's framing: nobody waits for an answer to it
                with send_lock:
                    conn.send((rid, False, ("bad_request", f"unreadable request: {exc}", None)))
                continue
            loop.call_soon_threadsafe(_spawn, loop, handle(rid, kwargs))
        loop.call_soon_threadsafe(loop.stop)

    threading.Thread(target=reader, daemon=True).start()
    loop.run_forever()
    # as asyncio.run ends: litellm's connections of this loop closed with it, then the loop
    loop.run_until_complete(close_loop_clients())
    loop.close()


def _spawn(loop: asyncio.AbstractEventLoop, coro: Any) -> None:  # pragma: no cover - in a worker
    loop.create_task(coro)
