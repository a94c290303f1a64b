"""A test-only suite of an asynchronous abort, for crash attribution (tests/workers/test_crash_attribution.py).

`a_async_abort` passes, but leaves work behind, as PoCL does: a thread that writes a driver's
assertion to fd 2 (C's stderr, not Python's) and then aborts the process from a native thread
(faulthandler can print no Python stack for it: the tail is empty, as on PoCL). It fires once the
next case of the same process has started (`b_innocent` says so), or after DELAY_S when no case
follows (the case run alone). So in a run the crash lands in `b_innocent`, which did nothing wrong;
`c_ok` passes.

    TORCHCTS_EXTRA_SUITES=asyncabort=helpers.planted_async  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import ctypes
import os
import threading
import time

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("asyncabort")
cases = SUITE.cases
F32 = ("float32",)
DELAY_S = 0.5
ASSERTION = "planted-driver: queue.c:42: flush_queue: Assertion `q->pending == 0' failed."
_NEXT_STARTED = threading.Event()


def _abort_from_a_native_thread() -> None:
    _NEXT_STARTED.wait(DELAY_S)
    os.write(2, (ASSERTION + "\n").encode())
    libc = ctypes.CDLL(None)
    thread = ctypes.c_ulong()
    libc.pthread_create(ctypes.byref(thread), None, libc.abort, None)
    time.sleep(60)


@SUITE.case("a_async_abort", level=1, dtypes=F32, ops=("aten::planted_async",))
def a_async_abort(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)
    threading.Thread(target=_abort_from_a_native_thread, daemon=True).start()


@SUITE.case("b_innocent", level=1, dtypes=F32, ops=("aten::mul.Tensor",))
def b_innocent(ctx: CaseContext, dtype: torch.dtype) -> None:
    _NEXT_STARTED.set()
    time.sleep(3.0)  # a slow op: the abort lands while it runs
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) * 2).cpu(), x * 2)


@SUITE.case("c_ok", level=1, dtypes=F32, ops=("aten::add.Tensor",))
def c_ok(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)
