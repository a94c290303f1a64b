"""Field cases of the values and precision classes (docs/bug-classes.md: V1..V16).

Each case replays one real report of a backend that shipped wrong values: the report's own input
situation, at its smallest, compared with CPU (or with a property CPU also satisfies). The
docstring says what the report showed; `cite=` links it. Where the report's error hides inside a
tolerance (one ulp of float16, a float64 product computed in float32), the inputs are chosen so
that the right answer is exact and the comparison is bit for bit.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, budget_mb, exactness_of, expect, on_cpu, to_device

SUITE = CaseSet("field")
cases = SUITE.cases

NAN_REQ = ("inference", "ieee754")
LOW = ("float16", "bfloat16", "float32")
GH = "https://github.com/"


def _with_nan(n: int, at: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """n uniform values in [0, 1) with a NaN at `at` (CPU)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, generator=g).to(dtype)
    x[at] = float("nan")
    return x


def identical(actual: torch.Tensor, expected: torch.Tensor, what: str, signed_zero: bool = False) -> None:
    """Bit for bit (NaN equal to NaN; -0.0 unequal to 0.0 where `signed_zero`): for results with exactly
    one right answer, where a float tolerance would hide the reported error."""
    actual = actual.cpu()
    expect(actual.shape == expected.shape and actual.dtype == expected.dtype,
           f"{what}: got {actual.dtype}{list(actual.shape)}, expected {expected.dtype}{list(expected.shape)}")
    same = (actual == expected) | (actual.isnan() & expected.isnan()) if expected.is_floating_point() or \
        expected.is_complex() else actual == expected
    if signed_zero and expected.is_floating_point():
        same &= actual.signbit() == expected.signbit()
    if not bool(same.all()):
        bad = (~same).nonzero()[0].tolist()
        expect(False, f"{what}: {int((~same).sum())} of {same.numel()} elements differ, first at {bad}: "
                      f"got {actual[tuple(bad)].item()!r}, expected {expected[tuple(bad)].item()!r}")


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
    identical(torch.max(ds), torch.tensor(float("nan"), dtype=dtype), "max([1, nan, 3])")
    identical(torch.argmax(dx), torch.argmax(x), "argmax of rand(32) with x[5] = nan")
    identical(torch.argmin(dx), torch.argmin(x), "argmin of rand(32) with x[5] = nan")


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
    identical(torch.nextafter(da, db), torch.nextafter(a, b), "nextafter(a, b)")


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
    identical(torch.nextafter(da, db), on_cpu(lambda: torch.nextafter(a, b)), "bfloat16 nextafter", signed_zero=True)


# --- V11: integer extremes, integers through float ---------------------------------------------------

_ABS_INPUTS = {
    "int32": [-(2**24 + 1), 2**24 + 1, -(2**24 + 3), -(2**31 - 1), 2**31 - 1],
    "int64": [-(2**24 + 1), -(2**33 + 7), -(2**63 - 1), 2**53 + 1, -(2**62 + 3)],
}


@SUITE.case("V11/pytorch-pytorch-190052", level=2, dtypes=("int32", "int64"), ops=("aten::abs",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/190052")
def abs_int_above_2_24_pytorch_190052(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS abs of integers went through float32: abs(-(2^24 + 1)) gave 2^24, and abs(-(2^63 - 1))
    gave -2^63."""
    x = torch.tensor(_ABS_INPUTS[str(dtype).removeprefix("torch.")], dtype=dtype)
    ctx.describe(values=x.tolist())
    identical(torch.abs(to_device(ctx, x)[0]), torch.abs(x), "abs")


_LINSPACE = {  # the report's call, and the ones its fix was checked with (comment on pytorch#183525)
    "int8": [(4.3, -3.0, 50)],
    "int16": [(4.6, -2.0, 20), (-4.9, 4.9, 7)],
    "int32": [(4.6, -2.0, 20)],
    "int64": [(4.6, -2.0, 20)],
    "uint8": [(7.8, 250.3, 9)],
}


@SUITE.case("V11/pytorch-pytorch-137635", level=2, dtypes=tuple(_LINSPACE), ops=("aten::linspace",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/137635")
def linspace_integral_pytorch_137635(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS linspace(4.3, -3, 50, dtype=int8) started [4, 4, 4, 3, ...] where CPU gives [4, 3, 3, 3, ...]:
    the fractional endpoints were not truncated to the integer dtype before the step was computed."""
    for start, end, steps in _LINSPACE[str(dtype).removeprefix("torch.")]:
        ctx.describe(start=start, end=end, steps=steps)
        identical(torch.linspace(start, end, steps, dtype=dtype, device=ctx.device),
                  torch.linspace(start, end, steps, dtype=dtype), f"linspace({start}, {end}, {steps})")


@SUITE.case("V11/pytorch-pytorch-195595", level=2, dtypes=("int64",), ops=("aten::_unique2", "aten::unique"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/195595")
def unique_inverse_int64_pytorch_195595(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS unique(return_inverse=True) of int64 keys up to ~4.5e8 (past 2^24) gave inverse indices that
    did not rebuild the input: an internal float32 narrowing."""
    def keys() -> torch.Tensor:
        g = torch.Generator().manual_seed(ctx.seed)
        c = torch.randint(0, 768, (20000, 3), generator=g, dtype=dtype)
        return (c[:, 0] * 769 + c[:, 1]) * 769 + c[:, 2]

    k = on_cpu(keys)
    ctx.describe(n=k.numel(), max_key=int(k.max()))
    values, inverse = torch.unique(to_device(ctx, k)[0], return_inverse=True)
    cpu_values, cpu_inverse = on_cpu(lambda: torch.unique(k, return_inverse=True))
    identical(values, cpu_values, "unique values")
    identical(inverse, cpu_inverse, "inverse indices")


# --- V1: narrower accumulation or intermediates -------------------------------------------------------


@SUITE.case("V1/pytorch-pytorch-90635", level=2, dtypes=("int64",), ops=("aten::cumsum",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/90635")
def cumsum_integral_pytorch_90635(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS cumsum of tensor([1, 1, 1, 1]) returned [1, 1, 1, 1] for int64 and for dtype=int16/int8
    (only int32 accumulated)."""
    t = torch.tensor([1, 1, 1, 1], dtype=dtype)
    d = to_device(ctx, t)[0]
    for out in (None, torch.int32, torch.int16, torch.int8):
        ctx.describe(out_dtype=str(out))
        identical(d.cumsum(0, dtype=out), t.cumsum(0, dtype=out), f"cumsum(0, dtype={out})")


@SUITE.case("V1/microsoft-DirectML-398", level=2, dtypes=("float64",), ops=("aten::mm", "aten::matmul"),
            requires=("inference",), cite=GH + "microsoft/DirectML/issues/398")
def float64_matmul_exact_directml_398(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch-directml's float64 matmul had float32's rounding error (1.45e-7 where float64 gives 0):
    integer-valued operands whose exact products pass 2^24 but every partial sum stays below 2^53, so
    float64 is exact and float32 is not."""
    def operands() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        return (torch.randint(0, 2**14, (64, 256), generator=g).to(dtype),
                torch.randint(0, 2**14, (256, 48), generator=g).to(dtype))

    a, b = on_cpu(operands)
    ctx.describe(shapes=[[64, 256], [256, 48]], values="integers in [0, 2^14)")
    da, db = to_device(ctx, a, b)
    identical(da @ db, on_cpu(lambda: a @ b), "float64 matmul of integer-valued operands (exact)")


# --- V2: fast-math / approximate kernels inside the tolerance ---------------------------------------------


def _ulp(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` at |t| (float64), normal range."""
    return torch.finfo(dtype).eps * torch.exp2(torch.floor(torch.log2(t.abs())))


@SUITE.case("V2/microsoft-DirectML-370", level=2, dtypes=("float16",), ops=("aten::pow",),
            requires=("inference",), cite=GH + "microsoft/DirectML/issues/370")
def pow_float16_rounding_directml_370(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch-directml float16 0.6094 ** 0.5024 gave 0.7793 where CPU gives 0.7798, one ulp off, inside
    any float16 tolerance. Inputs whose true power lies well inside a float16 rounding interval have one
    right answer, which CPU returns; the device must return it bit for bit."""
    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        base = torch.cat([torch.tensor([0.6094, 0.6094]), torch.rand(256, generator=g) * 0.9 + 0.05]).to(dtype)
        exp = torch.cat([torch.tensor([0.5024, -0.5024]), torch.rand(256, generator=g) * 2 - 1]).to(dtype)
        truth = base.double() ** exp.double()
        nearest = truth.to(dtype).double()
        clear = (truth - nearest).abs() < 0.3 * _ulp(truth, dtype)  # far from a rounding midpoint
        clear[:2] = True  # the report's own pair
        return base[clear], exp[clear]

    base, exp = on_cpu(inputs)
    expected = on_cpu(lambda: base**exp)
    expect(bool((expected.double() - base.double() ** exp.double()).abs().le(0.5 * _ulp(expected.double(), dtype)).all()),
           "CPU's float16 pow is not correctly rounded on these inputs: no reference")
    ctx.describe(pairs=base.numel(), report_pair=[0.6094, 0.5024])
    db, de = to_device(ctx, base, exp)
    identical(db**de, expected, "float16 pow (correctly rounded)")


# --- V13: ties and order in sort, topk, argsort --------------------------------------------------------


@SUITE.case("V13/pytorch-pytorch-183885", level=8, dtypes=("float32",), ops=("aten::sort", "aten::argsort"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/183885")
def argsort_dim0_long_rows_pytorch_183885(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS x.abs().argsort(dim=0) of a (3, 2^22 + 1) float32 tensor returned indices that did not sort
    the columns. Judged as a sort: the gathered values equal CPU's sorted values and each column's
    indices are a permutation of 0..2 (ties may order either way)."""
    n = 2**22 + 1
    need = 3 * n * 8 / 2**20  # the largest tensor: the int64 indices (~100 MB)
    if budget_mb(ctx, need) < need:
        ctx.not_applicable(f"needs a {need:.0f} MB tensor; the manifest's resource limits allow less")

    def inputs() -> torch.Tensor:
        g = torch.Generator().manual_seed(ctx.seed)
        return torch.randn((3, n), generator=g, dtype=dtype).abs()

    x = on_cpu(inputs)
    ctx.describe(shape=[3, n], dim=0)
    idx = torch.argsort(to_device(ctx, x)[0], dim=0).cpu()
    expect(idx.shape == x.shape and idx.dtype == torch.int64, f"argsort returned {idx.dtype}{list(idx.shape)}")
    expect(bool(((idx >= 0) & (idx < 3)).all()), "argsort returned indices outside 0..2")
    expect(bool((idx.sort(dim=0).values == torch.arange(3).unsqueeze(1)).all()),
           "argsort's indices are not a permutation of 0..2 in every column")
    identical(torch.gather(x, 0, idx), on_cpu(lambda: x.sort(dim=0).values), "x gathered by argsort(dim=0)")


@SUITE.case("V13/pytorch-pytorch-196177", level=2, dtypes=("float16", "bfloat16"), ops=("aten::topk",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/196177")
def topk_repeatable_pytorch_196177(ctx: CaseContext, dtype: torch.dtype) -> None:
    """ROCm topk(k=8) of a randn(256, E) bfloat16/float16 tensor returned different indices across
    identical calls once E > 256, in rows whose 8th and 9th values differ. Three calls must agree, and
    where the selection is unambiguous they must pick CPU's elements."""
    def inputs() -> torch.Tensor:
        g = torch.Generator().manual_seed(ctx.seed)
        return torch.randn((256, 257), generator=g).to(dtype)

    x = on_cpu(inputs)
    cpu = on_cpu(lambda: torch.topk(x, 8, dim=-1))
    w = on_cpu(lambda: torch.topk(x.float(), 9, dim=-1).values)
    distinct = on_cpu(lambda: w[:, 7] != w[:, 8])  # rows where the 8 selected elements are unambiguous
    ctx.describe(shape=[256, 257], k=8, unambiguous_rows=int(distinct.sum()))
    dx = to_device(ctx, x)[0]

    def selected(indices: torch.Tensor) -> torch.Tensor:
        """The set of selected indices of each unambiguous row (ties inside the 8 may come in any order)."""
        return on_cpu(lambda: indices.cpu().sort(dim=-1).values[distinct])

    first = torch.topk(dx, 8, dim=-1)
    identical(first.values, cpu.values, "topk values")
    identical(selected(first.indices), selected(cpu.indices), "topk's selected indices, call 1 against CPU")
    for call in (2, 3):
        again = torch.topk(dx, 8, dim=-1)
        identical(again.values, cpu.values, f"topk values, call {call}")
        identical(selected(again.indices), selected(first.indices), f"topk's selected indices, call {call} against 1")


@SUITE.case("V13/pytorch-xla-2525", level=2, dtypes=("bfloat16", "float32"), ops=("aten::argmax", "aten::_softmax"),
            requires=("inference",), cite=GH + "pytorch/xla/issues/2525")
def argmax_after_softmax_ties_xla_2525(ctx: CaseContext, dtype: torch.dtype) -> None:
    """On TPU, argmax of softmax(T) with T = bfloat16 uniform(-10, 10) of shape (5, 5) gave other indices
    than CPU: in bfloat16 the softmax rounds neighbours to equal values, and argmax must return the first
    maximal one (documented), as CPU does."""
    def inputs() -> torch.Tensor:
        g = torch.Generator().manual_seed(ctx.seed)
        t = (torch.rand((64, 5), generator=g) * 20 - 10).to(dtype)
        t[:8] = torch.tensor([3.0, 7.0, 7.0, 1.0, 7.0], dtype=dtype)  # exact ties, first at 1
        return t

    t = on_cpu(inputs)
    sm = on_cpu(lambda: torch.softmax(t, dim=1))
    ctx.describe(shape=[64, 5], tied_rows=8)
    ds, dt = to_device(ctx, sm, t)
    identical(torch.argmax(ds, dim=1), on_cpu(lambda: torch.argmax(sm, dim=1)), "argmax(softmax(t), dim=1)")
    identical(torch.argmax(dt, dim=1), on_cpu(lambda: torch.argmax(t, dim=1)), "argmax(t, dim=1) with ties")
    ctx.assert_close(torch.softmax(dt, dim=1), sm, category="reduction")


# --- V14: normalization statistics ------------------------------------------------------------------


def _batch_norm_both(ctx: CaseContext, x: torch.Tensor, channels: int, view: str) -> None:
    """A training-mode BatchNorm2d(affine=False) applied to `x` and a view of it (`view`, evaluated on
    the tensor), on CPU and on the device: outputs and running statistics compared."""
    def apply(t: torch.Tensor, device: torch.device | str) -> tuple[torch.Tensor, ...]:
        bn = torch.nn.BatchNorm2d(channels, affine=False).to(device)
        y = bn(eval(view, {"x": t}))  # noqa: S307 - `view` is a literal of this module
        return y, bn.running_mean, bn.running_var

    ctx.describe(shape=list(x.shape), view=view, training=True)
    actual = apply(to_device(ctx, x)[0], ctx.device)
    ctx.assert_close(actual, on_cpu(lambda: apply(x, "cpu")), category="normalization")


@SUITE.case("V14/pytorch-pytorch-84962", level=2, dtypes=("float32",), ops=("aten::native_batch_norm",
            "aten::_native_batch_norm_legit"), requires=("inference",), cite=GH + "pytorch/pytorch/issues/84962")
def batch_norm_training_pytorch_84962(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS BatchNorm2d(3, affine=False) in training mode on randn(20, 3, 35, 45) differed from CPU by 0.6."""
    x = on_cpu(lambda: torch.randn((20, 3, 35, 45), generator=torch.Generator().manual_seed(ctx.seed)).to(dtype))
    _batch_norm_both(ctx, x, 3, "x")


@SUITE.case("V14/pytorch-pytorch-133520", level=2, dtypes=("float32",), ops=("aten::native_batch_norm",
            "aten::_native_batch_norm_legit"), requires=("inference",), cite=GH + "pytorch/pytorch/issues/133520")
def batch_norm_sliced_pytorch_133520(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS batch norm of a batch slice bn(x[5:]) used the storage from offset 0 (a silent regression):
    the slice's own elements must be normalized."""
    x = on_cpu(lambda: torch.randn((20, 16, 35, 45), generator=torch.Generator().manual_seed(ctx.seed)).to(dtype))
    _batch_norm_both(ctx, x, 16, "x[5:]")


# --- V15: complex numbers, lazy conjugate and negative bits ------------------------------------------------


@SUITE.case("V15/pytorch-pytorch-184379", level=2, dtypes=("complex64",), ops=("aten::imag", "aten::conj"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/184379")
def conj_imag_pytorch_184379(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.conj(x).imag of x = [1+2j, 3+4j] gave [2, 4], ignoring the lazy conjugate bit (CPU:
    [-2, -4]); .real and the printed tensor looked right."""
    x = torch.complex(torch.tensor([1.0, 3.0]), torch.tensor([2.0, 4.0])).to(dtype)
    c = torch.conj(to_device(ctx, x)[0])
    ctx.describe(x="[1+2j, 3+4j]", is_conj=bool(c.is_conj()))
    identical(c.imag, on_cpu(lambda: torch.conj(x).imag), "conj(x).imag")
    identical(c.real, x.real, "conj(x).real")


@SUITE.case("V15/intel-torch-xpu-ops-1893", level=2, dtypes=("float64",),
            ops=("aten::addmm", "aten::addmv", "aten::baddbmm"), requires=("inference",),
            cite=GH + "intel/torch-xpu-ops/issues/1893")
def neg_view_matmul_xpu_1893(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU (oneDNN) addmm, addmv and baddbmm of float64 inputs passed as lazily negated views
    (test_neg_view_*) gave wrong values: the kernels read the storage without the negative bit."""
    def inputs() -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        shapes = [(5, 7), (5, 4), (4, 7), (6,), (6, 3), (3,), (2, 3, 5), (2, 3, 4), (2, 4, 5)]
        return [torch.randn(s, generator=g, dtype=dtype) for s in shapes]

    t = on_cpu(inputs)
    neg = torch._neg_view
    calls = {
        "addmm": lambda a: torch.addmm(neg(a[0]), a[1], neg(a[2])),
        "addmv": lambda a: torch.addmv(a[3], neg(a[4]), neg(a[5])),
        "baddbmm": lambda a: torch.baddbmm(neg(a[6]), neg(a[7]), a[8]),
    }
    d = to_device(ctx, *t)
    for name, call in calls.items():
        ctx.describe(op=name, neg_views=True)
        ctx.assert_close(call(d), on_cpu(lambda c=call: c([x.clone() for x in t])), category="matmul")


# --- V12: division and remainder semantics -------------------------------------------------------------


@SUITE.case("V12/pytorch-pytorch-84995", level=2, dtypes=("int64", "int32"), ops=("aten::div",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/84995")
def div_int_rounding_mode_pytorch_84995(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.div(tensor([1, 2, 3, 4], int64), 400, rounding_mode="floor") aborted the process
    (floorOp_i64 not found); with negative dividends the floor and trunc modes differ."""
    x = torch.tensor([1, 2, 3, 4, -1, -399, -400, -401, 801], dtype=dtype)
    d = to_device(ctx, x)[0]
    for mode in ("floor", "trunc"):
        ctx.describe(divisor=400, rounding_mode=mode)
        identical(torch.div(d, 400, rounding_mode=mode), torch.div(x, 400, rounding_mode=mode),
                  f"div(x, 400, rounding_mode={mode!r})")


@SUITE.case("V12/pytorch-pytorch-189243", level=2, dtypes=("float32",), ops=("aten::div", "aten::floor_divide"),
            requires=NAN_REQ, cite=GH + "pytorch/pytorch/issues/189243")
def div_floor_nonfinite_pytorch_189243(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS div(rounding_mode="floor") gave other answers than CPU for inf / 1, -inf / 1, x / 0 and a
    finite value over an infinity of the other sign (CPU: nan, nan, +-inf, -1)."""
    nan, inf = float("nan"), float("inf")
    a = torch.tensor([nan, inf, -inf, inf, -inf, 1.0, -1.0, 1.0, -1.0, 0.0, 7.0, -7.0], dtype=dtype)
    b = torch.tensor([1.0, 1.0, 1.0, 0.0, -0.0, inf, -inf, -inf, inf, -inf, -2.0, 2.0], dtype=dtype)
    da, db = to_device(ctx, a, b)
    ctx.describe(a=[str(v) for v in a.tolist()], b=[str(v) for v in b.tolist()])
    identical(torch.div(da, db, rounding_mode="floor"), torch.div(a, b, rounding_mode="floor"), "div floor")
    identical(torch.floor_divide(da, db), torch.floor_divide(a, b), "floor_divide")


@SUITE.case("V12/pytorch-pytorch-152758", level=3, dtypes=(("float16", "bfloat16"),), ops=("aten::div",),
            requires=("inference",), cite=GH + "pytorch/pytorch/pull/152758")
def div_trunc_mixed_half_pytorch_152758(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """MPS div(rounding_mode="trunc") of float16 [-7.4688, -3.1289] by bfloat16 [-0.2988, -0.8789] must give
    CPU's [24, 3]: the port that computed the quotient in a wider opmath truncated it to 25."""
    a = torch.tensor([[-7.4688, -3.1289]], dtype=torch.float16)
    b = torch.tensor([-0.2988, -0.8789], dtype=torch.bfloat16)
    da, db = to_device(ctx, a, b)
    ctx.describe(a=a.tolist(), b=b.tolist(), rounding_mode="trunc")
    identical(da.div(db, rounding_mode="trunc"), a.div(b, rounding_mode="trunc"), "div trunc")
    identical(da.div(db, rounding_mode="floor"), a.div(b, rounding_mode="floor"), "div floor")


@SUITE.case("V2/kulinseth-pytorch-243", level=2, dtypes=("int32", "int16"), ops=("aten::floor_divide",),
            requires=("inference",), cite=GH + "kulinseth/pytorch/pull/243")
def floor_divide_fast_math_kulinseth_243(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS floor_divide(-616, 28) of int32 gave -23 with Metal fast math on (integers cast to float,
    divided approximately, floored); exact quotients must stay exact."""
    a = torch.tensor([-616, 616, -28, 27, -27, 28 * 1000, -(28 * 1001)], dtype=dtype)
    b = torch.full_like(a, 28)
    da, db = to_device(ctx, a, b)
    ctx.describe(a=a.tolist(), b=28)
    identical(da.floor_divide(db), a.floor_divide(b), "floor_divide by 28")


# --- V3: vector or tile tails ----------------------------------------------------------------------


@SUITE.case("V3/ROCm-rocBLAS-340", level=2, dtypes=("float16",), ops=("aten::mm",),
            requires=("inference",), cite=GH + "ROCm/rocBLAS/issues/340")
def hgemm_last_column_rocblas_340(ctx: CaseContext, dtype: torch.dtype) -> None:
    """rocblas_hgemm with (m, n, k) = (3, 1, 5), A = 1..15 column-major and B = [5, 4, 3, 2, 1] gave
    C = [75, 90, 90] instead of [75, 90, 105] (the last element of the tile wrong); (3, 3, 1) too. Small
    integers: exact in float16."""
    a = torch.arange(1, 16, dtype=dtype).reshape(5, 3).t()  # A column-major, as the report's buffer
    b = torch.tensor([[5.0], [4.0], [3.0], [2.0], [1.0]], dtype=dtype)
    c = torch.arange(1, 4, dtype=dtype).reshape(3, 1)
    r = torch.arange(1, 4, dtype=dtype).reshape(1, 3)
    da, db, dc, dr = to_device(ctx, a, b, c, r)
    ctx.describe(shapes={"3x5 @ 5x1": [3, 1, 5], "3x1 @ 1x3": [3, 3, 1]})
    identical(da @ db, on_cpu(lambda: a @ b), "(3, 5) @ (5, 1)")
    identical(dc @ dr, on_cpu(lambda: c @ r), "(3, 1) @ (1, 3)")


@SUITE.case("V3/torch-spyre-torch-spyre-3851", level=2, dtypes=("float16",), ops=("aten::index_select",),
            requires=("inference",), cite=GH + "torch-spyre/torch-spyre/issues/3851")
def index_select_table_row_spyre_3851(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Spyre index_select(src, 0, table[0]) with a 64-entry row of a 2-D int32 table gathered only the
    first 32 rows right (one 128-byte stick of int32); rows of the table at other offsets worked."""
    blocks, block, heads, head = 8, 64, 8, 128

    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        src = torch.randn((blocks * block, heads, head), generator=g).to(dtype)
        pages = torch.tensor([3, 7, 1, 5, 0, 2, 6, 4], dtype=torch.int32)
        return src, pages.unsqueeze(1) * block + torch.arange(block, dtype=torch.int32)

    src, table = on_cpu(inputs)
    dsrc, dtable = to_device(ctx, src, table)
    for row in (0, 1):
        ctx.describe(index=f"table[{row}]", index_len=block)
        identical(torch.index_select(dsrc, 0, dtable[row]), on_cpu(lambda r=row: torch.index_select(src, 0, table[r])),
                  f"index_select(src, 0, table[{row}])")


# --- V4: algorithm switch at a size threshold ---------------------------------------------------------


@SUITE.case("V4/pytorch-pytorch-193487", level=4, dtypes=("float32",), ops=("aten::mm",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/193487")
def mm_long_k_overread_pytorch_193487(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS mm with K > 32768 and both output dims >= 16 was wrong by 10-30% depending on what the
    allocator left after the operands: the last K tile was not clipped, so memory past the end was
    summed in. Operands here are the fronts of larger buffers whose tails hold 1e6."""
    m, k, n = 16, 32768 + 48, 16

    def operands() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        return torch.rand((m, k), generator=g, dtype=dtype), torch.rand((k, n), generator=g, dtype=dtype)

    a, b = on_cpu(operands)
    ctx.describe(shapes=[[m, k], [k, n]], tail_value=1e6)
    pad = torch.full((4096,), 1e6, dtype=dtype)
    buf_a, buf_b = to_device(ctx, torch.cat([a.flatten(), pad]), torch.cat([b.flatten(), pad]))
    da, db = buf_a[: m * k].view(m, k), buf_b[: k * n].view(k, n)
    expected = on_cpu(lambda: a @ b)
    ctx.assert_close(da @ db, expected, category="matmul")
    fa, fb = to_device(ctx, a, b)  # freshly allocated operands too
    ctx.assert_close(fa @ fb, expected, category="matmul")


@SUITE.case("V4/pytorch-pytorch-189495", level=4, dtypes=("float32",), ops=("aten::linear", "aten::addmm"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/189495")
def linear_bias_batch_past_2_16_pytorch_189495(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS F.linear with a bias on a 3-D input whose batch dim exceeds 2^16 wrote batch b to b mod 65536:
    input (65540, 2, 32), weight (32, 32)."""
    def inputs() -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(ctx.seed)
        return (torch.randn((65540, 2, 32), generator=g, dtype=dtype), torch.randn((32, 32), generator=g, dtype=dtype),
                torch.randn((32,), generator=g, dtype=dtype))

    x, w, bias = on_cpu(inputs)
    ctx.describe(shapes=[[65540, 2, 32], [32, 32], [32]])
    lin = torch.nn.functional.linear
    dx, dw, db = to_device(ctx, x, w, bias)
    ctx.assert_close(lin(dx, dw, db), on_cpu(lambda: lin(x, w, bias)), category="matmul")


@SUITE.case("V4/pytorch-pytorch-116769", level=8, dtypes=("float32",), ops=("aten::linear", "aten::mm"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/116769")
def linear_wide_output_pytorch_116769(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS nn.Linear(1, 32769, bias=False) of a (1025, 1) input: in each row only the first 1024 columns
    were right (the output has 33.6M elements)."""
    need = 1025 * 32769 * 4 / 2**20
    if budget_mb(ctx, need) < need:
        ctx.not_applicable(f"needs a {need:.0f} MB tensor; the manifest's resource limits allow less")

    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        return torch.rand((1025, 1), generator=g, dtype=dtype), torch.randn((32769, 1), generator=g, dtype=dtype)

    x, w = on_cpu(inputs)
    ctx.describe(shapes=[[1025, 1], [32769, 1]])
    dx, dw = to_device(ctx, x, w)
    lin = torch.nn.functional.linear
    ctx.assert_close(lin(dx, dw), on_cpu(lambda: lin(x, w)), category="matmul")


@SUITE.case("V4/pytorch-xla-9242", level=4, dtypes=("float32",), ops=("aten::bmm", "aten::matmul"),
            requires=("inference",), cite=GH + "pytorch/xla/issues/9242")
def batched_rotation_matmul_xla_9242(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch_xla on GPU: matmul(xy, rotation_t) of (b, i, 2) points by (b, 2, 2) rotations gave, at
    [403, 1952], another value than the same product of the slice xy[403, 1952:1954]. Both the whole
    batch and the slice must match CPU."""
    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        xy = torch.randn((404, 1954, 2), generator=g, dtype=dtype) * 100
        theta = torch.rand((404,), generator=g, dtype=torch.float64) * 6.283185307179586
        c, s = theta.cos(), theta.sin()
        rot = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2).to(dtype)
        return xy, rot

    xy, rot = on_cpu(inputs)
    ctx.describe(shapes=[[404, 1954, 2], [404, 2, 2]], slice="[403, 1952:1954]")
    dxy, drot = to_device(ctx, xy, rot)
    big = torch.matmul(dxy, drot)
    ctx.assert_close(big, on_cpu(lambda: torch.matmul(xy, rot)), category="matmul")
    small = torch.matmul(dxy[403, 1952:1954], drot[403])
    ctx.assert_close(small, on_cpu(lambda: torch.matmul(xy[403, 1952:1954], rot[403])), category="matmul")


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
    identical(torch.nextafter(da, db), torch.nextafter(a, b), "nextafter(0, b)", signed_zero=True)


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
    identical(dx > dz, x > z, "x > 0")
    identical(dx < dz, x < z, "x < 0")


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
    identical(torch.nextafter(da, db), torch.nextafter(a, b), "bfloat16 nextafter", signed_zero=True)


# --- V8: rounding of ties -------------------------------------------------------------------------------


@SUITE.case("V8/pytorch-pytorch-17442", level=2, dtypes=("float32", "float16", "bfloat16", "float64"),
            ops=("aten::round",), requires=("inference",), cite=GH + "pytorch/pytorch/pull/17442")
def round_half_even_pytorch_17442(ctx: CaseContext, dtype: torch.dtype) -> None:
    """CUDA torch.round rounded halfway values away from zero (std::round) until it was converted to
    round half to even, as CPU does: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2."""
    x = torch.tensor([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 4.5, 126.5, 0.49999997, 1.0, -7.25], dtype=dtype)
    ctx.describe(values=[float(v) for v in x])
    identical(torch.round(to_device(ctx, x)[0]), torch.round(x), "round", signed_zero=True)


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
        return torch.cat([x, -x])[torch.cat([x, -x]).isfinite()]

    x = on_cpu(inputs)
    expected = on_cpu(lambda: x.to(torch.bfloat16))
    ctx.describe(values=x.numel(), halfway=["1 + 2^-8", "1 + 3 * 2^-8"])
    identical(to_device(ctx, x)[0].to(torch.bfloat16), expected, "device float32 -> bfloat16", signed_zero=True)
    identical(x.to(ctx.device, dtype=torch.bfloat16), expected, "host float32 -> device bfloat16", signed_zero=True)


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
        identical(fn(dx), on_cpu(lambda f=fn: f(x)), f"{name} of signed zeros", signed_zero=True)


# --- V16: SKU-, driver- or library-version-specific kernels ------------------------------------------------


@SUITE.case("V16/microsoft-DirectML-234", level=2, dtypes=("float32",), ops=("aten::convolution", "aten::conv2d"),
            requires=("inference",), cite=GH + "microsoft/DirectML/issues/234")
def depthwise_conv2d_directml_234(ctx: CaseContext, dtype: torch.dtype) -> None:
    """DirectML 1.7.0 and 1.8.0 (not 1.5.1 or 1.6.0) gave wrong values for a depthwise conv2d, groups = 4,
    NCHW input, OIHW filter (expected [6010, 7046, 11000, 9000]). Integer-valued inputs, compared within
    the conv tolerance (a Winograd or FFT kernel need not be exact)."""
    def inputs() -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(ctx.seed)
        return (torch.randint(0, 100, (1, 4, 2, 2), generator=g).to(dtype),
                torch.randint(0, 100, (4, 1, 2, 2), generator=g).to(dtype),
                torch.randint(0, 10000, (4,), generator=g).to(dtype),
                torch.randint(-20, 20, (2, 4, 9, 7), generator=g).to(dtype),
                torch.randint(-5, 5, (8, 1, 3, 3), generator=g).to(dtype))

    x, w, b, x2, w2 = on_cpu(inputs)
    conv = torch.nn.functional.conv2d
    dx, dw, db, dx2, dw2 = to_device(ctx, x, w, b, x2, w2)
    ctx.describe(shapes={"report": [[1, 4, 2, 2], [4, 1, 2, 2]], "multiplier 2": [[2, 4, 9, 7], [8, 1, 3, 3]]},
                 groups=4)
    ctx.assert_close((conv(dx, dw, db, groups=4), conv(dx2, dw2, groups=4, padding=1)),
                     on_cpu(lambda: (conv(x, w, b, groups=4), conv(x2, w2, groups=4, padding=1))), category="conv")


# --- V1 (continued) ------------------------------------------------------------------------------------------


@SUITE.case("V1/ROCm-MIOpen-2109", level=2, dtypes=("float16",), ops=("aten::avg_pool2d",),
            requires=("inference",), cite=GH + "ROCm/MIOpen/issues/2109")
def avg_pool_fp16_window_miopen_2109(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MIOpen float16 average pooling of a 1x3x255x255 input with a 255x255 window gave 0.0315 where the
    mean is 0.5010: the window's 65025 values were summed in a float16 accumulator."""
    x = on_cpu(lambda: torch.rand((1, 3, 255, 255), generator=torch.Generator().manual_seed(ctx.seed)).to(dtype))
    ctx.describe(shape=[1, 3, 255, 255], kernel=[255, 255])
    pool = torch.nn.functional.avg_pool2d
    ctx.assert_close(pool(to_device(ctx, x)[0], 255), on_cpu(lambda: pool(x, 255)), category="reduction")


@SUITE.case("V16/intel-compute-runtime-1000", level=4, dtypes=("float16", "bfloat16"), ops=("aten::mm", "aten::matmul"),
            requires=("inference",), cite=GH + "intel/compute-runtime/issues/1000")
def half_gemm_battlemage_compute_runtime_1000(ctx: CaseContext, dtype: torch.dtype) -> None:
    """On Arc Pro B70 (Battlemage) float16/bfloat16 GEMM through oneDNN gave NaN or ~1e38 garbage for
    (40, 2048) @ (8192, 2048).T (a * 8, b * 0.08) and for 512 x 512 x 512, while 64 x 64 and 40 x 128 and
    float32 were right: the report's own shapes and scales."""
    def inputs() -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(ctx.seed)
        return (torch.randn((40, 2048), generator=g) * 8, torch.randn((8192, 2048), generator=g) * 0.08,
                torch.randn((512, 512), generator=g), torch.randn((512, 512), generator=g))

    a, b, c, d = (t.to(dtype) for t in on_cpu(inputs))
    ctx.describe(shapes=[[40, 2048], [8192, 2048], [512, 512], [512, 512]], scales=[8, 0.08])
    da, db, dc, dd = to_device(ctx, a, b, c, d)
    ctx.assert_close((da @ db.T, dc @ dd), on_cpu(lambda: (a @ b.T, c @ d)), category="matmul")
