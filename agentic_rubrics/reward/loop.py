"""An event loop in a thread of its own, which synchronous callers in any thread share: a reward
scorer's judge — its model door, limits and response cache — lives in one loop."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


async def _cancel_pending() -> None:
    me = asyncio.current_task()
    rest = [t for t in asyncio.all_tasks() if t is not me]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


class BackgroundLoop:
    """An event loop in a thread of its own: synchronous callers, from any thread, share it (the
    judge's model door, its limits and its cache live in one loop)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="agentic-rubrics-reward", daemon=True
        )
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        """End what is still pending (as ``asyncio.run`` does: the model library's background
        tasks), then the loop and its thread."""
        with contextlib.suppress(Exception):
            self.run(_cancel_pending())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            self.loop.close()
