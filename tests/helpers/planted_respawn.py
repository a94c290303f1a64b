"""A test-only suite for crashed workers' replacements (tests/workers/test_crash_server.py).

Six cases of one kind; each notes how its worker started, as a JSON line in $PLANTED_WORKERS_LOG:
the case, its process's pid and parent pid, and the pid of the server it was forked from (the
zygote worker module, imported only in a forked child), or null for a fresh python. On a
forked worker a case passes (or, with $PLANTED_RESPAWN_HANG set, sleeps: a run to kill). On a
fresh one it crashes: at once if the run has no crash server yet (that crash starts it), else once
the server listens (so its replacement is forked). Whatever order xdist runs them in, the run's
first crash starts the server and a later crash's replacement comes from it.

Added to a run through the registry's testing hook:
    TORCHCTS_EXTRA_SUITES=respawn=helpers.planted_respawn  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("respawn")
cases = SUITE.cases
F32 = ("float32",)
WAIT_S = 240.0


def note(case: str) -> bool:
    """Write the note; whether this worker was forked from a server."""
    # cli.py imports the worker module (under the server's private package name) only in a forked
    # child, whose parent is then the server
    forked_from = os.getppid() if "_torchcts_zygote.worker" in sys.modules else None
    line = {"case": case, "pid": os.getpid(), "ppid": os.getppid(), "forked_from": forked_from}
    with open(os.environ["PLANTED_WORKERS_LOG"], "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    return forked_from is not None


def _listening(folder: Path) -> bool:
    for path in folder.glob("*-run-*.sock"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
            return True
        except OSError:
            continue
        finally:
            sock.close()
    return False


@SUITE.case("k", level=1, dtypes=F32, ops=("aten::respawn_k",), params={str(i): {} for i in range(6)})
def k(ctx: CaseContext, dtype: torch.dtype) -> None:
    if note("k"):
        if os.environ.get("PLANTED_RESPAWN_HANG"):
            time.sleep(600)
        x = torch.arange(6, dtype=dtype)
        ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)
        return
    folder = Path(os.environ["TORCHCTS_WARM_DIR"])
    if any(folder.glob("*-run-*.sock.lock")):  # this run's server is starting: crash once it listens
        deadline = time.monotonic() + WAIT_S
        while not _listening(folder):
            assert time.monotonic() < deadline, f"no run-scoped server listened in {folder} within {WAIT_S:g} s"
            time.sleep(0.1)
    os.kill(os.getpid(), signal.SIGSEGV)
