"""A test-only suite of a device left poisoned, for the canary (tests/workers/test_crash_attribution.py).

On the sim: each `b_victim` case checks a multiplication, then leaves its process's device broken,
as a sticky device error does (every later sim op raises "device lost"). So the first case of a
process passes and every later one fails. Without a canary, one pass and three failures per
worker; with one, the first failure after the poisoning is noted as the poisoned device's and the
process replaced: of four cases two pass, two fail, whatever the order. With $PLANTED_POISON_FORKED
set, `a0_segv` crashes its worker first, so the rest run in forked children
(workers/case_process.py): the poisoned child is the process replaced.

    TORCHCTS_EXTRA_SUITES=poison=helpers.planted_poison  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import os
import signal
from typing import Any

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("poison")
cases = SUITE.cases
F32 = ("float32",)
LOST = "planted: device lost (a sticky error: every later call fails)"


def _lost(func: Any, args: Any, kwargs: Any, call: Any) -> Any:
    raise RuntimeError(LOST)


if os.environ.get("PLANTED_POISON_FORKED"):

    @SUITE.case("a0_segv", level=1, dtypes=F32, ops=("aten::planted_segfault",))
    def a0_segv(ctx: CaseContext, dtype: torch.dtype) -> None:
        os.kill(os.getpid(), signal.SIGSEGV)


@SUITE.case("b_victim", level=1, dtypes=F32, ops=("aten::mul.Tensor",), params={str(i): {} for i in range(4)})
def b_victim(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) * 2).cpu(), x * 2)
    from torchcts.sim import tensor

    tensor.OP_HOOKS["*"] = _lost  # the device of this process is broken from now on
