"""Start-up and tear-down work a TorchCTS run can skip (docs/speed.md).

pytest's unraisableexception plugin runs `gc.collect()` five times when a session's config is torn
down, to turn exceptions raised in `__del__` during that collection into warnings. In a TorchCTS
process that is after every record is written and the terminal summary printed, so nothing would
show them; but a worker holding torch and the OpInfo database spends about 1.1 s of CPU on those
five passes (0.1 s with torch alone), and the controller waits for its workers to exit.
Exceptions raised in `__del__` while a case runs are still reported as before.
"""

from __future__ import annotations

from typing import Any


def skip_exit_gc(config: Any) -> None:
    """Set pytest's exit-time gc passes to none (pytest >= 8.4 has the setting; older ones lack the loop)."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:
        return
    config.stash[gc_collect_iterations_key] = 0


def exit_without_teardown(status: int = 0) -> None:
    """At interpreter exit, end the process before Python tears its modules down: a worker that
    imported torch and OpInfo's database spends ~1.3 s freeing them, and the controller waits for it
    (execnet's teardown). Called once the worker's session is over and its results sent; every other
    exit handler still runs first (temporary folders' finalizers, logging's flush, torch's own), and
    a worker's exit status is not its result (xdist reads results from its channel). The command
    line's process does the same with its own exit `status` once main() has returned (~0.5 s)."""
    import atexit
    import os
    import sys

    def _exit() -> None:
        atexit.unregister(_exit)
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed stream has nothing left to lose
                pass
        os._exit(status)

    atexit.register(_exit)
