"""A test-only suite for cases in forked children after a crash (tests/workers/test_case_process.py).

In plan order on one worker: a crash, cases that note their process, a second crash, a hang, and
a case that imports a module the next child should find already imported (the worker imports
what its children imported before it forks again). Each note is a JSON line in
$PLANTED_FORKS_LOG: the case, its pid and parent pid, and whether the marker module was there.

Added to a run through the registry's testing hook:
    TORCHCTS_EXTRA_SUITES=forks=helpers.planted_forks  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("forks")
cases = SUITE.cases
F32 = ("float32",)
MARKER = "helpers.planted_forks_marker"


def _note(case: str) -> None:
    line = {"case": case, "pid": os.getpid(), "ppid": os.getppid(), "marker": MARKER in sys.modules}
    with open(os.environ["PLANTED_FORKS_LOG"], "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def _check(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)


@SUITE.case("a_segv", level=1, dtypes=F32, ops=("aten::forks_segv",))
def a_segv(ctx: CaseContext, dtype: torch.dtype) -> None:
    _note("a_segv")
    os.kill(os.getpid(), signal.SIGSEGV)


@SUITE.case("b_note", level=1, dtypes=F32, ops=("aten::add.Tensor",))
def b_note(ctx: CaseContext, dtype: torch.dtype) -> None:
    _note("b_note")
    _check(ctx, dtype)


@SUITE.case("c_imports", level=1, dtypes=F32, ops=("aten::add.Tensor",))
def c_imports(ctx: CaseContext, dtype: torch.dtype) -> None:
    import helpers.planted_forks_marker  # noqa: F401

    _note("c_imports")
    _check(ctx, dtype)


@SUITE.case("d_segv", level=1, dtypes=F32, ops=("aten::forks_segv2",))
def d_segv(ctx: CaseContext, dtype: torch.dtype) -> None:
    _note("d_segv")
    print("about to segfault again", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)


@SUITE.case("e_note", level=1, dtypes=F32, ops=("aten::add.Tensor",))
def e_note(ctx: CaseContext, dtype: torch.dtype) -> None:
    _note("e_note")
    _check(ctx, dtype)


@SUITE.case("f_hang", level=1, dtypes=F32, ops=("aten::forks_hang",))
def f_hang(ctx: CaseContext, dtype: torch.dtype) -> None:
    _note("f_hang")
    time.sleep(600)


@SUITE.case("g_wrong", level=1, dtypes=F32, ops=("aten::forks_wrong",))
def g_wrong(ctx: CaseContext, dtype: torch.dtype) -> None:
    _note("g_wrong")
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 0.5).cpu(), x)


@SUITE.case("h_raises", level=1, dtypes=F32, ops=("aten::forks_raise",))
def h_raises(ctx: CaseContext, dtype: torch.dtype) -> None:
    _note("h_raises")
    raise RuntimeError("planted backend error in a forked case")


@SUITE.case("i_exit", level=1, dtypes=F32, ops=("aten::forks_exit",))
def i_exit(ctx: CaseContext, dtype: torch.dtype) -> None:
    _note("i_exit")
    sys.exit(3)


@SUITE.case("j_note", level=1, dtypes=F32, ops=("aten::add.Tensor",))
def j_note(ctx: CaseContext, dtype: torch.dtype) -> None:
    _note("j_note")
    _check(ctx, dtype)
