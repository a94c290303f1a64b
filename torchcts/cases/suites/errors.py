"""Errors: what must raise on the device, as on CPU.

- device mismatch: an op mixing a CPU tensor (not a 0-dim scalar) and a device tensor raises
  RuntimeError (not_applicable on --device cpu, where there is no second device);
- out-of-range indices raise. The exception type is not compared: CPU raises IndexError where an
  asynchronous device reports a RuntimeError; results are synchronised (moved to CPU) so that a
  deferred error surfaces inside the case. Silently clamping or reading out of bounds fails;
- shape and dtype mismatches raise an exception of the same type as on CPU.

After each expected error the device must still compute correctly.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, expect, expect_raises, sample

SUITE = CaseSet("errors")
cases = SUITE.cases
DTYPES = ("float32", "int64")


def _still_usable(ctx: CaseContext) -> None:
    """The device still computes after the error: a device op besides the one under test, so a
    failure here is reported against that op (mul), not the case's."""
    with ctx.helper_op("aten::mul.Tensor"):
        t = torch.arange(6, device=ctx.device) * 2
        expect(t.cpu().tolist() == [0, 2, 4, 6, 8, 10], "the device computes wrong results after an error")


# name -> f(device tensor (4, 5), cpu tensor (4, 5))
MIXED: dict[str, Callable[[torch.Tensor, torch.Tensor], object]] = {
    "add": lambda d, c: d + c,
    "mul": lambda d, c: torch.mul(c, d),
    "matmul": lambda d, c: d @ c.t(),
    "cat": lambda d, c: torch.cat([d, c]),
    "stack": lambda d, c: torch.stack([c, d]),
    "where": lambda d, c: torch.where(d > 0, d, c),
    "out_on_cpu": lambda d, c: torch.add(d, d, out=c),
    "addmm_bias_on_cpu": lambda d, c: torch.addmm(c[0, :4], d, d.t()),
}


@SUITE.case("device_mismatch", level=3, dtypes=("float32",), params={k: {"op": k} for k in MIXED},
            ops=("aten::add.Tensor", "aten::mul.Tensor", "aten::mm", "aten::cat", "aten::stack", "aten::where.self",
                 "aten::add.out", "aten::addmm"), oracle="property:raises")
def device_mismatch(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    if ctx.device_type == "cpu":
        ctx.not_applicable("the device under test is cpu: there is no second device to mix")
    c = sample((4, 5), dtype, ctx.seed)
    expect_raises(lambda: MIXED[op](c.to(ctx.device, copy=True), c), f"{op} mixing a cpu and a device tensor", RuntimeError)
    _still_usable(ctx)


# name -> (f(tensor (4, 5), index tensor), bad indices); an index tensor is int64 on the same device
OUT_OF_RANGE: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor], object], tuple[list[int], ...]]] = {
    "index_select": (lambda t, i: t.index_select(0, i), ([4], [0, -5], [1, 100])),
    "gather": (lambda t, i: t.gather(1, i.view(1, -1).expand(4, -1)), ([5], [0, -6], [2, 64])),
    "embedding": (lambda t, i: F.embedding(i, t.float() if not t.is_floating_point() else t), ([4], [1, 9])),
    "advanced_index": (lambda t, i: t[i], ([4], [-5], [0, 1000])),
    "index_put_": (lambda t, i: t.index_put_((i,), torch.zeros((), dtype=t.dtype, device=t.device)), ([4], [-5])),
    "scatter_": (lambda t, i: t.scatter_(0, i.view(1, -1), t[:1, : i.numel()].clone()), ([4], [0, 7])),
    "index_add_": (lambda t, i: t.index_add_(0, i, t[: i.numel()].clone()), ([4], [3, 8])),
}


@SUITE.case("index_out_of_range", level=3, dtypes=DTYPES, params={k: {"op": k} for k in OUT_OF_RANGE},
            ops=("aten::index_select", "aten::gather", "aten::embedding", "aten::index.Tensor", "aten::index_put_",
                 "aten::scatter_.src", "aten::index_add_"), oracle="property:raises")
def index_out_of_range(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    fn, bad = OUT_OF_RANGE[op]
    t = sample((4, 5), dtype, ctx.seed)
    for idx in bad:
        ctx.describe(index=idx)
        expect_raises(lambda i=idx: fn(t.clone(), torch.tensor(i)), "CPU reference for an out-of-range index")
        expect_raises(lambda i=idx: fn(t.to(ctx.device, copy=True), torch.tensor(i, device=ctx.device)),
                      f"{op} with an out-of-range index")
    _still_usable(ctx)
    good = [0, 3]
    ctx.describe(index=good)
    ctx.assert_close(fn(t.to(ctx.device, copy=True), torch.tensor(good, device=ctx.device)), fn(t.clone(), torch.tensor(good)))


# name -> f(tensor (4, 5)) that CPU rejects for its shape or dtype
MISMATCHES: dict[str, Callable[[torch.Tensor], object]] = {
    "broadcast": lambda t: t + t[:, :3],
    "matmul": lambda t: t @ t,
    "mm_1d": lambda t: torch.mm(t, t[0]),
    "cat": lambda t: torch.cat([t, t[:, :2]]),
    "stack": lambda t: torch.stack([t, t[:3]]),
    "view": lambda t: t.view(7),
    "view_noncontiguous": lambda t: t.t().view(20),
    "reshape": lambda t: t.reshape(3, -1),
    "expand": lambda t: t.expand(3, 5),
    "masked_fill": lambda t: t.masked_fill(torch.ones(3, dtype=torch.bool, device=t.device), 0),
    "narrow": lambda t: t.narrow(1, 3, 4),
    "select": lambda t: t.select(0, 4),
    "dim_out_of_range": lambda t: t.sum(3),
    "index_float": lambda t: t.index_select(0, torch.tensor([1.0], device=t.device)),
    "out_cannot_cast": lambda t: torch.add(t, 1.5, out=torch.empty(4, 5, dtype=torch.int16, device=t.device)),
    "mm_mixed_dtypes": lambda t: torch.mm(t, t.t().to(torch.float64 if t.dtype != torch.float64 else torch.float32)),
    "inplace_cannot_cast": lambda t: t.to(torch.int32).add_(0.5),
}


@SUITE.case("mismatch", level=3, dtypes=DTYPES, params={k: {"op": k} for k in MISMATCHES},
            ops=("aten::add.Tensor", "aten::mm", "aten::cat", "aten::stack", "aten::view", "aten::reshape",
                 "aten::expand", "aten::masked_fill.Scalar", "aten::narrow", "aten::select.int", "aten::sum.dim_IntList",
                 "aten::index_select", "aten::add.out", "aten::add_.Scalar"), oracle="cpu:exception_type")
def mismatch(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    fn = MISMATCHES[op]
    t = sample((4, 5), dtype, ctx.seed)
    cpu_exc = expect_raises(lambda: fn(t), "CPU reference for a shape or dtype mismatch")
    ctx.describe(cpu_raises=type(cpu_exc).__name__)
    expect_raises(lambda: fn(t.to(ctx.device, copy=True)), f"{op}: the device must raise as CPU does", type(cpu_exc))
    _still_usable(ctx)
