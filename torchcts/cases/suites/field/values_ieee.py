"""Field cases of the values classes (docs/bug-classes.md) about IEEE 754 semantics: NaN propagation
(V5), special-function edges (V6), subnormals (V7), rounding of ties (V8), float -> bfloat16 conversion
(V9) and signed zeros (V10).

Each case replays one real report, as values.py's docstring says (bit for bit where the report's
error hides inside a tolerance).
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, exactness_of, expect_identical, on_cpu, to_device
from torchcts.cases.suites.field._common import GH, NAN_REQ

SUITE = CaseSet("field")
cases = SUITE.cases

LOW = ("float16", "bfloat16", "float32")


def _with_nan(n: int, at: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """n uniform values in [0, 1) with a NaN at `at` (CPU)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, generator=g).to(dtype)
    x[at] = float("nan")
    return x


# --- V5: NaN not propagated ------------------------------------------------------------------------


@SUITE.case("V5/pytorch-pytorch-143976", level=2, dtypes=LOW, ops=("aten::maximum", "aten::minimum"),
            requires=NAN_REQ, cite=GH + "pytorch/pytorch/issues/143976")
def maximum_minimum_nan_pytorch_143976(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.minimum/maximum of two 32-element tensors, NaN at x[3] and y[5], returned no NaN."""
    x, y = on_cpu(lambda: (_with_nan(32, 3, dtype, ctx.seed), _with_nan(32, 5, dtype, ctx.seed + 1)))
    dx, dy = to_device(ctx, x, y)
    ctx.describe(shape=[32], nan_at={"x": 3, "y": 5})
    ctx.assert_close((torch.minimum(dx, dy), torch.maximum(dx, dy)),
                     on_cpu(lambda: (torch.minimum(x, y), torch.maximum(x, y))), exact=exactness_of("maximum"))


@SUITE.case("V5/pytorch-pytorch-130295", level=2, dtypes=LOW, ops=("aten::max", "aten::argmax", "aten::argmin"),
            requires=NAN_REQ, cite=GH + "pytorch/pytorch/issues/130295")
def max_argmax_nan_pytorch_130295(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS max([1, nan, 3]) gave 3, and argmax/argmin of rand(32) with x[5] = NaN skipped the NaN
    (CPU: NaN, and index 5 for both)."""
    small = torch.tensor([1.0, float("nan"), 3.0], dtype=dtype)
    x = on_cpu(lambda: _with_nan(32, 5, dtype, ctx.seed))
    ds, dx = to_device(ctx, small, x)
    ctx.describe(inputs=["[1, nan, 3]", "rand(32) with x[5] = nan"])
    expect_identical(torch.max(ds), torch.tensor(float("nan"), dtype=dtype), "max([1, nan, 3])")
    expect_identical(torch.argmax(dx), torch.argmax(x), "argmax of rand(32) with x[5] = nan")
    expect_identical(torch.argmin(dx), torch.argmin(x), "argmin of rand(32) with x[5] = nan")


@SUITE.case("V5/intel-intel-extension-for-pytorch-37", level=2, dtypes=("float32",),
            ops=("aten::max_pool2d", "aten::max_pool2d_with_indices"), requires=NAN_REQ,
            cite=GH + "intel/intel-extension-for-pytorch/issues/37")
def max_pool2d_nan_ipex_37(ctx: CaseContext, dtype: torch.dtype) -> None:
    """IPEX's DNNL max_pool2d(kernel 3, stride 3) of a 1x1x3x3 all-NaN input gave -3.4e38, not NaN;
    a window holding one NaN among numbers must give NaN too."""
    full = torch.full((1, 1, 3, 3), float("nan"), dtype=dtype)
    mixed = torch.arange(36, dtype=dtype).reshape(1, 1, 6, 6)
    mixed[0, 0, 1, 1] = float("nan")  # one NaN in the first 3x3 window, none in the others
    df, dm = to_device(ctx, full, mixed)
    ctx.describe(inputs=["full((1,1,3,3), nan)", "arange(36) 6x6 with [1,1] = nan"], kernel=3, stride=3)
    pool = torch.nn.functional.max_pool2d
    ctx.assert_close((pool(df, 3, 3), pool(dm, 3, 3)), on_cpu(lambda: (pool(full, 3, 3), pool(mixed, 3, 3))))


@SUITE.case("V5/pytorch-pytorch-39846", level=2, dtypes=("float32", "float64"),
            ops=("aten::max_pool3d", "aten::max_pool3d_with_indices"), requires=NAN_REQ,
            cite=GH + "pytorch/pytorch/issues/39846")
def max_pool3d_nan_pytorch_39846(ctx: CaseContext, dtype: torch.dtype) -> None:
    """CUDA nn.MaxPool3d(2, 2) of a 1x1x4x4x4 all-NaN tensor returned -3.4028e38 everywhere."""
    x = torch.full((1, 1, 4, 4, 4), float("nan"), dtype=dtype)
    mixed = torch.arange(64, dtype=dtype).reshape(1, 1, 4, 4, 4)
    mixed[0, 0, 0, 0, 1] = float("nan")  # one NaN in the first 2x2x2 window among numbers
    ctx.describe(shape=[1, 1, 4, 4, 4], kernel=2, stride=2, inputs=["all nan", "arange(64) with one nan"])
    pool = torch.nn.MaxPool3d(kernel_size=2, stride=2, dilation=1)
    dx, dm = to_device(ctx, x, mixed)
    ctx.assert_close((pool(dx), pool(dm)), on_cpu(lambda: (pool(x), pool(mixed))))


@SUITE.case("V5/pytorch-pytorch-39044", level=2, dtypes=("float32",), ops=("aten::fractional_max_pool2d",),
            requires=NAN_REQ, cite=GH + "pytorch/pytorch/issues/39044")
def fractional_max_pool_nan_pytorch_39044(ctx: CaseContext, dtype: torch.dtype) -> None:
    """CUDA FractionalMaxPool2d(3, output_size=(4, 4)) of randn(2, 2, 30, 30) with inp[0, 0, 0, 0] = NaN
    returned no NaN, and of a tensor filled with -inf returned finfo.min. The pooling regions are given
    (`_random_samples`), so device and CPU pool the same windows."""
    def inputs() -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(ctx.seed)
        x = torch.randn((2, 2, 30, 30), generator=g, dtype=dtype)
        x[0, 0, 0, 0] = float("nan")
        return x, torch.full((2, 2, 30, 30), float("-inf"), dtype=dtype), torch.rand((2, 2, 2), generator=g, dtype=dtype)

    x, ninf, samples = on_cpu(inputs)
    pool = torch.nn.functional.fractional_max_pool2d
    dx, dninf, dsamples = to_device(ctx, x, ninf, samples)
    ctx.describe(shape=[2, 2, 30, 30], kernel=3, output_size=[4, 4], nan_at=[0, 0, 0, 0])
    for name, dev, cpu in (("nan at [0, 0, 0, 0]", dx, x), ("all -inf", dninf, ninf)):
        got = pool(dev, 3, output_size=(4, 4), _random_samples=dsamples)
        expect_identical(got, on_cpu(lambda c=cpu: pool(c, 3, output_size=(4, 4), _random_samples=samples)),
                         f"fractional_max_pool2d, {name}")


# --- V6: special-function edges ------------------------------------------------------------------


@SUITE.case("V6/pytorch-pytorch-124985", level=2, dtypes=("float32", "float64"), ops=("aten::nextafter",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/124985")
def nextafter_negative_pytorch_124985(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS nextafter(-1.0, -2.0) gave -0.99999994 (a step towards zero): negative inputs stepped the
    wrong way. Every sign and direction pair, bit for bit."""
    a = torch.tensor([-1.0, -1.0, 1.0, 1.0, -3.5, 2.25, -1e-3, 7e5], dtype=dtype)
    b = torch.tensor([-2.0, 0.0, 2.0, 0.0, 5.0, -9.0, -1.0, 7e6], dtype=dtype)
    da, db = to_device(ctx, a, b)
    ctx.describe(a=a.tolist(), b=b.tolist())
    expect_identical(torch.nextafter(da, db), torch.nextafter(a, b), "nextafter(a, b)")


@SUITE.case("V6/intel-torch-xpu-ops-1169", level=2, dtypes=("bfloat16",), ops=("aten::nextafter",),
            requires=("inference",), cite=GH + "intel/torch-xpu-ops/issues/1169")
def nextafter_bfloat16_xpu_1169(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU bfloat16 nextafter(a, b) of randn(5) pairs returned `a` unchanged (CPU steps one bfloat16 ulp
    towards b: 1.5391 -> 1.5312), a regression from IPEX."""
    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        return torch.randn(64, generator=g).to(dtype), torch.randn(64, generator=g).to(dtype)

    a, b = on_cpu(inputs)
    da, db = to_device(ctx, a, b)
    ctx.describe(pairs=64)
    expect_identical(torch.nextafter(da, db), on_cpu(lambda: torch.nextafter(a, b)), "bfloat16 nextafter", signed_zero=True)


# --- V7: subnormals flushed (judged under the manifest's `subnormals` claim) ---------------------------------


def _preserves_subnormals(ctx: CaseContext) -> None:
    """These reports are wrong only for a backend that keeps subnormals; one that declares `flush`
    (docs/oracles.md) is judged by the subnormals suite instead."""
    if ctx.manifest.subnormals != "preserve":
        ctx.not_applicable(f"the manifest claims subnormals {ctx.manifest.subnormals!r}: the report's expected "
                           "subnormal results are the claim's to judge (subnormals suite)")


@SUITE.case("V7/pytorch-pytorch-150027", level=5, dtypes=("float32", "float64"), ops=("aten::nextafter",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/150027")
def nextafter_from_zero_pytorch_150027(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS nextafter(0, 1) returned 0 instead of the smallest subnormal 1.4013e-45 (Apple GPUs flush
    float32 subnormals)."""
    _preserves_subnormals(ctx)
    a, b = torch.zeros(4, dtype=dtype), torch.tensor([1.0, -1.0, float("inf"), 0.0], dtype=dtype)
    da, db = to_device(ctx, a, b)
    ctx.describe(a=[0.0] * 4, b=["1", "-1", "inf", "0"], subnormals="preserve")
    expect_identical(torch.nextafter(da, db), torch.nextafter(a, b), "nextafter(0, b)", signed_zero=True)


@SUITE.case("V7/pytorch-pytorch-125051", level=5, dtypes=("float32",), ops=("aten::gt", "aten::lt"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/125051")
def subnormal_compare_pytorch_125051(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS compared [1.4013e-45, -1.4013e-45] > [0, 0] as [False, False] (CPU: [True, False]): subnormal
    inputs treated as zero by the comparison."""
    _preserves_subnormals(ctx)
    tiny = torch.finfo(dtype).smallest_normal
    x = torch.tensor([1.4013e-45, -1.4013e-45, tiny / 2, -tiny / 4, tiny], dtype=dtype)
    z = torch.zeros_like(x)
    dx, dz = to_device(ctx, x, z)
    ctx.describe(values=[float(v) for v in x], subnormals="preserve")
    expect_identical(dx > dz, x > z, "x > 0")
    expect_identical(dx < dz, x < z, "x < 0")


@SUITE.case("V7/pytorch-pytorch-190740", level=5, dtypes=("bfloat16",), ops=("aten::nextafter",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/190740")
def nextafter_bfloat16_subnormal_pytorch_190740(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS bfloat16 nextafter(0, 1) returned 0 instead of the smallest bfloat16 subnormal (9.1835e-41), and
    a subnormal input stepped to zero: the float -> bfloat16 convert flushed, and comparisons saw zero."""
    _preserves_subnormals(ctx)
    sub = torch.tensor([9.1835e-41], dtype=dtype).item()
    a = torch.tensor([0.0, 0.0, sub, sub, -sub, 3 * sub], dtype=dtype)
    b = torch.tensor([1.0, -1.0, 1.0, 0.0, -1.0, 0.0], dtype=dtype)
    da, db = to_device(ctx, a, b)
    ctx.describe(a=[float(v) for v in a], b=b.tolist(), subnormals="preserve")
    expect_identical(torch.nextafter(da, db), torch.nextafter(a, b), "bfloat16 nextafter", signed_zero=True)


# --- V8: rounding of ties -------------------------------------------------------------------------------


@SUITE.case("V8/pytorch-pytorch-17442", level=2, dtypes=("float32", "float16", "bfloat16", "float64"),
            ops=("aten::round",), requires=("inference",), cite=GH + "pytorch/pytorch/pull/17442")
def round_half_even_pytorch_17442(ctx: CaseContext, dtype: torch.dtype) -> None:
    """CUDA torch.round rounded halfway values away from zero (std::round) until it was converted to
    round half to even, as CPU does: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2."""
    x = torch.tensor([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 4.5, 126.5, 0.49999997, 1.0, -7.25], dtype=dtype)
    ctx.describe(values=[float(v) for v in x])
    expect_identical(torch.round(to_device(ctx, x)[0]), torch.round(x), "round", signed_zero=True)


# --- V9: float -> bfloat16 conversion rounding ---------------------------------------------------------


@SUITE.case("V9/tenstorrent-tt-metal-19882", level=2, dtypes=("float32",), ops=("aten::_to_copy",),
            requires=("inference",), cite=GH + "tenstorrent/tt-metal/issues/19882")
def bfloat16_cast_rounds_tt_metal_19882(ctx: CaseContext, dtype: torch.dtype) -> None:
    """The host float32 -> bfloat16 conversion truncated the low 16 bits instead of rounding to nearest
    even. Values just above, at and below a bfloat16 halfway point, converted on the device and on the
    way to it."""
    def inputs() -> torch.Tensor:
        g = torch.Generator().manual_seed(ctx.seed)
        bits = torch.randint(0, 2**31 - 2**24, (4096,), generator=g, dtype=torch.int64).to(torch.int32)
        halves = torch.tensor([0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x3E89CCD5], dtype=torch.int32)
        x = torch.cat([bits, halves]).view(torch.float32)
        x = torch.cat([x, -x])
        # finite and normal: a subnormal's conversion is the manifest's `subnormals` claim (subnormals suite)
        return x[x.isfinite() & (x.abs() >= torch.finfo(torch.float32).smallest_normal)]

    x = on_cpu(inputs)
    expected = on_cpu(lambda: x.to(torch.bfloat16))
    ctx.describe(values=x.numel(), halfway=["1 + 2^-8", "1 + 3 * 2^-8"])
    expect_identical(to_device(ctx, x)[0].to(torch.bfloat16), expected, "device float32 -> bfloat16", signed_zero=True)
    expect_identical(x.to(ctx.device, dtype=torch.bfloat16), expected, "host float32 -> device bfloat16", signed_zero=True)


# --- V10: signed zero --------------------------------------------------------------------------------------


@SUITE.case("V10/shibatch-sleef-1", level=2, dtypes=("float32", "float64"),
            ops=("aten::sin", "aten::tan", "aten::log1p", "aten::expm1", "aten::asin", "aten::atan", "aten::sinh",
                 "aten::tanh", "aten::asinh", "aten::atanh", "aten::erf", "aten::sqrt"),
            requires=("inference",), cite=GH + "shibatch/sleef/issues/1")
def odd_functions_negative_zero_sleef_1(ctx: CaseContext, dtype: torch.dtype) -> None:
    """SLEEF (PyTorch's CPU vector math) returned +0 for sin, tan and log1p of -0.0: an odd function of
    -0.0 is -0.0 (IEEE 754); a vectorised device kernel can lose the sign the same way."""
    x = torch.tensor([-0.0, 0.0, -0.0, -0.0, 0.0], dtype=dtype).repeat(7)  # vector-width and tail lanes
    dx = to_device(ctx, x)[0]
    for name in ("sin", "tan", "log1p", "expm1", "asin", "atan", "sinh", "tanh", "asinh", "atanh", "erf", "sqrt"):
        fn = getattr(torch, name)
        ctx.describe(op=name, inputs="[-0.0, 0.0, -0.0, -0.0, 0.0] x 7")
        # the answer is x itself (each maps ±0 to ±0): never CPU's, whose SLEEF had this very bug
        expect_identical(fn(dx), x, f"{name} of signed zeros", signed_zero=True)
