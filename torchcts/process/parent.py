"""A child dies with its parent, so a killed run leaves no process behind. Two mechanisms:

- `die_with_parent`: Linux's PR_SET_PDEATHSIG, SIGKILL when the parent goes. It fires when the
  *thread* that started the child exits, so it suits a child forked from its worker's main thread.
- `watch_parent`: a daemon thread that polls the parent's pid and exits; for a child started from
  a helper thread (a rank launched by a pool), and where prctl does not exist (macOS).
"""

from __future__ import annotations

import os
import signal
import threading
import time


def die_with_parent() -> None:
    """Linux: this process gets SIGKILL when the thread that started it exits."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def watch_parent(status: int = 3, every_s: float = 0.5) -> None:
    """Exit with `status` once the parent process is gone (polled by a daemon thread)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(status)

    threading.Thread(target=watch, daemon=True, name="parent-watchdog").start()
