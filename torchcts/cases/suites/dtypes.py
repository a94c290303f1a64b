"""Dtype semantics: the type-promotion table of binary ops over claimed dtype pairs, casts between
every claimed pair, torch.result_type, Python-scalar and 0-dim operands, bool and complex rules.

Pair cases (`dtypes/promotion/add/float16-int32`) need both dtypes claimed. Result dtypes are
checked against CPU and, where the rule is simple, against an independent statement of it
(torch.promote_types; float-to-int casts truncate toward zero). Casting NaN or Inf to an integer
is undefined behaviour in C++, so those cases are not_applicable; the other non-finite casts
need the `ieee754` claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from torchcts.cases.api import (
    ALL_DTYPES,
    COMPLEX,
    FLOATING,
    CaseContext,
    CaseSet,
    NotClaimed,
    dtype_of,
    exactness_of,
    expect,
    on_cpu,
    run_both,
    sample,
    sample_for_cast,
)

SUITE = CaseSet("dtypes")
CAST = exactness_of("_to_copy")  # a cast between dtypes is exact (oracle/exactness.py)
cases = SUITE.cases
PAIRS = [(a, b) for a in ALL_DTYPES for b in ALL_DTYPES]


def _integral(dt: torch.dtype) -> bool:
    return not (dt.is_floating_point or dt.is_complex)


BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
}


def _promoted(op: str, a: torch.dtype, b: torch.dtype) -> torch.dtype:
    dt = torch.promote_types(a, b)
    return torch.get_default_dtype() if op == "div" and _integral(dt) else dt


def _promotion_case(op: str, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    @SUITE.family(f"promotion/{op}", qualname=f"promotion_{op}",
                  level=3, dtypes=PAIRS, ops=(f"aten::{op}.Tensor",),
                  oracle="cpu+property:promote_types")
    def run(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
        other = dtype_of(dtypes[1])
        a = sample((4, 5), dtype, ctx.seed)
        for shape in ((4, 5), (5,)):
            b = sample(shape, other, ctx.seed + 1)
            ctx.describe(other_shape=list(shape))
            out = run_both(ctx, fn, a, b)
            if out is not None:
                want = _promoted(op, dtype, other)
                expect(out.dtype == want, "result dtype breaks the promotion table", got=str(out.dtype), expected=str(want))


for _op, _fn in BINARY.items():
    _promotion_case(_op, _fn)


@SUITE.case("result_type", level=2, dtypes=PAIRS, ops=("aten::result_type.Tensor", "aten::result_type.Scalar"),
            oracle="cpu+property:promote_types")
def result_type(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    other = dtype_of(dtypes[1])
    a, b = sample((3,), dtype, ctx.seed), sample((3,), other, ctx.seed + 1)
    da, db = a.to(ctx.device, copy=True), b.to(ctx.device, copy=True)
    got = torch.result_type(da, db)
    expect(got == torch.promote_types(dtype, other), "result_type of two tensors", got=str(got))
    for what, x, y, cx, cy in (
        ("tensor, 0-dim", da, db[0], a, b[0]),
        ("0-dim, 0-dim", da[0], db[0], a[0], b[0]),
        ("tensor, python scalar", da, b[0].item(), a, b[0].item()),
    ):
        got, want = torch.result_type(x, y), torch.result_type(cx, cy)
        expect(got == want, f"result_type({what}) differs from CPU", got=str(got), expected=str(want))


_FRACTIONS = [0.5, -0.5, 1.99, -1.99, -0.0, 7.25, -7.75, 100.5]


def _cast_source(src: torch.dtype, dst: torch.dtype, seed: int) -> torch.Tensor:
    t = sample_for_cast((4, 6), src, dst, seed).flatten()
    if src.is_floating_point:
        extra = torch.tensor([abs(v) if dst == torch.uint8 else v for v in _FRACTIONS], dtype=src)
        t = torch.cat([t, extra])
    return t


@SUITE.case("cast", level=2, dtypes=PAIRS, ops=("aten::_to_copy",), oracle="cpu+property:cast_rules")
def cast(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    dst = dtype_of(dtypes[1])
    src = _cast_source(dtype, dst, ctx.seed)
    dev = src.to(ctx.device, copy=True)
    out = dev.to(dst)
    expect(out.dtype == dst and out.device.type == ctx.device_type, "cast has the wrong dtype or device",
           got=f"{out.dtype} {out.device}")
    ctx.assert_close(out, src.to(dst), exact=CAST)
    values = src.tolist()
    got = out.cpu().tolist()
    if dst == torch.bool:
        expect(got == [v != 0 for v in values], "cast to bool must be (x != 0)")
    elif dtype.is_floating_point and _integral(dst):
        want = [math.trunc(v) for v in values]
        bad = [(v, g, w) for v, g, w in zip(values, got, want, strict=True) if g != w]
        expect(not bad, "float to integer casts must truncate toward zero", first=str(bad[:3]))
    elif dtype == torch.bool:
        expect(got == [int(v) if _integral(dst) else v for v in values], "bool casts to 0 and 1")
    ctx.assert_close(src.to(ctx.device, dst), src.to(dst), exact=CAST)


_NONFINITE = [math.nan, math.inf, -math.inf, 1e30, -1e30, 70000.0, 0.0]


@SUITE.case("cast_nonfinite", level=3, dtypes=[(a, b) for a in FLOATING + COMPLEX for b in ALL_DTYPES],
            ops=("aten::_to_copy",), requires=("ieee754",), oracle="cpu")
def cast_nonfinite(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    dst = dtype_of(dtypes[1])
    if _integral(dst) and dst != torch.bool:
        ctx.not_applicable("NaN/Inf/out-of-range to an integer dtype is undefined behaviour; CPU is no reference")
    src = torch.tensor(_NONFINITE, dtype=torch.float64).to(dtype)
    ctx.assert_close(src.to(ctx.device, copy=True).to(dst), src.to(dst), exact=CAST)


_SCALARS: dict[str, Callable[[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]], torch.Tensor]] = {
    "int": lambda t, here: t + 3,
    "float": lambda t, here: t * 2.5,
    "bool": lambda t, here: t * True,
    "complex": lambda t, here: t + 1j,
    "zero_dim_float": lambda t, here: t + here(torch.tensor(2.5)),
    "zero_dim_int64": lambda t, here: t * here(torch.tensor(3)),
    "zero_dim_float64": lambda t, here: t + here(torch.tensor(0.5, dtype=torch.float64)),
    "cpu_zero_dim": lambda t, here: t + torch.tensor(2.5),
    "zero_dim_self": lambda t, here: t[0, 0] + here(torch.arange(3, dtype=torch.int8)),
}


@SUITE.case("scalar", level=3, dtypes=ALL_DTYPES, params={k: {"form": k} for k in _SCALARS},
            ops=("aten::add.Tensor", "aten::mul.Tensor", "aten::add.Scalar"), oracle="cpu")
def scalar_operands(ctx: CaseContext, dtype: torch.dtype, form: str) -> None:
    """Python scalars and 0-dim tensors do not promote a dimensioned operand's category-equal dtype;
    a CPU 0-dim tensor may be combined with a device tensor."""
    fn = _SCALARS[form]
    t = sample((3, 4), dtype, ctx.seed)
    try:
        expected = fn(t, lambda x: x)
    except RuntimeError as exc:
        ctx.describe(cpu_raises=type(exc).__name__)
        try:
            fn(t.to(ctx.device, copy=True), lambda x: x.to(ctx.device, copy=True))
        except RuntimeError:
            return
        expect(False, "CPU raises for this operand mix, the device does not")
    if not ctx.claims_dtype(expected.dtype):  # float32 + 1j is complex64: a claim of its own
        raise NotClaimed(f"the result is of the unclaimed dtype {str(expected.dtype).removeprefix('torch.')}")
    actual = fn(t.to(ctx.device, copy=True), lambda x: x.to(ctx.device, copy=True))
    expect(actual.device.type == ctx.device_type, "result left the device", got=str(actual.device))
    ctx.assert_close(actual, expected)


BOOL_OPS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "sub": lambda a, b: a - b,
    "neg": lambda a, b: -a,
    "bitwise_not": lambda a, b: ~a,
    "and_or_xor": lambda a, b: torch.stack([a & b, a | b, a ^ b]),
    "sum": lambda a, b: a.sum(),
    "cumsum": lambda a, b: a.cumsum(0),
    "mean": lambda a, b: a.mean(),
    "div": lambda a, b: a / b,
    "max": lambda a, b: torch.stack([a.max(), a.min()]),
    "lt": lambda a, b: a < b,
    "where": lambda a, b: torch.where(a, 1.5, b),
}


@SUITE.case("bool", level=3, dtypes=("bool",), params={k: {"op": k} for k in BOOL_OPS},
            ops=tuple(f"aten::{k}" for k in ("add.Tensor", "mul.Tensor", "sub.Tensor", "neg", "bitwise_not",
                                             "sum", "cumsum", "mean", "div.Tensor", "max", "lt.Tensor", "where.self")))
def bool_semantics(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    """bool + bool is logical or, bool - bool and -bool raise, sums count in int64."""
    a, b = sample((17,), dtype, ctx.seed), sample((17,), dtype, ctx.seed + 1)
    out = run_both(ctx, BOOL_OPS[op], a, b)
    if op in ("sum", "cumsum") and out is not None:
        expect(out.dtype == torch.int64, f"bool {op} must accumulate in int64", got=str(out.dtype))


COMPLEX_OPS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "abs": torch.abs,
    "angle": torch.angle,
    "real_imag": lambda z: torch.stack([z.real, z.imag]),
    "conj": lambda z: z.conj() * 1,
    "conj_physical": torch.conj_physical,
    "sgn": torch.sgn,
    "times_float64": lambda z: z * torch.ones(z.shape, dtype=torch.float64, device=z.device),
    "plus_real_scalar": lambda z: z + 2.5,
    "view_as_real": lambda z: torch.view_as_real(z.clone()),
    "from_parts": lambda z: torch.complex(z.real.contiguous(), z.imag.contiguous()),
    "polar": torch.polar,
}
# The arguments of an op above made from the complex sample on CPU (default: the sample itself), so
# polar's device run is polar alone, not abs and angle too.
COMPLEX_ARGS: dict[str, Callable[[torch.Tensor], tuple[torch.Tensor, ...]]] = {
    "polar": lambda z: (z.abs(), z.angle()),
}


@SUITE.case("complex", level=3, dtypes=COMPLEX, params={k: {"op": k} for k in COMPLEX_OPS},
            ops=("aten::abs", "aten::angle", "aten::real", "aten::imag", "aten::conj", "aten::conj_physical",
                 "aten::sgn", "aten::mul.Tensor", "aten::view_as_real", "aten::complex", "aten::polar"))
def complex_semantics(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    """abs/angle of complex are real; complex64 * float64 is complex128; conj is lazy but exact."""
    z = sample((5, 3), dtype, ctx.seed)
    run_both(ctx, COMPLEX_OPS[op], *(on_cpu(COMPLEX_ARGS[op], z) if op in COMPLEX_ARGS else (z,)))


@SUITE.case("default_dtype", level=2, ops=("aten::lift_fresh", "aten::arange", "aten::full", "aten::zeros"),
            oracle="cpu")
def default_dtype(ctx: CaseContext) -> None:
    makers = {
        "tensor float": lambda d: torch.tensor([1.5], device=d),
        "tensor int": lambda d: torch.tensor([1], device=d),
        "tensor bool": lambda d: torch.tensor([True], device=d),
        "tensor complex": lambda d: torch.tensor([1j], device=d),
        "arange float": lambda d: torch.arange(3.0, device=d),
        "arange int": lambda d: torch.arange(3, device=d),
        "full float": lambda d: torch.full((2,), 1.5, device=d),
        "full int": lambda d: torch.full((2,), 7, device=d),
        "zeros": lambda d: torch.zeros(2, device=d),
    }
    unclaimed = []
    for name, make in makers.items():
        want = make("cpu")
        if not ctx.claims_dtype(want.dtype):  # torch.tensor([1j]) is complex64: a claim of its own
            unclaimed.append(name)
            ctx.describe(not_claimed=unclaimed)
            continue
        got = make(ctx.device)
        ctx.describe(factory=name)
        expect(got.dtype == want.dtype, "inferred dtype differs from CPU", got=str(got.dtype), expected=str(want.dtype))
        ctx.assert_close(got, want)
