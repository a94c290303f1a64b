"""A test-only suite of planted misbehaviour: crash, abort, hang, raise, slow pass, wrong value.

Added to a run through the registry's testing hook:
    TORCHCTS_EXTRA_SUITES=planted=helpers.planted  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import os
import signal
import time

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("planted")
cases = SUITE.cases
F32 = ("float32",)


@SUITE.case("a_ok", level=1, dtypes=F32, ops=("aten::add.Tensor",))
def a_ok(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)


@SUITE.case("b_segfault", level=1, dtypes=F32, ops=("aten::planted_segfault",))
def b_segfault(ctx: CaseContext, dtype: torch.dtype) -> None:
    print("about to segfault", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)


@SUITE.case("c_ok", level=1, dtypes=F32, ops=("aten::mul.Tensor",))
def c_ok(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) * 2).cpu(), x * 2)


@SUITE.case("d_hang", level=1, dtypes=F32, ops=("aten::planted_hang",))
def d_hang(ctx: CaseContext, dtype: torch.dtype) -> None:
    time.sleep(600)


@SUITE.case("e_raises", level=1, dtypes=F32, ops=("aten::planted_raise",))
def e_raises(ctx: CaseContext, dtype: torch.dtype) -> None:
    raise RuntimeError("planted backend error: kernel not implemented")


@SUITE.case("f_slow_pass", level=1, dtypes=F32, ops=("aten::sub.Tensor",))
def f_slow_pass(ctx: CaseContext, dtype: torch.dtype) -> None:
    time.sleep(1.0)
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) - 1).cpu(), x - 1)


@SUITE.case("g_exit", level=1, dtypes=F32, ops=("aten::planted_exit",))
def g_exit(ctx: CaseContext, dtype: torch.dtype) -> None:
    os._exit(7)


@SUITE.case("h_wrong_value", level=1, dtypes=F32, ops=("aten::planted_wrong",))
def h_wrong_value(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 0.5).cpu(), x)


@SUITE.case("i_ok", level=1, dtypes=F32, ops=("aten::div.Tensor",), params={str(i): {} for i in range(4)})
def i_ok(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(1, 7, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) / 2).cpu(), x / 2)


if os.environ.get("PLANTED_HANG_LAST"):  # for the killed-run test: hang after the passing cases

    @SUITE.case("z_hang", level=1, dtypes=F32, ops=("aten::planted_hang",))
    def z_hang(ctx: CaseContext, dtype: torch.dtype) -> None:
        time.sleep(600)
