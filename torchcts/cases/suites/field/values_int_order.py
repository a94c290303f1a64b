"""Field cases of the values classes (docs/bug-classes.md) about integers, order and structure: integer
extremes and integers through float (V11), division and remainder semantics (V12), ties and order in
sort/topk/argmax (V13), normalization statistics (V14), complex numbers and lazy conjugate/negative
bits (V15).

Each case replays one real report, as values.py's docstring says (bit for bit where the report's
error hides inside a tolerance).
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, budget_mb, expect, expect_identical, on_cpu, to_device
from torchcts.cases.suites.field._common import GH, NAN_REQ

SUITE = CaseSet("field")
cases = SUITE.cases


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
    expect_identical(torch.abs(to_device(ctx, x)[0]), torch.abs(x), "abs")


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
        # Elements whose exact value (from the truncated endpoints) lies on or next to an integer truncate
        # either way in float32 arithmetic (the fix matched CPU at 49 of 50): they are not judged.
        lo, hi = float(int(start)), float(int(end))
        exact = torch.tensor([lo + (hi - lo) * i / (steps - 1) for i in range(steps)], dtype=torch.float64)
        judged = ((exact - exact.round()).abs() > 1e-4) | (torch.arange(steps) == 0) | (torch.arange(steps) == steps - 1)
        ctx.describe(start=start, end=end, steps=steps, judged=int(judged.sum()))
        got = torch.linspace(start, end, steps, dtype=dtype, device=ctx.device).cpu()
        expect_identical(got[judged], torch.linspace(start, end, steps, dtype=dtype)[judged],
                         f"linspace({start}, {end}, {steps}), elements off integer boundaries")


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
    expect_identical(values, cpu_values, "unique values")
    expect_identical(inverse, cpu_inverse, "inverse indices")


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
        expect_identical(torch.div(d, 400, rounding_mode=mode), torch.div(x, 400, rounding_mode=mode),
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
    expect_identical(torch.div(da, db, rounding_mode="floor"), torch.div(a, b, rounding_mode="floor"), "div floor")
    expect_identical(torch.floor_divide(da, db), torch.floor_divide(a, b), "floor_divide")


@SUITE.case("V12/pytorch-pytorch-152758", level=3, dtypes=(("float16", "bfloat16"),), ops=("aten::div",),
            requires=("inference",), cite=GH + "pytorch/pytorch/pull/152758")
def div_trunc_mixed_half_pytorch_152758(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """MPS div(rounding_mode="trunc") of float16 [-7.4688, -3.1289] by bfloat16 [-0.2988, -0.8789] must give
    CPU's [24, 3]: the port that computed the quotient in a wider opmath truncated it to 25."""
    a = torch.tensor([[-7.4688, -3.1289]], dtype=torch.float16)
    b = torch.tensor([-0.2988, -0.8789], dtype=torch.bfloat16)
    da, db = to_device(ctx, a, b)
    ctx.describe(a=a.tolist(), b=b.tolist(), rounding_mode="trunc")
    expect_identical(da.div(db, rounding_mode="trunc"), a.div(b, rounding_mode="trunc"), "div trunc")
    expect_identical(da.div(db, rounding_mode="floor"), a.div(b, rounding_mode="floor"), "div floor")


@SUITE.case("V2/kulinseth-pytorch-243", level=2, dtypes=("int32", "int16"), ops=("aten::floor_divide",),
            requires=("inference",), cite=GH + "kulinseth/pytorch/pull/243")
def floor_divide_fast_math_kulinseth_243(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS floor_divide(-616, 28) of int32 gave -23 with Metal fast math on (integers cast to float,
    divided approximately, floored); exact quotients must stay exact."""
    a = torch.tensor([-616, 616, -28, 27, -27, 28 * 1000, -(28 * 1001)], dtype=dtype)
    b = torch.full_like(a, 28)
    da, db = to_device(ctx, a, b)
    ctx.describe(a=a.tolist(), b=28)
    expect_identical(da.floor_divide(db), a.floor_divide(b), "floor_divide by 28")


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
    expect_identical(torch.gather(x, 0, idx), on_cpu(lambda: x.sort(dim=0).values), "x gathered by argsort(dim=0)")


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
    expect_identical(first.values, cpu.values, "topk values")
    expect_identical(selected(first.indices), selected(cpu.indices), "topk's selected indices, call 1 against CPU")
    for call in (2, 3):
        again = torch.topk(dx, 8, dim=-1)
        expect_identical(again.values, cpu.values, f"topk values, call {call}")
        expect_identical(selected(again.indices), selected(first.indices), f"topk's selected indices, call {call} against 1")


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
    expect_identical(torch.argmax(ds, dim=1), on_cpu(lambda: torch.argmax(sm, dim=1)), "argmax(softmax(t), dim=1)")
    expect_identical(torch.argmax(dt, dim=1), on_cpu(lambda: torch.argmax(t, dim=1)), "argmax(t, dim=1) with ties")
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


@SUITE.case("V14/flagos-ai-FlagGems-4984", level=2, dtypes=("float32",),
            ops=("aten::group_norm", "aten::native_group_norm"), requires=("inference",),
            cite=GH + "flagos-ai/FlagGems/issues/4984")
def group_norm_odd_group_size_flaggems_4984(ctx: CaseContext, dtype: torch.dtype) -> None:
    """FlagGems group_norm was wrong (max error 0.59, mean and rstd too) whenever the group size
    C // num_groups is not a power of two: N=1, C=48, 32x32, 16 groups (group size 3)."""
    x = on_cpu(lambda: torch.randn((1, 48, 32, 32), generator=torch.Generator().manual_seed(ctx.seed), dtype=dtype))
    dx = to_device(ctx, x)[0]
    ctx.describe(shape=[1, 48, 32, 32], num_groups=16, group_size=3)
    gn = torch.ops.aten.native_group_norm
    args = (None, None, 1, 48, 32 * 32, 16, 1e-5)
    ctx.assert_close((torch.nn.functional.group_norm(dx, 16, eps=1e-5), *gn(dx, *args)),
                     on_cpu(lambda: (torch.nn.functional.group_norm(x, 16, eps=1e-5), *gn(x, *args))),
                     category="normalization")


# --- V15: complex numbers, lazy conjugate and negative bits ------------------------------------------------


@SUITE.case("V15/pytorch-pytorch-184379", level=2, dtypes=("complex64",), ops=("aten::imag", "aten::conj"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/184379")
def conj_imag_pytorch_184379(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.conj(x).imag of x = [1+2j, 3+4j] gave [2, 4], ignoring the lazy conjugate bit (CPU:
    [-2, -4]); .real and the printed tensor looked right."""
    x = torch.complex(torch.tensor([1.0, 3.0]), torch.tensor([2.0, 4.0])).to(dtype)
    c = torch.conj(to_device(ctx, x)[0])
    ctx.describe(x="[1+2j, 3+4j]", is_conj=bool(c.is_conj()))
    expect_identical(c.imag, on_cpu(lambda: torch.conj(x).imag), "conj(x).imag")
    expect_identical(c.real, x.real, "conj(x).real")


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


@SUITE.case("V15/pytorch-pytorch-148599", level=2, dtypes=("complex64",), ops=("aten::mm", "aten::conj"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/148599")
def mm_conj_operand_pytorch_148599(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.mm(A, torch.conj(B)) of 2x2 complex64 matrices gave mm(A, B): the lazy conjugate bit was
    not applied before the product (conj_physical was right)."""
    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        return torch.rand((2, 2), generator=g, dtype=dtype), torch.rand((2, 2), generator=g, dtype=dtype)

    a, b = on_cpu(inputs)
    da, db = to_device(ctx, a, b)
    ctx.describe(shapes=[[2, 2], [2, 2]], conj="second operand, lazy")
    ctx.assert_close((torch.mm(da, torch.conj(db)), torch.mm(torch.conj(da), db)),
                     on_cpu(lambda: (torch.mm(a, torch.conj(b)), torch.mm(torch.conj(a), b))), category="matmul")


@SUITE.case("V15/pytorch-pytorch-191835", level=2, dtypes=("complex64",), ops=("aten::bmm", "aten::matmul"),
            requires=("inference",), cite=GH + "pytorch/pytorch/pull/191835")
def bmm_conj_mh_pytorch_191835(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.bmm(a, b.conj()) of complex64 (4, 3, 5) x (4, 5, 2) was off by ~1e1, and A @ U.mH too: the
    batched path fed the raw storage of conjugated views (2-D mm was right)."""
    def inputs() -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(ctx.seed)
        return (torch.randn((4, 3, 5), generator=g, dtype=dtype), torch.randn((4, 5, 2), generator=g, dtype=dtype),
                torch.randn((4, 3, 3), generator=g, dtype=dtype))

    a, b, u = on_cpu(inputs)
    da, db, du = to_device(ctx, a, b, u)
    ctx.describe(shapes=[[4, 3, 5], [4, 5, 2], [4, 3, 3]], views=["b.conj()", "u.mH"])
    ctx.assert_close((torch.bmm(da, db.conj()), du @ du.mH),
                     on_cpu(lambda: (torch.bmm(a, b.conj()), u @ u.mH)), category="matmul")
