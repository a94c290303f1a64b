"""Level 8 stress: big tensors, many allocations, long op chains, edge shapes, deep views.

Sizes come from the manifest's resource_limits (never beyond them) with a modest default, and the
checks use closed-form answers (a sum of ones is the element count) as well as the CPU, so each
case stays well under a few seconds on CPU.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import MB, CaseContext, CaseSet, budget_mb, expect, sample

SUITE = CaseSet("stress")
cases = SUITE.cases

DEFAULT_LARGE_MB = 64.0
# Even a generous limit must not make one case take minutes: filling memory on CPU is slow.
HARD_CAP_MB = {"cpu": 128.0}
DEVICE_CAP_MB = 8192.0
PRIMES = (2, 3, 7, 13, 31, 127, 257, 1021, 4099)


def large_bytes(ctx: CaseContext) -> int:
    """About 90% of max_tensor_mb (capped), or the default when the manifest sets no limit."""
    limit = ctx.manifest.resource_limits.get("max_tensor_mb")
    cap = HARD_CAP_MB.get(ctx.device_type, DEVICE_CAP_MB)
    wanted = min(limit * 0.9, cap) if limit else DEFAULT_LARGE_MB
    return int(budget_mb(ctx, wanted) * MB)


@SUITE.case("large/near_limit", level=8, ops=("aten::ones", "aten::count_nonzero", "aten::fill_"),
            oracle="property:closed_form")
def near_limit(ctx: CaseContext) -> None:
    """A uint8 tensor near the size limit: every byte is set, counts are exact, the tail is addressable."""
    n = large_bytes(ctx)
    ctx.describe(bytes=n)
    t = torch.ones(n, dtype=torch.uint8, device=ctx.device)
    ones = int(torch.count_nonzero(t))
    expect(ones == n, "not every element of a large torch.ones is one", got=ones, expected=n)
    t[-3:] = 5
    t[: n // 2].zero_()
    left = int(torch.count_nonzero(t))
    expect(left == n - n // 2, "zeroing the first half of a large tensor went wrong", got=left, expected=n - n // 2)
    ctx.assert_close(t[-8:].cpu(), torch.tensor([1] * 5 + [5] * 3, dtype=torch.uint8))


@SUITE.case("large/float_reduction", level=8, dtypes=("float32",), ops=("aten::sum", "aten::mean"))
def large_float_reduction(ctx: CaseContext, dtype: torch.dtype) -> None:
    """A big float reduction matches CPU (within the reduction tolerance) and the closed form of arange."""
    n = min(large_bytes(ctx) // 4, 1 << 24)
    x = torch.arange(n, dtype=torch.float64).remainder_(97).to(dtype)  # values 0..96, exact in float32
    got = x.to(ctx.device).sum()
    expected_exact = float((n // 97) * (96 * 97 // 2) + sum(range(n % 97)))
    ctx.describe(numel=n)
    ctx.assert_close(got.cpu().double(), torch.tensor(expected_exact, dtype=torch.float64), category="reduction",
                     dtype=dtype)


@SUITE.case("alloc/many_small", level=8, ops=("aten::full",), oracle="property:closed_form")
def many_small(ctx: CaseContext) -> None:
    """Thousands of small live tensors each keep their own value."""
    count = 3000
    live = [torch.full((1 + i % 17,), i, dtype=torch.int32, device=ctx.device) for i in range(count)]
    firsts = torch.stack([t[-1] for t in live]).cpu()
    ctx.assert_close(firsts, torch.arange(count, dtype=torch.int32))
    sizes = [t.numel() for t in live]
    expect(sizes == [1 + i % 17 for i in range(count)], "a small tensor has the wrong size")


@SUITE.case("ops/long_chain", level=8, dtypes=("float32",), ops=("aten::add_", "aten::mul", "aten::sub"),
            oracle="property:closed_form")
def long_chain(ctx: CaseContext, dtype: torch.dtype) -> None:
    """2000 in-place adds and 500 identity round trips give the exact closed form."""
    x = torch.zeros(33, dtype=dtype, device=ctx.device)
    for _ in range(2000):
        x.add_(1)
    for _ in range(500):
        x = x * 2 - x
    ctx.assert_close(x.cpu(), torch.full((33,), 2000.0, dtype=dtype))


_EDGE_SHAPES = ((0,), (3, 0, 2), (1,), (1, 1, 1), *((p,) for p in PRIMES), (7, 13), (31, 3, 5))


@SUITE.case("shapes/edge", level=8, dtypes=("float32", "int64"), ops=("aten::add", "aten::sum", "aten::cat", "aten::flip"))
def edge_shapes(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Zero-size, one-element and prime-sized shapes through elementwise, reduction, cat and flip."""
    for i, shape in enumerate(_EDGE_SHAPES):
        a, b = sample(shape, dtype, seed=ctx.seed + i), sample(shape, dtype, seed=ctx.seed + 100 + i)
        da, db = a.to(ctx.device), b.to(ctx.device)
        ctx.describe(shape=list(shape))
        ctx.assert_close((da + db).cpu(), a + b)
        ctx.assert_close(da.sum(-1).cpu(), a.sum(-1), category="reduction")
        ctx.assert_close(torch.cat([da, db], 0).cpu(), torch.cat([a, b], 0))
        ctx.assert_close(da.flip(0).cpu(), a.flip(0))


@SUITE.case("shapes/empty_matmul", level=8, dtypes=("float32",), ops=("aten::mm",), oracle="property:closed_form")
def empty_matmul(ctx: CaseContext, dtype: torch.dtype) -> None:
    """A product with a zero contracted dimension is all zeros; with a zero outer dimension it is empty."""
    z = torch.empty(5, 0, dtype=dtype, device=ctx.device) @ torch.empty(0, 7, dtype=dtype, device=ctx.device)
    ctx.assert_close(z.cpu(), torch.zeros(5, 7, dtype=dtype))
    e = torch.ones(0, 4, dtype=dtype, device=ctx.device) @ torch.ones(4, 3, dtype=dtype, device=ctx.device)
    expect(tuple(e.shape) == (0, 3), "an empty matmul has the wrong shape", got=list(e.shape))


@SUITE.case("views/deep", level=8, dtypes=("float32",), ops=("aten::view", "aten::transpose", "aten::slice", "aten::unsqueeze"))
def deep_views(ctx: CaseContext, dtype: torch.dtype) -> None:
    """200 chained views keep aliasing the base: a write through the last lands in the base, as on CPU."""

    def chain(base: torch.Tensor) -> torch.Tensor:
        v = base
        for i in range(200):
            step = i % 4
            if step == 0:
                v = v.transpose(0, 1)
            elif step == 1:
                v = v.unsqueeze(0)
            elif step == 2:
                v = v.squeeze(0)
            else:
                v = v.narrow(0, 0, v.shape[0])  # a full-size slice: still a view
        v = v[1:-1:2]
        v.mul_(-1)
        return v

    base = sample((24, 18), dtype, seed=ctx.seed)
    ref_base = base.clone()
    dev = base.clone().to(ctx.device)  # on cpu .to() aliases: keep the reference separate
    view = chain(dev)
    ref_view = chain(ref_base)
    expect(view.untyped_storage().data_ptr() == dev.untyped_storage().data_ptr(),
           "a chain of views stopped aliasing its base")
    ctx.assert_close(view.cpu(), ref_view)
    ctx.assert_close(dev.cpu(), ref_base)
