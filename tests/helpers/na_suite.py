"""A test-only suite whose cases end in every no-verdict way: a pass, a case that finds itself not
applicable while it runs, and a dtype the test manifest does not claim (decided before the run).

    TORCHCTS_EXTRA_SUITES=na=helpers.na_suite  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("na")
cases = SUITE.cases


@SUITE.case("ok", level=1, dtypes=("float32",), ops=("aten::add.Tensor",))
def ok(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)


@SUITE.case("runtime_na", level=1, dtypes=("float32", "float64"), ops=("aten::mul.Tensor",))
def runtime_na(ctx: CaseContext, dtype: torch.dtype) -> None:
    ctx.not_applicable("mul has no kernel this case can use on this device")
