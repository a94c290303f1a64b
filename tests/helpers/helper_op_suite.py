"""A test-only suite whose cases need a device op besides the one they test (tests/suites/test_failed_op.py).

Added through the registry's testing hook: TORCHCTS_EXTRA_SUITES=helper_op=helpers.helper_op_suite.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, expect, sample

SUITE = CaseSet("helper_op")
cases = SUITE.cases


@SUITE.case("neg_of_abs", level=1, dtypes=("float32",), ops=("aten::neg",))
def neg_of_abs(ctx: CaseContext, dtype: torch.dtype) -> None:
    """neg of non-negative values, made non-negative on the device (a helper op the case declares
    it needs): a failure of that abs is abs's, not neg's."""
    x = sample((7,), dtype, ctx.seed)
    with ctx.helper_op("aten::abs"):
        positive = x.to(ctx.device).abs()
    ctx.assert_close((-positive).cpu(), -x.abs())


@SUITE.case("wrong_helper_value", level=1, dtypes=("float32",), ops=("aten::neg",))
def wrong_helper_value(ctx: CaseContext, dtype: torch.dtype) -> None:
    """A helper op whose value is wrong (checked inside helper_op): failed, and named."""
    with ctx.helper_op("aten::planted_helper"):
        expect(False, "the helper op produced the wrong value")
