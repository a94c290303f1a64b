"""Case bodies for tests/coverage/test_coverage_observed.py: what a case dispatches to the device vs its CPU work."""

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


# Bodies for the observer-verdict tests: a failure that only the dispatch observer causes, a
# backend failure with or without it, and a failure that does not repeat (a nondeterministic backend).
CALLS: list[bool] = []


def _observed() -> bool:
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    from torchcts.cases.observe import DispatchObserver

    return isinstance(_get_current_dispatch_mode(), DispatchObserver)


def fails_only_observed(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = sample((4,), dtype).to(ctx.device)
    ctx.assert_close(torch.neg(x) + (1.0 if _observed() else 0.0), cpu_reference(ctx, lambda: -x.cpu(), "neg"))


def fails_always(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = sample((4,), dtype).to(ctx.device)
    ctx.assert_close(torch.neg(x) + 1.0, cpu_reference(ctx, lambda: -x.cpu(), "neg"))


def fails_once(ctx: CaseContext, dtype: torch.dtype) -> None:
    CALLS.append(_observed())
    x = sample((4,), dtype).to(ctx.device)
    ctx.assert_close(torch.neg(x) + (1.0 if len(CALLS) == 1 else 0.0), cpu_reference(ctx, lambda: -x.cpu(), "neg"))


def fails_in_a_helper(ctx: CaseContext, dtype: torch.dtype) -> None:
    """A helper op's wrong value, observed or not: the verdict names that op (tests/model/test_verdict.py)."""
    x = sample((4,), dtype).to(ctx.device)
    with ctx.helper_op("aten::abs"):
        ctx.assert_close(torch.abs(x) + 1.0, cpu_reference(ctx, lambda: x.cpu().abs(), "abs"))
