"""litellm in worker processes: its per-call CPU cost (several ms) stops capping a run's throughput.

The main process keeps everything that must be shared (cache, retries, concurrency, budget); each worker
only runs ``litellm.acompletion`` in its own event loop, ended at the call's ``timeout`` however slowly
the answer arrives, and sends back a completion or a classified failure. Requests are spread
round-robin.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing as mp
import threading
from multiprocessing.connection import Connection
from typing import Any

from agentic_rubrics.types import Completion

_READY = -1
"""The request number a worker sends once it has started."""
START_TIMEOUT = 300.0
"""Seconds to wait for a worker process to start before calls go to it regardless."""


def _worker(conn: Connection) -> None:  # pragma: no cover - runs in a child process
    from agentic_rubrics.llm import classify, import_litellm
    from agentic_rubrics.llm_reply import to_completion

    litellm = import_litellm()
    loop = asyncio.new_event_loop()
    send_lock = threading.Lock()
    with send_lock:
        conn.send((_READY, True, None))  # start-up (importing litellm) is over: deadlines may start

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
                message = conn.recv()
            except (EOFError, OSError):
                break
            if message is None:
                break
            loop.call_soon_threadsafe(_spawn, loop, handle(*message))
        loop.call_soon_threadsafe(loop.stop)

    threading.Thread(target=reader, daemon=True).start()
    loop.run_forever()


class WorkerPool:
    """N worker processes, each running litellm; ``complete`` awaits one call."""

    def __init__(self, processes: int) -> None:
        ctx = mp.get_context("spawn")  # a clean interpreter: no inherited event loop or threads
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._locks: list[threading.Lock] = []
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], int]] = {}
        self._ready = [threading.Event() for _ in range(processes)]
        self._ids = itertools.count()
        for _ in range(processes):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child,), daemon=True)
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
            self._locks.append(threading.Lock())
        for index, conn in enumerate(self._conns):
            threading.Thread(target=self._read, args=(index, conn), daemon=True).start()

    def _read(self, index: int, conn: Connection) -> None:
        from agentic_rubrics.llm import CallFailed

        while True:
            try:
                rid, ok, payload = conn.recv()
            except (EOFError, OSError):
                break
            if rid == _READY:
                self._ready[index].set()
                continue
            entry = self._pending.pop(rid, None)
            if entry is None:
                continue
            loop, future, _ = entry
            if ok:
                result: Any = Completion.model_validate(payload)
            else:
                kind, message, retry_after = payload
                result = CallFailed(kind, message, retry_after=retry_after)
            loop.call_soon_threadsafe(_settle, future, result)
        # the worker is gone: its requests will never be answered, and nobody should wait for it
        self._ready[index].set()
        for rid, (loop, future, owner) in list(self._pending.items()):
            if owner == index:
                self._pending.pop(rid, None)
                failure = CallFailed("transient", "a model worker process exited")
                loop.call_soon_threadsafe(_settle, future, failure)

    async def ready(self) -> None:
        """Wait until every worker has started (imported litellm): calls' deadlines start after."""
        for event in self._ready:
            if not event.is_set():
                await asyncio.to_thread(event.wait, START_TIMEOUT)

    async def complete(self, kwargs: dict[str, Any]) -> Completion:
        """Send one call to a worker and await its completion (or its classified failure)."""
        rid = next(self._ids)
        index = rid % len(self._conns)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[rid] = (loop, future, index)
        try:
            with self._locks[index]:
                self._conns[index].send((rid, kwargs))
        except OSError as exc:
            from agentic_rubrics.llm import CallFailed

            self._pending.pop(rid, None)
            raise CallFailed("transient", f"a model worker process is gone: {exc}") from exc
        try:
            result: Completion = await future
        finally:
            self._pending.pop(rid, None)  # abandoned at the door's deadline: forget it
        return result

    async def close(self) -> None:
        """Ask the workers to stop, then make sure they did."""
        for lock, conn in zip(self._locks, self._conns, strict=True):
            with lock, contextlib.suppress(OSError):
                conn.send(None)
        for proc in self._procs:
            await asyncio.to_thread(proc.join, 5)
            if proc.is_alive():
                proc.terminate()
        for conn in self._conns:
            conn.close()


def _spawn(loop: asyncio.AbstractEventLoop, coro: Any) -> None:  # pragma: no cover - in a worker
    loop.create_task(coro)


def _settle(future: asyncio.Future[Any], result: Any) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)
