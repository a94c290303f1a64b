"""Start-up and tear-down work a TorchCTS run can skip (docs/speed.md).

pytest's unraisableexception plugin runs `gc.collect()` five times when a session's config is torn
down, to turn exceptions raised in `__del__` during that collection into warnings. In a TorchCTS
process that is after every record is written and the terminal summary printed, so nothing would
show them; but a worker holding torch and the OpInfo database spends about 1.1 s of CPU on those
five passes (0.1 s with torch alone), and the controller waits for its workers to exit.
Exceptions raised in `__del__` while a case runs are still reported as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn


def skip_exit_gc(config: Any) -> None:
    """Set pytest's exit-time gc passes to none (pytest >= 8.4 has the setting; older ones lack the loop)."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:
        return
    config.stash[gc_collect_iterations_key] = 0


def exit_now(status: int) -> NoReturn:
    """End the command line's process with `status` once main() has returned, as Python's own exit
    would but without tearing its modules down (~0.5 s with torch imported): threads joined, every
    exit handler run once, Python's and C's buffered output flushed. An output that cannot be
    flushed (a full disk) turns a 0 into 120, as Python's exit does."""
    import threading

    threading._shutdown()  # type: ignore[attr-defined] - what Python's exit does first
    _finish(status)


def exit_without_teardown() -> None:
    """At a worker's interpreter exit, end the process before Python tears its modules down: a
    worker that imported torch and OpInfo's database spends ~1.3 s freeing them, and the controller
    waits for it (execnet's teardown). Armed once the worker's session is over and its results sent
    (engine/plugin.py: pytest_unconfigure); the exit handlers registered before it still run (a
    temporary folder's finalizer, logging's flush, torch's own), those registered after it have run
    already, and a worker's exit status is not its result (xdist reads results from its channel)."""
    import atexit

    def _exit() -> None:
        atexit.unregister(_exit)
        _finish(0)

    register = atexit.register
    register(_exit)

    def once(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
        """A handler registered after the hook runs before it (atexit's order), and not again in it."""
        ran = False

        def handler() -> None:
            nonlocal ran
            if not ran:
                ran = True
                fn(*args, **kwargs)

        register(handler)
        return fn

    atexit.register = once


def _finish(status: int) -> NoReturn:
    import atexit
    import os
    import sys

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            status = status or 120  # Python's own exit status for an output it could not flush
        except ValueError:  # closed: nothing left in it
            pass
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)  # a native library's printf, which os._exit would drop
    except Exception:  # noqa: BLE001, S110 - no C library to ask: Python's streams are flushed
        pass
    os._exit(status)
