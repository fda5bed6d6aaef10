"""litellm's HTTP clients closed with the event loop that made them.

litellm keeps its async clients (each with its pool of open connections) in a process-wide cache, one
per event loop, and never closes those of a loop that has ended: their sockets stay open until the
process exits, or until the cache's time-to-live evicts them and the garbage collector gets to them
(``ResourceWarning: unclosed transport`` in a process that shows such warnings). A model door closes
the ones of its own loop when it is closed (:meth:`agentic_rubrics.llm.door.LLM.aclose`), so that a
run leaves no connection behind; the clients of other loops (a reward scorer's, serving meanwhile in
another thread) are left alone.

This reads litellm's cache as litellm 1.8x lays it out (the loop's token at the end of each key): a
litellm that lays it out otherwise closes nothing here, and everything works as before.
"""

from __future__ import annotations

import contextlib
import inspect
import sys


async def close_loop_clients() -> int:
    """Close litellm's cached clients of the running event loop, and forget them; how many."""
    litellm = sys.modules.get("litellm")
    if litellm is None:  # never imported here: it made no client
        return 0
    try:
        from litellm.caching.evicted_client_closer import running_loop_token

        cache = litellm.in_memory_llm_clients_cache
        keys = [key for key in list(cache.cache_dict) if isinstance(key, str)]
    except (ImportError, AttributeError):
        return 0
    token = running_loop_token()
    if token is None:
        return 0
    mine = [key for key in keys if key.endswith(f"-{token}")]
    for key in mine:
        client = cache.cache_dict.get(key)
        with contextlib.suppress(Exception):
            cache.delete_cache(key)
        close = getattr(client, "aclose", None) or getattr(client, "close", None)
        if close is None:
            continue
        with contextlib.suppress(Exception):  # a client that cannot close is left as it was
            done = close()
            if inspect.isawaitable(done):
                await done
    return len(mine)
