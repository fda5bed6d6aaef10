"""Imported at start-up by every Python process the tests start (tests/leak_guard.py puts this folder
on their PYTHONPATH): a ResourceWarning or an unraisable exception ("Exception ignored in ...") in the
process is appended to the file named by AGENTIC_RUBRICS_TESTS_LEAK_LOG, which the test that started
it reads. The process itself behaves as before (the warning is still printed, nothing is raised): a
child whose stderr goes nowhere, or is not looked at, still cannot leak unseen."""

from __future__ import annotations

import atexit
import gc
import os
import sys
import warnings

_LOG = "AGENTIC_RUBRICS_TESTS_LEAK_LOG"


def _record(text: str) -> None:
    path = os.environ.get(_LOG)
    if not path:
        return
    command = " ".join(sys.orig_argv).replace("\n", "\\n")  # with -c's code, on one line
    head = f"--- pid {os.getpid()}: {command[:300]}\n"
    try:  # one write per record (O_APPEND): processes writing at once do not interleave
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (head + text.rstrip("\n") + "\n").encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


_show = warnings._showwarnmsg_impl  # type: ignore[attr-defined]


def _ray_runtime_loop(msg: warnings.WarningMessage) -> bool:
    """An event loop of Ray's own worker runtime: its core worker makes loops of its own
    (``ray._private.async_compat.get_new_event_loop``, called from ``_raylet``) and never closes them;
    the library's code in a Ray worker runs under ``asyncio.run``, which closes its loop. Seen once at
    a Ray worker's exit on a loaded machine. Every other ResourceWarning of a Ray worker is recorded."""
    worker = sys.argv[0].replace(os.sep, "/").endswith("ray/_private/workers/default_worker.py")
    return worker and str(msg.message).startswith("unclosed event loop")


def _showwarnmsg_impl(msg: warnings.WarningMessage) -> None:
    """A warning shown (one that catch_warnings(record=True) records instead is not shown)."""
    if issubclass(msg.category, ResourceWarning) and not _ray_runtime_loop(msg):
        # with its allocation traceback when the process traces memory (PYTHONTRACEMALLOC=20)
        _record(warnings._formatwarnmsg(msg))  # type: ignore[attr-defined]
    _show(msg)


_hook = sys.unraisablehook


def _unraisablehook(unraisable: sys.UnraisableHookArgs) -> None:
    import traceback
    import tracemalloc

    what = unraisable.err_msg or "Exception ignored in"
    lines = traceback.format_exception(
        unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback
    )
    allocated = tracemalloc.get_object_traceback(unraisable.object)  # None unless tracing
    if allocated is not None:
        lines.append("Object allocated at (most recent call last):\n")
        lines += [line + "\n" for line in allocated.format()]
    _record(f"{what}: {unraisable.object!r}\n{''.join(lines)}")
    _hook(unraisable)


def _install() -> None:
    # ResourceWarnings are ignored by default: shown here, as -X dev shows them
    warnings.filterwarnings("default", category=ResourceWarning)
    warnings._showwarnmsg_impl = _showwarnmsg_impl  # type: ignore[attr-defined]
    sys.unraisablehook = _unraisablehook
    # cycles collected while the hooks still work (not in the interpreter's final teardown)
    atexit.register(gc.collect)


def _chain() -> None:
    """The sitecustomize this one shadows (a distribution's own), run as it would have been."""
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec
    from pathlib import Path

    here = Path(__file__).resolve().parent
    rest = [p for p in sys.path if Path(p or ".").resolve() != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(module_from_spec(spec))


if os.environ.get(_LOG):
    _install()
_chain()
