"""Field cases of the dtype classes (docs/bug-classes.md D1..D5): type promotion, a dtype the
hardware lacks handled silently, CPU 0-dim tensors and Python numbers beside device tensors,
`dtype=` arguments, and keywords that switch the formula.

Each case replays one report's own input (the docstring says what the report showed) and compares
the device with CPU as the other suites do (`run_both`: values and dtypes, CPU's exception type
where CPU raises). Where a result has one right answer (integer results, integer-valued float64
products) it is compared bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, expect, on_cpu, run_both, sample, to_device
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases


def _equal(ctx: CaseContext, got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """A result with one right answer: same dtype and shape, equal element for element."""
    got = got.cpu()
    ctx.describe(step=what)
    expect(got.dtype == want.dtype and got.shape == want.shape, f"{what}: dtype or shape differs from CPU",
           got=f"{got.dtype} {list(got.shape)}", expected=f"{want.dtype} {list(want.shape)}")
    if not torch.equal(got, want):
        diff = (got.double() - want.double()).abs()
        expect(False, f"{what}: differs from CPU", max_abs_error=float(diff.max()),
               mismatched=int((diff != 0).sum()), of=want.numel())


# --- D1 type promotion -------------------------------------------------------------------------

@SUITE.case("D1/pytorch-xla-3608", level=3, dtypes=(("float32", "int64"),), ops=("aten::cat",),
            cite=GH + "pytorch/xla/pull/3608")
def cat_promotes(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """XLA's cat of a (14, 512) int64 and a (14, 49) float32 tensor on dim 1 kept int64 (no type
    promotion, layoutlmv2); the result must be float32 with the values, in both orders."""
    x = sample((14, 512), torch.int64, ctx.seed)
    y = sample((14, 49), torch.float32, ctx.seed + 1)
    run_both(ctx, lambda a, b: torch.cat([a, b], dim=1), x, y)
    run_both(ctx, lambda a, b: torch.cat([b, a], dim=1), x, y)


@SUITE.case("D1/pytorch-xla-863", level=3, dtypes=(("int8", "int64"), ("uint8", "int64")),
            ops=("aten::prod.dim_int", "aten::cumprod"), cite=GH + "pytorch/xla/issues/863")
def prod_promotes_to_int64(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """XLA's prod over dim 1 of a (4, 2) int8 tensor returned int8 (wrapped: 106 for -406) and cumprod
    of uint8 likewise, where PyTorch promotes integer products to int64."""
    g = torch.Generator().manual_seed(ctx.seed)
    m = torch.randint(255, (4, 2), generator=g).to(dtype)  # the report's randint(255).char()/.byte()
    run_both(ctx, lambda t: torch.prod(t, 1), m, category="reduction")
    run_both(ctx, lambda t: torch.cumprod(t, 1), m, category="reduction")
    run_both(ctx, lambda t: torch.prod(t), m, category="reduction")


@SUITE.case("D1/pytorch-xla-592", level=3, dtypes=(("uint8", "int64"),), ops=("aten::index.Tensor",),
            cite=GH + "pytorch/xla/issues/592")
def index_keeps_uint8(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """XLA's a[b] of a uint8 tensor indexed by int64 indices came back float32; it keeps uint8."""
    a = sample((10,), torch.uint8, ctx.seed)
    b = torch.tensor([0, 1, 2, 3])
    run_both(ctx, lambda t, i: t[i], a, b)


@SUITE.case("D1/pytorch-pytorch-143932", level=3, dtypes=(("float32", "int64"),), ops=("aten::add.Tensor",),
            cite=GH + "pytorch/pytorch/issues/143932")
def add_float_int_alpha(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """MPS add of a float and an int tensor with alpha given aborted ('mps.multiply' op requires the
    same element type): alpha scaled the int operand without promoting it. Both operand orders, add
    and sub."""
    f = sample((7,), torch.float32, ctx.seed)
    i = sample((7,), torch.int64, ctx.seed + 1)
    run_both(ctx, lambda a, b: torch.add(a, b, alpha=2), f, i)
    run_both(ctx, lambda a, b: torch.add(b, a, alpha=2), f, i)
    run_both(ctx, lambda a, b: torch.sub(a, b, alpha=3), f, i)


@SUITE.case("D1/pytorch-pytorch-149951", level=3, dtypes=(("float32", "float16"),),
            ops=("aten::fmax", "aten::fmin"), cite=GH + "pytorch/pytorch/issues/149951")
def fmax_mixed_dtypes(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """MPS fmax/fmin of a float32 rand(3) and a float16 arange(3.) read the half operand as float32
    (garbage: 0.97 where max(rand, 1.0) is 1.0); the result is float32 with the right maxima."""
    a = on_cpu(lambda: torch.rand(3, generator=torch.Generator().manual_seed(ctx.seed)))
    b = torch.arange(3.0, dtype=torch.float16)
    run_both(ctx, torch.fmax, a, b)
    run_both(ctx, torch.fmin, a, b)
    run_both(ctx, torch.fmax, b, a)


# --- D2 a dtype the hardware lacks ---------------------------------------------------------------

@SUITE.case("D2/pytorch-pytorch-90273", level=2, dtypes=("int64",), ops=("aten::max",),
            cite=GH + "pytorch/pytorch/issues/90273")
def max_int64(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.max of the int64 tensor [0, 1, 2, 3, 4] returned its first element (0), not 4."""
    t = torch.tensor([0, 1, 2, 3, 4], dtype=dtype)
    _equal(ctx, torch.max(to_device(ctx, t)[0]), torch.max(t), "max of [0, 1, 2, 3, 4]")
    s = sample((33,), dtype, ctx.seed)
    _equal(ctx, torch.max(to_device(ctx, s)[0]), torch.max(s), "max of a sample")


@SUITE.case("D2/pytorch-pytorch-87753", level=2, dtypes=("uint8", "int8", "int16", "int32", "int64"),
            ops=("aten::max", "aten::min"), cite=GH + "pytorch/pytorch/issues/87753")
def min_max_int(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS max/min of the default-int tensor [1, 2, 3] returned 1 and 0 (bogus values for int types
    the kernel downcast); every integer dtype, the report's values and a sample with negatives."""
    for t in (torch.tensor([1, 2, 3], dtype=dtype), sample((17,), dtype, ctx.seed)):
        d = to_device(ctx, t)[0]
        _equal(ctx, d.max(), t.max(), f"max of {t.tolist()}")
        _equal(ctx, d.min(), t.min(), f"min of {t.tolist()}")


@SUITE.case("D2/pytorch-pytorch-109067", level=2, dtypes=("int32",), ops=("aten::argmax",),
            cite=GH + "pytorch/pytorch/issues/109067")
def argmax_int32(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS argmax over dim 0 of the int32 tensor [14, 13, 11] returned -9223372036854775808, not 0."""
    t = torch.tensor([14, 13, 11], dtype=dtype)
    _equal(ctx, torch.argmax(to_device(ctx, t)[0], dim=0), torch.argmax(t, dim=0), "argmax of [14, 13, 11]")


@SUITE.case("D2/pytorch-pytorch-98191", level=2, dtypes=("int64",), ops=("aten::argmax",),
            cite=GH + "pytorch/pytorch/issues/98191")
def argmax_int64_rows(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS argmax over dim 1 of the int64 tensor [[0, 1], [2, 1], [1, 0]] returned INT64_MIN for every
    row, not [1, 0, 0]."""
    t = torch.tensor([[0, 1], [2, 1], [1, 0]], dtype=dtype)
    _equal(ctx, torch.argmax(to_device(ctx, t)[0], dim=1), torch.argmax(t, dim=1), "argmax over rows")


@SUITE.case("D2/pytorch-pytorch-92311", level=2, dtypes=("float32",), ops=("aten::argmax",),
            cite=GH + "pytorch/pytorch/issues/92311")
def argmax_float_rows(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS (on an Intel Mac's AMD GPU) argmax over dim 1 of a float32 randn(10, 2) returned
    -9223372036854775808 for every row: the int64 result the kernel could not produce."""
    t = sample((10, 2), dtype, ctx.seed)
    _equal(ctx, torch.argmax(to_device(ctx, t)[0], dim=1), torch.argmax(t, dim=1), "argmax over dim 1")
    _equal(ctx, torch.argmax(to_device(ctx, t)[0]), torch.argmax(t), "argmax of all")


@SUITE.case("D2/pytorch-pytorch-197715", level=3, dtypes=(("float32", "float64"), ("float32", "complex128")),
            ops=("aten::copy_",), cite=GH + "pytorch/pytorch/issues/197715")
def copy_into_cpu_wide_dtype(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """A copy from MPS into a CPU float64 or complex128 tensor silently wrote nothing (2.14
    regression: the dtype Metal lacks); the CPU destination must hold the converted values."""
    src = sample((2, 9), dtype, ctx.seed)
    wide = getattr(torch, dtypes[1])
    want = torch.full((2, 9), 7.0, dtype=wide).copy_(src)
    dst = torch.full((2, 9), 7.0, dtype=wide)  # a sentinel: "wrote nothing" keeps it
    dst.copy_(to_device(ctx, src)[0])
    _equal(ctx, dst, want, f"copy_ from the device into a CPU {dtypes[1]} tensor")


# --- D3 CPU 0-dim tensors and Python numbers beside device tensors ------------------------------

@SUITE.case("D3/pytorch-pytorch-187117", level=3, dtypes=("float32", "int64"),
            ops=("aten::div.Tensor", "aten::mul.Tensor", "aten::add.Tensor", "aten::sub.Tensor"),
            cite=GH + "pytorch/pytorch/issues/187117")
def cpu_scalar_view_offset(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS binary ops with a CPU 0-dim view s[4] (storage offset 4) read s[0]: `a / s[4]` equalled
    `a / s[0]` bit for bit. div, mul, add, sub, in-place, either side, offsets 1, 4 and 7."""
    s = (torch.arange(8) + 2).to(dtype)  # distinct values: reading element 0 shows
    a = sample((3, 4), dtype, ctx.seed)
    for k in (1, 4, 7):
        v = s[k]  # stays on CPU in both runs: the operand under test
        ctx.describe(offset=k)
        run_both(ctx, lambda t, v=v: t / v, a)
        run_both(ctx, lambda t, v=v: t * v, a)
        run_both(ctx, lambda t, v=v: v - t, a)
        run_both(ctx, lambda t, v=v: t.clone().add_(v), a)  # a clone: the CPU run must not change a


@SUITE.case("D3/pytorch-pytorch-82543", level=3, dtypes=("float32", "float16", "bfloat16"),
            ops=("aten::rsub.Scalar", "aten::add.Tensor", "aten::sub.Tensor"),
            cite=GH + "pytorch/pytorch/issues/82543")
def one_minus_rounds(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `1.0 - a` for a = [0.0, 0.49, 0.8, 0.9, 0.95] gave [1, 1, 0, 0, 0] (the Python number taken
    as an integer), where 0.99 - a was right."""
    a = torch.tensor([0.0, 0.49, 0.8, 0.9, 0.95], dtype=dtype)
    run_both(ctx, lambda t: 1.0 - t, a)
    run_both(ctx, lambda t: 1.0 + t, a)
    run_both(ctx, lambda t: t - 1.0, a)


@SUITE.case("D3/microsoft-DirectML-699", level=3, dtypes=("float32", "float16"),
            ops=("aten::rsub.Scalar", "aten::add.Tensor", "aten::mul.Tensor", "aten::div.Tensor"),
            cite=GH + "microsoft/DirectML/issues/699")
def python_float_stays_tensor_dtype(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch-directml `1.0 - x` on a float32 rand(5) raised "The GPU device does not support Double"
    (the Python float taken as float64) while `1.0 + x` worked; a Python number never promotes."""
    x = on_cpu(lambda: torch.rand(5, generator=torch.Generator().manual_seed(ctx.seed)).to(dtype))
    for fn in (lambda t: 1.0 - t, lambda t: 1.0 + t, lambda t: 2.0 * t, lambda t: 1.0 / (t + 1)):
        run_both(ctx, fn, x)


@SUITE.case("D3/pytorch-pytorch-143933", level=3, dtypes=("float32",), ops=("aten::fmax", "aten::fmin"),
            cite=GH + "pytorch/pytorch/issues/143933")
def fmax_cpu_scalar(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.fmax(torch.rand(7, device='mps'), torch.tensor(.3)) crashed (CPU 0-dim operand)."""
    x = on_cpu(lambda: torch.rand(7, generator=torch.Generator().manual_seed(ctx.seed)))
    s = torch.tensor(0.3)
    run_both(ctx, lambda t: torch.fmax(t, s), x)
    run_both(ctx, lambda t: torch.fmin(s, t), x)


@SUITE.case("D3/pytorch-pytorch-186580", level=3, dtypes=("float32",), ops=("aten::mul.Tensor", "aten::add.Tensor"),
            cite=GH + "pytorch/pytorch/issues/186580")
def mul_cpu_scalar_tensor(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `ones(4, 4) * torch.tensor(2.0)` bound the CPU scalar's read-only bytes to a writable Metal
    argument (validation assertion, GPU fault, abort); the product and its sum must be right."""
    m = torch.ones(4, 4)
    s = torch.tensor(2.0)
    run_both(ctx, lambda t: (t * s).sum(), m, category="reduction")
    run_both(ctx, lambda t: t * s, m)
    run_both(ctx, lambda t: t + s, m)


# --- D4 dtype= arguments -----------------------------------------------------------------------

@SUITE.case("D4/pytorch-pytorch-30572", level=4, dtypes=(("float16", "float32"), ("bfloat16", "float32")),
            ops=("aten::_softmax", "aten::_softmax_backward_data"), requires=("autograd|training",),
            cite=GH + "pytorch/pytorch/issues/30572")
def softmax_dtype_float32_of_half(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """CUDA F.softmax(a, dim=1, dtype=torch.float32) of a half rand(2, 2, 2, 2) failed in backward
    ("expected scalar type Float but found Half"); dim=-1 worked. Forward and the input's gradient,
    softmax and log_softmax, over every dim."""
    a = on_cpu(lambda: torch.rand(2, 2, 2, 2, generator=torch.Generator().manual_seed(ctx.seed)).to(dtype))
    for fn in (F.softmax, F.log_softmax):
        for dim in (1, -1, 0):
            ctx.describe(op=fn.__name__, dim=dim)
            run_both(ctx, lambda t, f=fn, d=dim: f(t, dim=d, dtype=torch.float32), a)

            def grad(t: torch.Tensor, f: Callable[..., torch.Tensor] = fn, d: int = dim) -> torch.Tensor:
                t = t.detach().requires_grad_()
                f(t, dim=d, dtype=torch.float32)[0, 0, 0, 0].backward()
                return t.grad

            run_both(ctx, grad, a, category="backward")


@SUITE.case("D4/pytorch-pytorch-179415", level=3, dtypes=("uint8",), ops=("aten::sum.dim_IntList",),
            cite=GH + "pytorch/pytorch/issues/179415")
def sum_dtype_uint8_wraps(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS sum(dtype=torch.uint8) of the uint8 [[-1, 2, 1], [5, 3, 6]] (255 for -1) saturated to 255;
    CPU wraps to 16. Also dtype=int8 of the same tensor."""
    t = torch.tensor([[-1, 2, 1], [5, 3, 6]]).to(dtype)
    d = to_device(ctx, t)[0]
    _equal(ctx, d.sum(dtype=torch.uint8), t.sum(dtype=torch.uint8), "sum(dtype=uint8)")
    _equal(ctx, d.sum(1, dtype=torch.uint8), t.sum(1, dtype=torch.uint8), "sum(1, dtype=uint8)")
    _equal(ctx, d.sum(dtype=torch.int8), t.sum(dtype=torch.int8), "sum(dtype=int8)")


# --- D5 keywords that switch the formula -------------------------------------------------------

@SUITE.case("D5/pytorch-pytorch-94529", level=4, dtypes=("float32", "float16", "bfloat16"),
            ops=("aten::gelu", "aten::gelu_backward"), requires=("autograd|training",),
            cite=GH + "pytorch/pytorch/pull/94529")
def gelu_tanh(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS gelu lacked approximate='tanh' forward and backward (the erf formula ran instead); both
    keyword values, forward and gradient."""
    x = sample((6, 7), dtype, ctx.seed)
    for approximate in ("tanh", "none"):
        ctx.describe(approximate=approximate)
        run_both(ctx, lambda t, a=approximate: F.gelu(t, approximate=a), x)

        def grad(t: torch.Tensor, a: str = approximate) -> torch.Tensor:
            t = t.detach().requires_grad_()
            F.gelu(t, approximate=a).backward(torch.ones_like(t))
            return t.grad

        run_both(ctx, grad, x, category="backward")


@SUITE.case("D5/pytorch-pytorch-186278", level=3, dtypes=("bfloat16", "float16", "float32"), ops=("aten::gelu",),
            cite=GH + "pytorch/pytorch/issues/186278")
def gelu_tanh_large_inputs(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS gelu(approximate='tanh') of bfloat16 arange(8, 16, 0.5) gave NaN from 10.5 on (the fast tanh
    of the cubic term overflowed); the report's inputs and their negatives up to 30."""
    x = torch.cat([torch.arange(8, 16, 0.5), torch.arange(-30, 30, 2.5)]).to(dtype)
    run_both(ctx, lambda t: F.gelu(t, approximate="tanh"), x)


@SUITE.case("D5/pytorch-pytorch-144245", level=3, dtypes=("float32", "float16"),
            ops=("aten::upsample_linear1d", "aten::upsample_bilinear2d"), cite=GH + "pytorch/pytorch/issues/144245")
def interpolate_align_corners_single_pixel(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS F.interpolate(x, 3, mode='linear', align_corners=True) of x = [[1], [2], [4]] unsqueezed to
    (3, 1, 1) returned all NaN (a one-sample input scaled by 0/0); CPU repeats each value. Both
    align_corners values, 1-D linear and 2-D bilinear of one pixel and of a few."""
    x = torch.tensor([[1.0], [2.0], [4.0]], dtype=dtype).unsqueeze(1)
    img = sample((2, 3, 1, 1), dtype, ctx.seed)
    small = sample((2, 3, 2, 3), dtype, ctx.seed + 1)
    for align in (True, False):
        ctx.describe(align_corners=align)
        run_both(ctx, lambda t, a=align: F.interpolate(t, 3, mode="linear", align_corners=a), x)
        run_both(ctx, lambda t, a=align: F.interpolate(t, (4, 5), mode="bilinear", align_corners=a), img)
        run_both(ctx, lambda t, a=align: F.interpolate(t, (5, 4), mode="bilinear", align_corners=a), small)
