"""A test-only suite of one crash storm, for the crash budget's clusters (tests/workers/test_crash_budget.py).

Eight cases of kind `out`, each of its own op family (`storm_op0/float32` ... `storm_op7/float32`),
all killed by the same SIGSEGV in the same function: one bug across every op's out= case, as
OpenReg's out= resize path. Eight cases of kind `fine` of the same ops pass. Eight cases of kind
`wide`, two ops in four dtypes, killed by the same bug: one storm across dtypes (issue 48 item 5),
not one per dtype.

    TORCHCTS_EXTRA_SUITES=storm=helpers.planted_storm  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import os
import signal
from typing import Any

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("storm")
cases = SUITE.cases
OPS = {f"storm_op{i}": {"op": f"storm_op{i}"} for i in range(8)}


def _resize_out_of_a_non_empty_tensor() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


@SUITE.case("out", level=1, dtypes=("float32",), ops=("aten::storm_out",), params=OPS)
def out(ctx: CaseContext, dtype: torch.dtype, **params: Any) -> None:
    _resize_out_of_a_non_empty_tensor()


@SUITE.case("fine", level=1, dtypes=("float32",), ops=("aten::add.Tensor",), params=OPS)
def fine(ctx: CaseContext, dtype: torch.dtype, **params: Any) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)


WIDE = {f"storm_op{i}": {"op": f"storm_op{i}"} for i in range(2)}


@SUITE.case("wide", level=1, dtypes=("float32", "float64", "int32", "int64"), ops=("aten::storm_out",), params=WIDE)
def wide(ctx: CaseContext, dtype: torch.dtype, **params: Any) -> None:
    _resize_out_of_a_non_empty_tensor()
