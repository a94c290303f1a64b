"""Field cases of the compiler classes (docs/bug-classes.md K1, K2): compiled values that differ
from eager, and compiled programs that lose a mutation of an input.

Level 6, claim `compile`, as the compiler suites; `compiled` picks the device's backend (inductor
where PyTorch generates code for the device, aot_eager otherwise). Few and small on purpose:
compiling is slow. The compiled result on the device is compared with eager on the device
(category `compile`) and with eager on CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import CaseContext, CaseSet, compiled, expect_identical, on_cpu, sample
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases

COMPILE = ("compile",)


def _against_eager(ctx: CaseContext, fn: Callable[..., Any], args: list[torch.Tensor], category: str) -> None:
    """fn compiled on the device vs fn eager on the device and eager on CPU."""
    want = on_cpu(fn, *args)
    dev = [a.to(ctx.device, copy=True) for a in args]
    got = compiled(ctx, fn)(*dev).cpu()
    ctx.describe(step="compiled vs eager on the device")
    ctx.assert_close(got, fn(*dev).cpu(), category="compile")
    ctx.describe(step="compiled vs eager on CPU")
    ctx.assert_close(got, want, category=category)


@SUITE.case("K1/pytorch-pytorch-170360", level=6, dtypes=("float32",), requires=COMPILE,
            ops=("compile::broadcast_sum", "aten::sum"), cite=GH + "pytorch/pytorch/issues/170360")
def broadcast_sum(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS inductor returned about twice eager's value for `(a[:, None] - b[None, :]).sum()` with
    a = randn(32), b = randn(64); backend='eager' and 'aot_eager' were right."""
    a, b = sample((32,), dtype, ctx.seed), sample((64,), dtype, ctx.seed + 1)
    _against_eager(ctx, lambda x, y: (x[:, None] - y[None, :]).sum(), [a, b], "reduction")


@SUITE.case("K1/pytorch-pytorch-191976", level=6, dtypes=("float32",), requires=COMPILE,
            ops=("compile::layer_norm", "aten::native_layer_norm"), cite=GH + "pytorch/pytorch/issues/191976")
def compiled_layer_norm(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch.compile of nn.LayerNorm(512) on MPS returned values off by up to 1.8 for randn(4, 512)
    (eager within 3e-7 of float64); inference mode, as the report."""
    x = sample((4, 512), dtype, ctx.seed)
    torch.manual_seed(ctx.seed)
    ln = torch.nn.LayerNorm(512).eval()
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)
    w, b = ln.weight.detach().clone(), ln.bias.detach().clone()
    with torch.inference_mode():
        _against_eager(ctx, lambda t, ww, bb: torch.nn.functional.layer_norm(t, (512,), ww, bb), [x, w, b],
                       "normalization")


@SUITE.case("K1/pytorch-pytorch-169738", level=6, dtypes=("float32",), requires=COMPILE,
            ops=("compile::adaptive_max_pool", "aten::adaptive_max_pool2d"), cite=GH + "pytorch/pytorch/issues/169738")
def compiled_adaptive_max_pool(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS inductor's adaptive_max_pool1d(randn(4, 10, 8), output_size=3) differed from eager by 2.4
    (adaptive_max_pool2d likewise): windows of uneven length."""
    x = sample((4, 10, 8), dtype, ctx.seed)
    _against_eager(ctx, lambda t: torch.nn.functional.adaptive_max_pool1d(t, 3), [x], "elementwise")
    y = sample((2, 3, 7, 9), dtype, ctx.seed + 1)
    _against_eager(ctx, lambda t: torch.nn.functional.adaptive_max_pool2d(t, (3, 4)), [y], "elementwise")


@SUITE.case("K1/pytorch-pytorch-150629", level=6, dtypes=("float32",), requires=COMPILE,
            ops=("compile::rms_norm", "aten::rms_norm"), cite=GH + "pytorch/pytorch/issues/150629")
def compiled_rms_norm(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch.compile of nn.RMSNorm(1024) on MPS returned zeros for randn(1024): the generated code
    allocated the output and never called the fused rms_norm kernel."""
    x = sample((1024,), dtype, ctx.seed)
    w = on_cpu(lambda: 1 + sample((1024,), dtype, ctx.seed + 1) / 8)
    with torch.no_grad():
        _against_eager(ctx, lambda t, ww: torch.nn.functional.rms_norm(t, (1024,), ww), [x, w], "normalization")


@SUITE.case("K2/pytorch-pytorch-89219", level=6, dtypes=("float32",), requires=COMPILE,
            ops=("compile::add_", "aten::add_.Tensor"), cite=GH + "pytorch/pytorch/issues/89219")
def compiled_inplace_add_on_input(ctx: CaseContext, dtype: torch.dtype) -> None:
    """`def fn(x, y): x += y; return x` compiled with dynamo and NNC returned 6 for ones(1) + ones(1)
    (the in-place op on a graph input replayed); the result is 2 and x itself becomes 2."""
    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x += y
        return x

    x = torch.ones(1, dtype=dtype, device=ctx.device)
    out = compiled(ctx, fn)(x, torch.ones(1, dtype=dtype, device=ctx.device))
    want = torch.full((1,), 2.0, dtype=dtype)
    ctx.describe(step="compiled result")
    ctx.assert_close(out.cpu(), want, category="compile")
    ctx.describe(step="the caller's x after the compiled call")
    ctx.assert_close(x.cpu(), want, category="compile")


@SUITE.case("K2/torch-spyre-torch-spyre-4411", level=6, dtypes=("float32", "bfloat16"), requires=COMPILE,
            ops=("compile::index_put_", "aten::index_put_"), cite=GH + "torch-spyre/torch-spyre/issues/4411")
def compiled_index_put_accumulate(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Compiled Spyre `cache.index_put_((slots,), values, accumulate=True)` with slots [5, 5, 5, 7]
    kept one of the three updates to slot 5 instead of their sum. The report's distinguishable
    updates (an arange and three constants, scaled down from the report's 1024, 2048, 3072 so that every
    sum is an integer below 256: exact in bfloat16 in any order, compared bit for bit, where the compile
    tolerance of bfloat16 would accept one update kept) into a smaller zero cache; the cache is a graph
    input, so the sum must also reach the caller's tensor."""
    values = torch.zeros(4, 2, 8)
    values[0] = torch.arange(1, 17, dtype=torch.float32).reshape(2, 8)
    values[1], values[2], values[3] = 32.0, 64.0, 128.0
    values = values.to(dtype)
    slots = torch.tensor([5, 5, 5, 7])

    def fn(cache: torch.Tensor, idx: torch.Tensor, vals: torch.Tensor) -> torch.Tensor:
        cache.index_put_((idx,), vals, accumulate=True)
        return cache

    want = on_cpu(fn, torch.zeros(16, 2, 8, dtype=dtype), slots, values)
    cache = torch.zeros(16, 2, 8, dtype=dtype, device=ctx.device)
    out = compiled(ctx, fn)(cache, slots.to(ctx.device), values.to(ctx.device))
    expect_identical(out, want, "the compiled index_put_ (accumulate) result")
    expect_identical(cache, want, "the caller's cache after the compiled call")
