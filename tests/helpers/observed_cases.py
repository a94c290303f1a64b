"""Case bodies for tests/test_coverage_observed.py: what a case dispatches to the device vs its CPU work."""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, cpu_reference, sample

SUITE = CaseSet("observedprobe")
cases = SUITE.cases


@SUITE.case("tan", level=1, dtypes=("float32",), ops=("aten::tan",))
def tan_and_backward(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Device: tan forward and tanh backward. CPU reference (sin/cos/div) and inputs: not the device's."""
    x = sample((8,), dtype)
    expected = cpu_reference(ctx, lambda: torch.sin(x) / torch.cos(x), "tan")
    xd = x.to(ctx.device, copy=True)
    ctx.assert_close(torch.tan(xd), expected)
    leaf = xd.detach().requires_grad_()
    torch.tanh(leaf).sum().backward()
    ctx.assert_close(leaf.grad, cpu_reference(ctx, lambda: 1 - torch.tanh(x) ** 2, "tanh'"))
