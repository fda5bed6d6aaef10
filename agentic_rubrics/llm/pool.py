"""litellm in worker processes: its per-call CPU cost (several ms) stops capping a run's throughput.

The main process keeps everything that must be shared (cache, retries, concurrency, budget); each worker
only runs ``litellm.acompletion`` in its own event loop, ended at the call's ``timeout`` however slowly
the answer arrives, and sends back a completion or a classified failure. Requests are spread
round-robin over the workers that run.

A request travels as JSON (the parameters of an HTTP body): a worker can always read it, and a request
that JSON cannot carry (a Python object among the parameters) is made in this process instead
(:class:`Unsendable`), as it would be without workers. Requests are written to a worker's pipe from a
thread of its own, never from the event loop, and a worker that has not answered
:data:`ANSWER_GRACE` seconds past the call's own timeout (which it enforces itself) is taken for
stuck and killed: its calls fail as transient and are retried, and no call goes to it again. Each
worker ends with the process that started it. A pool none of whose workers ever started says why
(:meth:`WorkerPool.start_error`, from their exit codes): the caller stops the run with it.

``processes="auto"`` (the default) starts workers only where they pay, decided by
:class:`agentic_rubrics.llm.pool_auto.AutoPool` from what this process measures. What a worker runs is
:mod:`agentic_rubrics.llm.pool_child`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import multiprocessing as mp
import os
import socket
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from agentic_rubrics.llm.pool_child import READY, STOP, worker_main
from agentic_rubrics.protocols import Completion
from agentic_rubrics.worker_processes import refuse_in_bootstrap, start_failure

log = logging.getLogger(__name__)

START_TIMEOUT = 300.0
"""Seconds to wait for a worker process to start; one that has not started by then takes no calls."""
ANSWER_GRACE = 5.0
"""Seconds past a call's own timeout after which a worker that has not answered is stopped."""


WORKERS = "litellm's worker processes (the model's `processes` setting)"


class Unsendable(Exception):
    """A request a worker cannot receive (not JSON): the caller makes it in its own process."""


class WorkerPool:
    """N worker processes, each running litellm; ``complete`` awaits one call.

    Calls go round-robin to the workers that have started and are still running (a worker that died
    takes no more calls; its calls in flight fail as transient, and are retried).
    """

    def __init__(self, processes: int, *, answer_grace: float = ANSWER_GRACE) -> None:
        refuse_in_bootstrap("starts litellm worker processes (it runs agentic_rubrics)")
        ctx = mp.get_context("spawn")  # a clean interpreter: no inherited event loop or threads
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], int]] = {}
        self._ready = [threading.Event() for _ in range(processes)]
        self._alive = [True] * processes
        self._started = [False] * processes
        self._ended_at_start: dict[int, int | None] = {}  # worker -> exit code: it never started
        # a request is written at once where the worker's pipe has room; what does not fit is written by
        # a thread of that worker's (a worker that stops reading fills its pipe, and the write would
        # otherwise block the event loop, and every deadline with it); while that thread has bytes to
        # write, later requests queue behind it, so frames never interleave
        self._senders = [
            ThreadPoolExecutor(1, thread_name_prefix="model-worker-send") for _ in range(processes)
        ]
        self._queued = [0] * processes
        self._socks: list[socket.socket] = []
        self._ids = itertools.count()
        self.answer_grace = answer_grace
        """Seconds past a call's timeout after which a worker that has not answered is stopped."""
        self.calls = 0
        """Calls sent to the workers."""
        self.answered = 0
        """Calls the workers answered (a completion or a classified failure)."""
        for _ in range(processes):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(child,), daemon=True)
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
            # the same socket (a duplicate of its descriptor), for writes that must not wait
            self._socks.append(socket.socket(fileno=os.dup(parent.fileno())))
        for index, conn in enumerate(self._conns):
            threading.Thread(target=self._read, args=(index, conn), daemon=True).start()

    def _read(self, index: int, conn: Connection) -> None:
        from agentic_rubrics.exceptions import CallFailed

        while True:
            try:
                rid, ok, payload = conn.recv()
            except (EOFError, OSError):
                break
            if rid == READY:
                self._started[index] = True
                self._ready[index].set()
                continue
            entry = self._pending.pop(rid, None)
            if entry is None:
                continue
            loop, future, _ = entry
            self.answered += 1
            if ok:
                result: Any = Completion.model_validate(payload)
            else:
                kind, message, retry_after = payload
                result = CallFailed(kind, message, retry_after=retry_after)
            loop.call_soon_threadsafe(_settle, future, result)
        # the worker is gone: its requests will never be answered, and nobody should wait for it
        if not self._started[index]:
            proc = self._procs[index]
            proc.join(5)  # its pipe closes as it exits: its exit code follows at once
            self._ended_at_start[index] = proc.exitcode
        self._alive[index] = False
        self._ready[index].set()
        for rid, (loop, future, owner) in list(self._pending.items()):
            if owner == index:
                self._pending.pop(rid, None)
                failure = CallFailed("transient", "a model worker process exited")
                loop.call_soon_threadsafe(_settle, future, failure)

    def _serving(self) -> list[int]:
        return [i for i, e in enumerate(self._ready) if e.is_set() and self._alive[i]]

    def is_ready(self) -> bool:
        """Whether every worker has started (or ended: then it is not waited for)."""
        return all(event.is_set() for event in self._ready)

    @property
    def running(self) -> int:
        """Workers that have started and still run (the ones calls go to)."""
        return len(self._serving())

    def is_serving(self) -> bool:
        """Whether some worker has started and still runs (calls can go to the pool)."""
        return self.running > 0

    def start_error(self) -> str | None:
        """Why no worker could start, once every one has ended without starting (``None`` while one
        has started or may still start): read from their exit codes."""
        if len(self._ended_at_start) < len(self._procs):
            return None
        return start_failure(WORKERS, self._ended_at_start.values())

    async def ready(self) -> None:
        """Wait until every worker has started (imported litellm): calls' deadlines start after."""
        for event in self._ready:
            if not event.is_set():
                await asyncio.to_thread(event.wait, START_TIMEOUT)

    async def complete(self, kwargs: dict[str, Any]) -> Completion:
        """Send one call to a worker and await its completion (or its classified failure).

        Raises:
            Unsendable: JSON cannot carry the request (nothing was sent).
            CallFailed: no worker runs, the worker died, or it did not answer in time (then it is
                stopped).
        """
        from agentic_rubrics.exceptions import CallFailed

        rid = next(self._ids)
        try:
            data = json.dumps([rid, kwargs]).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError, RecursionError) as exc:
            raise Unsendable(f"the request cannot be sent to a worker process: {exc}") from exc
        frame = _frame(data)
        serving = self._serving()
        if not serving:
            raise CallFailed("transient", "no model worker process is running")
        self.calls += 1
        index = serving[rid % len(serving)]
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[rid] = (loop, future, index)
        limit = float(kwargs.get("timeout") or START_TIMEOUT) + self.answer_grace
        try:
            async with asyncio.timeout(limit):
                await self._write(loop, index, frame)
                result: Completion = await future
        except TimeoutError as exc:  # before OSError, of which it is a subclass
            self._stop(index)
            raise CallFailed(
                "transient", f"a model worker process gave no answer within {limit:g} s: stopped"
            ) from exc
        except OSError as exc:
            raise CallFailed("transient", f"a model worker process is gone: {exc!r}") from exc
        finally:
            self._pending.pop(rid, None)  # answered, failed or abandoned: forget it
        return result

    async def _write(self, loop: asyncio.AbstractEventLoop, index: int, frame: bytes) -> None:
        """Write one frame to a worker: at once what its pipe takes, the rest from its thread."""
        sent = 0
        if not self._queued[index]:
            with contextlib.suppress(BlockingIOError):
                sent = self._socks[index].send(frame, socket.MSG_DONTWAIT)
        if sent == len(frame):
            return
        self._queued[index] += 1
        job = self._senders[index].submit(self._socks[index].sendall, frame[sent:])
        # counted down when the thread is done, not when this call is, and never cancelled: a call
        # abandoned meanwhile (its deadline, a caller's cancel) leaves the rest of a frame whose head
        # is out to be written whole, and nothing may be written beside it until then
        job.add_done_callback(lambda _: self._unqueue_soon(loop, index))
        written = asyncio.wrap_future(job, loop=loop)
        # a call that stopped waiting has failed on its own: the write's own failure (the worker
        # killed meanwhile) is taken here, not left for asyncio to print as never retrieved
        written.add_done_callback(lambda f: f.cancelled() or f.exception())
        await asyncio.shield(written)

    def _unqueue_soon(self, loop: asyncio.AbstractEventLoop, index: int) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing writes any more
            loop.call_soon_threadsafe(self._unqueue, index)

    def _unqueue(self, index: int) -> None:
        self._queued[index] -= 1

    def _send_quietly(self, index: int, data: bytes) -> None:
        with contextlib.suppress(OSError):
            self._socks[index].sendall(_frame(data))

    def _stop(self, index: int) -> None:
        """A worker that does not answer: killed (its reader then fails its calls in flight)."""
        self._alive[index] = False
        proc = self._procs[index]
        if proc.is_alive():
            log.warning("a model worker process (pid %s) gave no answer in time: stopped", proc.pid)
            proc.kill()

    async def close(self) -> None:
        """Ask the workers to stop, then make sure they did."""
        for index, sender in enumerate(self._senders):
            if self._alive[
                index
            ]:  # from its sender thread: a worker that stopped reading is killed
                sender.submit(self._send_quietly, index, STOP)
        for proc in self._procs:
            await asyncio.to_thread(proc.join, 5)
            if proc.is_alive():
                proc.kill()
                await asyncio.to_thread(proc.join, 5)
            with contextlib.suppress(ValueError):  # still running after a kill: left to the OS
                proc.close()  # its pipes now, not at the next garbage collection
        for conn, sock in zip(self._conns, self._socks, strict=True):
            conn.close()
            sock.close()
        for sender in self._senders:
            sender.shutdown(wait=False, cancel_futures=True)


def _frame(data: bytes) -> bytes:
    """``data`` as :meth:`multiprocessing.connection.Connection.recv_bytes` reads it: its length
    (a signed 32-bit big-endian integer), then the bytes."""
    if len(data) > 0x7FFFFFFF:
        raise Unsendable(f"a request of {len(data)} bytes is larger than a worker reads")
    return struct.pack("!i", len(data)) + data


def _settle(future: asyncio.Future[Any], result: Any) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
        future.exception()  # a call that stopped waiting meanwhile has already failed on its own
    else:
        future.set_result(result)
