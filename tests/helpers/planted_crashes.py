"""A test-only suite of repeated crashes, for the crash budget (tests/workers/test_crash_budget.py).

Family `crashy_a/float32` (op aten::crashy_a): five cases, each killed by the same SIGSEGV in the
same function: one bug, one signature. Family `crashy_b/float32`: two cases killed by two different
bugs (a SIGSEGV in another function, an exit code): two signatures, one crash each. And a passing case.

Added to a run through the registry's testing hook:
    TORCHCTS_EXTRA_SUITES=crashy=helpers.planted_crashes  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import os
import signal

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("crashy")
cases = SUITE.cases
F32 = ("float32",)


def _kernel_a_bad_pointer() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


@SUITE.case("a_segv", level=1, dtypes=F32, ops=("aten::crashy_a",), params={str(i): {} for i in range(5)})
def a_segv(ctx: CaseContext, dtype: torch.dtype) -> None:
    _kernel_a_bad_pointer()


def _kernel_b_other_bug() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


@SUITE.case("b_segv", level=1, dtypes=F32, ops=("aten::crashy_b",))
def b_segv(ctx: CaseContext, dtype: torch.dtype) -> None:
    _kernel_b_other_bug()


@SUITE.case("b_exit", level=1, dtypes=F32, ops=("aten::crashy_b",))
def b_exit(ctx: CaseContext, dtype: torch.dtype) -> None:
    os._exit(7)


@SUITE.case("c_ok", level=1, dtypes=F32, ops=("aten::add.Tensor",))
def c_ok(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)
