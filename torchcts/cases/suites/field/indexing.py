"""Field cases of the indexing and magnitude classes I1-I5 (docs/bug-classes.md): tensors past 2^31
elements, sizes past 2^16, index values at and past the bounds, indexed writes with duplicates and
masks, and data-dependent output shapes, each the input situation of one real backend bug report
(the `cite=` URL).

Sizes follow the reports. What cannot fit is not_applicable, never shrunk into a case that no longer
triggers the bug: past 2^31 elements (gigabytes) a case runs only where the manifest's
resource_limits allow it, as the magnitude suite's `huge/*` cases do, and is judged against exact
values computed without a CPU copy; the cases of tens of MB take the budget of `budget_mb`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from torchcts.cases.api import (
    MB,
    CaseContext,
    CaseSet,
    budget_mb,
    expect,
    expect_identical,
    expect_raises,
    on_cpu,
    run_both,
    sample,
    to_device,
)

SUITE = CaseSet("field")
cases = SUITE.cases
F32 = ("float32",)
MAGNITUDE = 5  # the magnitude suite's level
VALUES = 3  # indexing ops on ordinary sizes: the errors and aliasing level
PERIOD = 251  # pattern values: element i holds i mod PERIOD (a prime: no power-of-two stride repeats it)


def _needs(ctx: CaseContext, tensor_mb: float, device_mb: float, what: str) -> None:
    """not_applicable unless the manifest's resource_limits allow a tensor of tensor_mb and device_mb in
    all (a manifest without limits gets none of these: gigabytes are never assumed)."""
    limits = ctx.manifest.resource_limits
    if (limits.get("max_tensor_mb") or 0) < tensor_mb or (limits.get("max_device_memory_mb") or 0) < device_mb:
        ctx.not_applicable(f"{what} needs resource_limits.max_tensor_mb >= {math.ceil(tensor_mb)} and "
                           f"max_device_memory_mb >= {math.ceil(device_mb)}; the manifest's: {limits}")


def _budget(ctx: CaseContext, mb: float, what: str) -> None:
    """not_applicable when the case's allocation budget (budget_mb) is below mb."""
    if budget_mb(ctx, mb) < mb:
        ctx.not_applicable(f"{what} needs {mb:.0f} MB per tensor; the budget is {budget_mb(ctx, mb):.0f} MB")


def _pattern(n: int, device: torch.device | str) -> torch.Tensor:
    """n uint8 elements on `device`, element i = i mod PERIOD, made there (no host copy)."""
    return torch.arange(PERIOD, dtype=torch.uint8, device=device).repeat(-(-n // PERIOD))[:n]


# ---- I1: 32-bit index arithmetic past 2^31 elements ---------------------------------------------

@SUITE.case("I1/pytorch-pytorch-189960", level=MAGNITUDE, ops=("aten::cat", "aten::full"),
            cite="https://github.com/pytorch/pytorch/issues/189960")
def cat_past_2_31(ctx: CaseContext) -> None:
    """MPS cat of two int8 (32769, 32768) tensors along dim 1 (2^31 + 65536 output elements, every dim
    below 2^31) left the rows past 2^31 unwritten and wrote before the output: the first row, the first
    row past 2^31 and the last row, exactly."""
    rows, half = 32769, 32768
    mb = rows * half * 2 / MB
    _needs(ctx, mb + 1, 2 * mb + 64, "cat with 2^31 + 65536 output elements")
    a = torch.full((rows, half), 1, dtype=torch.int8, device=ctx.device)
    b = torch.full((rows, half), 2, dtype=torch.int8, device=ctx.device)
    out = torch.cat([a, b], dim=1)
    del a, b
    want = torch.cat([torch.ones(half, dtype=torch.int8), torch.full((half,), 2, dtype=torch.int8)])
    for r in (0, (1 << 31) // (2 * half) - 1, (1 << 31) // (2 * half)):  # rows 0, 32767, 32768 (= rows - 1)
        got = out[r].cpu()
        wrong = int((got != want).sum())
        expect(wrong == 0, f"row {r} of cat's (32769, 65536) output is wrong (the output passes 2^31 elements)",
               wrong=wrong, first=got[:4].tolist(), last=got[-4:].tolist())


@SUITE.case("I1/pytorch-pytorch-188756", level=MAGNITUDE, ops=("aten::index_select", "aten::repeat"),
            cite="https://github.com/pytorch/pytorch/issues/188756")
def index_select_source_past_2_31(ctx: CaseContext) -> None:
    """MPS index_select / F.embedding returned all-zero rows for every index whose row starts past 2^31
    elements of the source: a uint8 (2^25 + 16, 64) source (2^31 + 1024 elements), rows on both sides
    of 2^31 / 64, against their exact values."""
    width = 64
    rows = (1 << 25) + 16
    mb = rows * width / MB
    _needs(ctx, mb + 1, 2 * mb + 64, "index_select from 2^31 + 1024 elements")
    src = _pattern(rows * width, ctx.device).view(rows, width)
    picks = [0, (1 << 25) - 1, 1 << 25, (1 << 25) + 1, rows - 1]
    (idx,) = to_device(ctx, torch.tensor(picks))
    got = torch.index_select(src, 0, idx).cpu()
    want = ((torch.tensor(picks).unsqueeze(1) * width + torch.arange(width)) % PERIOD).to(torch.uint8)
    expect(torch.equal(got, want), "index_select of rows past 2^31 source elements differs",
           rows=picks, got=got[:, :4].tolist(), expected=want[:, :4].tolist())


# ---- I2: 2^16-class limits ----------------------------------------------------------------------

@SUITE.case("I2/pytorch-pytorch-111634", level=MAGNITUDE, dtypes=F32, ops=("aten::bmm", "aten::matmul"),
            cite="https://github.com/pytorch/pytorch/issues/111634")
def batched_matmul_32769(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `zeros(911, 9, 1) @ ones(1, 32769)` (the minimal sizes: any smaller was right) gave 50 million
    ones where every element is 0, and another count when run again: the result (1.1 GB) counted on the
    device, twice."""
    numel = 911 * 9 * 32769
    _needs(ctx, numel * 4 / MB + 1, 2 * numel * 4 / MB + 64, "a (911, 9, 32769) float32 result")
    zeros = torch.zeros(911, 9, 1, dtype=dtype, device=ctx.device)
    ones = torch.ones(1, 32769, dtype=dtype, device=ctx.device)
    for run in (1, 2):
        with ctx.helper_op("aten::count_nonzero"):
            nonzero = int(torch.count_nonzero(zeros @ ones))
        expect(nonzero == 0, "zeros @ ones has non-zero elements", run=run, nonzero=nonzero)


@SUITE.case("I2/pytorch-pytorch-194922", level=MAGNITUDE, dtypes=F32, ops=("aten::constant_pad_nd",),
            cite="https://github.com/pytorch/pytorch/issues/194922")
def pad_rank5_frame_2_16(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS F.pad(mode="constant") of a rank-5 tensor along its temporal axis wrote the fill value over
    2/3 of the input once the per-channel frame H*W reached 2^16 exactly (clean at 65472): (1, 1, 4, 64,
    1024) and (1, 1, 4, 256, 256) padded by (0, 0, 0, 0, 2, 0), and the clean (1, 1, 4, 64, 1023)."""
    for shape in ((1, 1, 4, 64, 1024), (1, 1, 4, 256, 256), (1, 1, 4, 64, 1023)):
        run_both(ctx, lambda x: F.pad(x, (0, 0, 0, 0, 2, 0), value=0.5), sample(shape, dtype, ctx.seed))


@SUITE.case("I2/pytorch-pytorch-135447", level=MAGNITUDE, dtypes=F32, requires=("autograd",),
            ops=("aten::replication_pad1d", "aten::replication_pad1d_backward"),
            cite="https://github.com/pytorch/pytorch/issues/135447")
def replication_pad_backward_2_16(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS ReplicationPad1d's backward returned zeros when the third dimension from the end was 2^16 or
    more (worked around in pytorch/pytorch#152094): a (65739, 2, 4) input padded (1, 1), the input's
    gradient for a random output gradient against CPU's."""
    def grad(x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        torch.nn.ReplicationPad1d((1, 1))(x).backward(g)
        return x.grad
    run_both(ctx, grad, sample((65739, 2, 4), dtype, ctx.seed), sample((65739, 2, 6), dtype, ctx.seed + 1),
             category="backward")


# ---- I3: index values at and past the bounds ----------------------------------------------------

def _both_raise(ctx: CaseContext, fn, what: str, *args: torch.Tensor) -> None:  # noqa: ANN001
    """fn raises on CPU's tensors and on their device copies (any exception type: an asynchronous device
    reports a RuntimeError where CPU raises IndexError, as the errors suite accepts)."""
    expect_raises(lambda: fn(*args), f"CPU reference: {what}")
    dargs = to_device(ctx, *args)
    expect_raises(lambda: fn(*dargs), what)


@SUITE.case("I3/pytorch-pytorch-189971", level=VALUES, dtypes=F32, ops=("aten::_embedding_bag",),
            cite="https://github.com/pytorch/pytorch/issues/189971")
def embedding_bag_index_equal_to_size(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS embedding_bag's bound check was `> num_weights`: index 5 of a 5-row table (the first rows of a
    6-row buffer) read the row past it ([15, 16, 17]) where CPU raises; index 4 is valid."""
    big = on_cpu(lambda: torch.arange(18.0).reshape(6, 3).to(dtype))
    offsets = torch.tensor([0])
    _both_raise(ctx, lambda b, i, o: F.embedding_bag(i, b[:5], o, mode="sum"), "embedding_bag at index 5 of 5 rows",
                big, torch.tensor([5]), offsets)
    run_both(ctx, lambda b, i, o: F.embedding_bag(i, b[:5], o, mode="sum"), big, torch.tensor([4, 0]), offsets)


@SUITE.case("I3/pytorch-pytorch-169201", level=VALUES, dtypes=F32, ops=("aten::_embedding_bag",),
            cite="https://github.com/pytorch/pytorch/issues/169201")
def embedding_bag_negative_index(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS nn.EmbeddingBag silently returned zeros for index -1 where CPU raises (out of bounds)."""
    weight = sample((10, 4), dtype, ctx.seed)
    _both_raise(ctx, lambda w, i: F.embedding_bag(i, w, mode="sum"), "embedding_bag at index -1", weight,
                torch.tensor([[-1]]))
    run_both(ctx, lambda w, i: F.embedding_bag(i, w, mode="sum"), weight, torch.tensor([[9, 0, 3]]))


@SUITE.case("I3/pytorch-pytorch-123119", level=VALUES, dtypes=F32, ops=("aten::embedding",),
            cite="https://github.com/pytorch/pytorch/issues/123119")
def embedding_index_equal_to_size(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS nn.Embedding(10, 3) returned zero rows for index 10 (and larger) where CPU raises IndexError
    (pytorch/pytorch#144824 saw the same for a 0-dim index)."""
    weight = sample((10, 3), dtype, ctx.seed)
    _both_raise(ctx, lambda w, i: F.embedding(i, w), "embedding at index 10 of 10 rows", weight,
                torch.tensor([[1, 2, 4, 5], [4, 3, 2, 10]]))
    _both_raise(ctx, lambda w, i: F.embedding(i, w), "embedding at a 0-dim index 10", weight, torch.tensor(10))
    run_both(ctx, lambda w, i: F.embedding(i, w), weight, torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9]]))


# ---- I4: indexed writes: duplicates, masks, accumulation ----------------------------------------

@SUITE.case("I4/pytorch-pytorch-124206", level=VALUES, dtypes=("float32", "float16"), ops=("aten::index_put_",),
            cite="https://github.com/pytorch/pytorch/issues/124206")
def masked_assign_inf(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `t[t < v] = -inf` wrote v instead of -inf: a boolean-mask write of -inf (and of a 0-dim tensor
    value) into the elements below a threshold. Without the `ieee754` claim CPU's -inf demands nothing
    (CaseContext.assert_close), so the fill is then a finite -1000, which a write of v still misses."""
    fill = float("-inf") if ctx.claims("ieee754") else -1000.0

    def fn(t: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        t[t < 0.5] = fill
        t[t > 2.0] = v
        return t
    x, v = sample((6, 7), dtype, ctx.seed), torch.tensor(3.25, dtype=dtype)
    dargs = to_device(ctx, x, v)
    expected = on_cpu(fn, x.clone(), v)
    ctx.assert_close(fn(*dargs), expected)


@SUITE.case("I4/intel-torch-xpu-ops-3530", level=VALUES, dtypes=("float32", "bfloat16"), ops=("aten::index_add",),
            cite="https://github.com/intel/torch-xpu-ops/issues/3530")
def index_add_alpha_duplicates(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU index_add_ was inaccurate for float32 with a non-default alpha and for bfloat16 (2-D, indices
    repeating): an (80, 40) destination, 200 source rows onto random rows, alpha 2, in and out of place.
    Values are small integers, so every sum is exact in either dtype and in any order: bit for bit (the
    reduction tolerance of bfloat16 is wider than the error the report showed)."""
    g = torch.Generator().manual_seed(ctx.seed)
    dst, src = (torch.randint(-2, 3, shape, generator=g).to(dtype) for shape in ((80, 40), (200, 40)))
    idx = torch.randint(0, 80, (200,), generator=g)
    for name, fn in (("index_add", lambda d, i, s: torch.index_add(d, 0, i, s, alpha=2)),
                     ("index_add_", lambda d, i, s: d.clone().index_add_(0, i, s, alpha=2))):
        expect_identical(fn(*to_device(ctx, dst, idx, src)), on_cpu(fn, dst, idx, src),
                         f"{name} of small integers with alpha 2 onto repeating rows")


# ---- I5: data-dependent output shapes -----------------------------------------------------------

@SUITE.case("I5/pytorch-pytorch-104879", level=VALUES, dtypes=("int64", "float32"), ops=("aten::_unique2",),
            cite="https://github.com/pytorch/pytorch/issues/104879")
def unique_of_3d(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS unique of tensor([[[0, 1]]]) (a (1, 1, 2) tensor) returned [0]; a flat [0, 1] was right."""
    x = on_cpu(lambda: torch.tensor([[[0, 1]]]).to(dtype))
    run_both(ctx, lambda t: torch.unique(t, return_inverse=True, return_counts=True), x)
    run_both(ctx, lambda t: torch.unique(t, return_inverse=True, return_counts=True),
             on_cpu(lambda: torch.tensor([[[3, 1], [1, 2]], [[0, 3], [2, 2]]]).to(dtype)))


@SUITE.case("I5/intel-torch-xpu-ops-4396", level=VALUES, dtypes=("bool", "float32"), ops=("aten::nonzero",),
            cite="https://github.com/intel/torch-xpu-ops/issues/4396")
def nonzero_truncated(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU (torch 2.13.0+xpu) nonzero of [0, 1, 0, 1, 0] dropped elements (expected [1, 3]); sglang saw
    nonzero and unique truncated or empty."""
    run_both(ctx, torch.nonzero, on_cpu(lambda: torch.tensor([0, 1, 0, 1, 0]).to(dtype)))
    run_both(ctx, torch.nonzero, on_cpu(lambda: (sample((9, 13), torch.float32, ctx.seed) > 0.5).to(dtype)))


@SUITE.case("I5/pytorch-pytorch-111173", level=VALUES, dtypes=("int64",), ops=("aten::_unique2",),
            cite="https://github.com/pytorch/pytorch/issues/111173")
def unique_counts_million(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS unique(return_counts=True) of 1M unsorted randint(0, 2) values failed (a command buffer error,
    or counts too small or zero past the first ones), not every time: the values and counts, twice."""
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randint(0, 2, (1_000_000,), generator=g).to(dtype)
    for _ in range(2):
        got = run_both(ctx, lambda t: torch.unique(t, return_counts=True), x)
        expect(got is not None and int(got[1].cpu().sum()) == x.numel(), "unique's counts do not add up to the input's size",
               got=None if got is None else got[1].tolist())


@SUITE.case("I5/pytorch-pytorch-125100", level=VALUES, dtypes=("int64", "float32"),
            ops=("aten::index.Tensor", "aten::masked_select"),
            cite="https://github.com/pytorch/pytorch/issues/125100")
def boolean_index_2d(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `x[mask]` of a (2, 7) tensor with a (2, 7) mask (both on the device) gave [-100, 0, 2, 0, 1, 0,
    2, 0] for [1, 0, 2, 0, 1, 0, 2, 0]; a 1-D x or a CPU mask was right. masked_select as well."""
    x = on_cpu(lambda: torch.tensor([[1, 0, 2, 0, -100, -100, -100], [1, 0, 2, 0, -100, -100, -100]]).to(dtype))
    mask = torch.tensor([[True, True, True, True, False, False, False]] * 2)
    run_both(ctx, lambda t, m: (t[m], torch.masked_select(t, m)), x, mask)
    run_both(ctx, lambda t, m: t[m], on_cpu(lambda: sample((5, 9), dtype, ctx.seed)),
             on_cpu(lambda: sample((5, 9), torch.float32, ctx.seed + 1) > 0))


@SUITE.case("I5/pytorch-pytorch-181867", level=VALUES, dtypes=F32, ops=("aten::index.Tensor",),
            cite="https://github.com/pytorch/pytorch/issues/181867")
def boolean_index_size_repeated(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `x[mask]` of an 11,842,339-element x with 6,054,691 randomly placed True returned a different
    number of elements on some of repeated calls (x[mask].numel() must be mask.sum()): the report's sizes,
    where the budget allows 48 MB, indexed three times, each result against CPU's."""
    n = 11_842_339
    _budget(ctx, n * 4 / MB + 1, "an 11.8M-element float32 tensor")
    g = torch.Generator().manual_seed(ctx.seed)
    mask = torch.rand(n, generator=g) < 6_054_691 / n  # about the report's count of True, spread at random
    m = int(mask.sum())
    x = torch.rand(n, generator=g).to(dtype)
    want = on_cpu(lambda: x[mask])
    dx, dmask = to_device(ctx, x, mask)
    for step in range(3):
        got = dx[dmask]
        expect(got.numel() == m, "x[mask] has another number of elements than mask.sum()", step=step,
               got=got.numel(), expected=m)
        expect(torch.equal(got.cpu(), want), "x[mask] differs from CPU's", step=step)
