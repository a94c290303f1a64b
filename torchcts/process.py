"""Child processes, the parts every kind shares (issue 42 item 3): how a dead process is described,
and how a child dies with its parent.

Three kinds of child run device code: a forked case (engine/case_process.py), the ranks of a
distributed case (cases/ranks.py, cases/rank_worker.py) and the warm server's workers
(engine/zygote/). Each says why its process ended the same way (`signal_name`, `exit_fields`), and
none outlives a killed run:

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
from typing import Any


def signal_name(number: int) -> str:
    """SIGSEGV, or "signal 34" for one Python cannot name (real-time signals)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_fields(code: int) -> dict[str, Any]:
    """A dead process's return code (negative: the signal that killed it) as CaseRecord fields."""
    if code < 0:
        return {"signal": signal_name(-code), "exit_code": code}
    return {"exit_code": code}


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
