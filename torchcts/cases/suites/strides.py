"""Strides and memory formats: non-contiguous inputs (transposed, stepped slices, zero-stride
expands, storage offsets), `as_strided`, `contiguous()`, `.to(memory_format=)`, and the layout
propagation rules of clone(preserve_format), elementwise ops and conv for channels_last and
channels_last_3d.

Values are checked against CPU; layouts are checked as well (strides and storage offsets must be
the ones CPU produces), because code downstream of a backend (view(), kernels with fast paths)
depends on them. Values on non-contiguous inputs are level 3; layout rules are level 5.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from torchcts.cases.api import (
    ALL_DTYPES,
    FLOATING,
    CaseContext,
    CaseSet,
    NotApplicable,
    contiguous_strides,
    cpu_reference,
    expect,
    on_cpu,
    sample,
)

SUITE = CaseSet("strides")
cases = SUITE.cases

# name -> (base shape, non-contiguous view of it)
LAYOUTS: dict[str, tuple[tuple[int, ...], Callable[[torch.Tensor], torch.Tensor]]] = {
    "transposed": ((7, 5), lambda t: t.t()),
    "permuted": ((3, 4, 5), lambda t: t.permute(2, 0, 1)),
    "step_slice": ((9, 10), lambda t: t[1::2, ::3]),
    "expanded": ((5, 1), lambda t: t.expand(5, 6)),
    "storage_offset": ((40,), lambda t: t[7:31].view(4, 6)),
    "offset_transposed": ((8, 9), lambda t: t[2:, 3:].t()),
}

# name -> (fn(x, y, mask), dtypes, aten op); mask is `x == y`, computed on CPU and moved, so that
# where's device run is where alone (no eq on the device before the op under test).
UNARY_BINARY: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor], tuple[str, ...], str]] = {
    "add": (lambda x, y, m: x + y, ALL_DTYPES, "aten::add.Tensor"),
    "mul": (lambda x, y, m: x * y, ALL_DTYPES, "aten::mul.Tensor"),
    "abs": (lambda x, y, m: x.abs(), tuple(d for d in ALL_DTYPES if d != "bool"), "aten::abs"),
    "sum": (lambda x, y, m: x.sum(-1), tuple(d for d in ALL_DTYPES if d != "bool"), "aten::sum.dim_IntList"),
    "clone": (lambda x, y, m: x.clone(), ALL_DTYPES, "aten::clone"),
    "where": (lambda x, y, m: torch.where(m, x, y), ALL_DTYPES, "aten::where.self"),
}


def _layout(ctx: CaseContext, layout: str, dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The same non-contiguous view built on CPU and on the device; its layout checked equal."""
    shape, view = LAYOUTS[layout]
    base = sample(shape, dtype, seed)
    cpu, dev = view(base), view(base.to(ctx.device, copy=True))
    got = (list(dev.stride()), dev.storage_offset())
    want = (list(cpu.stride()), cpu.storage_offset())
    expect(got == want, f"{layout} view: strides/offset differ from CPU", got=got, expected=want)
    return cpu, dev


def _noncontig_case(layout: str, op: str) -> None:
    fn, dtypes, aten = UNARY_BINARY[op]

    @SUITE.family(f"noncontig/{layout}/{op}", qualname=f"noncontig_{layout}_{op}",
                  level=3, dtypes=dtypes, ops=(aten,))
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        cpu, dev = _layout(ctx, layout, dtype, ctx.seed)
        other = sample(tuple(cpu.shape), dtype, ctx.seed + 1)
        mask = on_cpu(torch.eq, cpu, other)
        ctx.assert_close(fn(dev, other.to(ctx.device, copy=True), mask.to(ctx.device)), fn(cpu, other, mask),
                         category="reduction" if op == "sum" else "elementwise")


for _layout_name in LAYOUTS:
    for _op in UNARY_BINARY:
        _noncontig_case(_layout_name, _op)


AS_STRIDED = {
    "rows": ((3, 4), (4, 1), 0),
    "transpose_like": ((3, 3), (1, 3), 2),
    "zero_stride": ((4, 4), (0, 1), 5),
    "three_d": ((2, 2, 2), (4, 1, 2), 1),
    "overlapping": ((5, 3), (1, 1), 0),
}


@SUITE.case("as_strided", level=5, dtypes=ALL_DTYPES, params={k: {"geometry": k} for k in AS_STRIDED},
            ops=("aten::as_strided",), oracle="cpu+property:strides")
def as_strided(ctx: CaseContext, dtype: torch.dtype, geometry: str) -> None:
    size, stride, offset = AS_STRIDED[geometry]
    base = sample((24,), dtype, ctx.seed)
    for name, make in (("of a base", lambda t: t), ("of a view", lambda t: t[3:])):
        cpu = make(base).as_strided(size, stride, offset)
        dev = make(base.to(ctx.device, copy=True)).as_strided(size, stride, offset)
        ctx.describe(source=name)
        expect(tuple(dev.stride()) == stride and dev.storage_offset() == cpu.storage_offset(),
               "as_strided result has the wrong strides/offset",
               got=[list(dev.stride()), dev.storage_offset()], expected=[list(stride), cpu.storage_offset()])
        ctx.assert_close(dev, cpu)
        with ctx.helper_op("aten::add.Tensor" if dtype != torch.bool else "aten::bitwise_not"):  # computing through the view
            ctx.assert_close(dev + 1 if dtype != torch.bool else ~dev, cpu + 1 if dtype != torch.bool else ~cpu)


@SUITE.case("empty_strided", level=5, dtypes=ALL_DTYPES, ops=("aten::empty_strided",), oracle="property:strides")
def empty_strided(ctx: CaseContext, dtype: torch.dtype) -> None:
    for size, stride in (((3, 4), (1, 3)), ((2, 3, 4), (12, 1, 3)), ((5,), (2,)), ((0, 3), (3, 1))):
        t = torch.empty_strided(size, stride, dtype=dtype, device=ctx.device)
        expect(tuple(t.shape) == size and tuple(t.stride()) == stride and t.dtype == dtype,
               "empty_strided layout is wrong", size=list(size), got=list(t.stride()), expected=list(stride))


@SUITE.case("contiguous", level=5, dtypes=ALL_DTYPES, params={k: {"layout": k} for k in LAYOUTS},
            ops=("aten::contiguous", "aten::clone"), oracle="cpu+property:strides")
def contiguous(ctx: CaseContext, dtype: torch.dtype, layout: str) -> None:
    cpu, dev = _layout(ctx, layout, dtype, ctx.seed)
    out = dev.contiguous()
    expect(out.is_contiguous() and tuple(out.stride()) == contiguous_strides(tuple(out.shape)),
           "contiguous() result is not contiguous", got=list(out.stride()))
    ctx.assert_close(out, cpu.contiguous())
    expect(out.contiguous() is out, "contiguous() of a contiguous tensor must return it unchanged")


# memory format -> (rank it applies to, requires)
FORMATS: dict[str, tuple[int, tuple[str, ...]]] = {
    "channels_last": (4, ("channels_last",)),
    "channels_last_3d": (5, ("channels_last",)),
    "permuted": (4, ()),
}
_SHAPE = {4: (2, 3, 4, 5), 5: (2, 3, 2, 3, 4)}


def formatted(fmt: str, base: torch.Tensor) -> torch.Tensor:
    if fmt == "permuted":  # dense, non-overlapping, not a named memory format
        return base.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)
    return base.contiguous(memory_format=getattr(torch, fmt))


def _expect_layout(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    expect(tuple(actual.stride()) == tuple(expected.stride()), f"{what}: strides differ from CPU",
           got=list(actual.stride()), expected=list(expected.stride()))


def _format_case(name: str, ops: tuple[str, ...], dtypes: tuple[str, ...],
                 body: Callable[[CaseContext, torch.dtype, str], None], extra_requires: tuple[str, ...] = ()) -> None:
    for fmt, (_, requires) in FORMATS.items():
        def run(ctx: CaseContext, dtype: torch.dtype, _fmt: str = fmt) -> None:
            body(ctx, dtype, _fmt)

        SUITE.family(f"{name}/{fmt}", qualname=f"{name.replace('/', '_')}_{fmt}",
                     level=5, dtypes=dtypes, ops=ops, requires=(*requires, *extra_requires),
                     oracle="cpu+property:strides")(run)


def _inputs(ctx: CaseContext, dtype: torch.dtype, fmt: str, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    cpu = formatted(fmt, sample(_SHAPE[FORMATS[fmt][0]], dtype, ctx.seed + seed))
    dev = formatted(fmt, cpu.to(ctx.device, copy=True))
    _expect_layout(dev, cpu, f"{fmt} input")
    return cpu, dev


def _clone(ctx: CaseContext, dtype: torch.dtype, fmt: str) -> None:
    cpu, dev = _inputs(ctx, dtype, fmt)
    out = dev.clone(memory_format=torch.preserve_format)
    _expect_layout(out, dev, "clone(preserve_format) must keep a dense layout")
    ctx.assert_close(out, cpu)
    flat = dev.clone(memory_format=torch.contiguous_format)
    expect(flat.is_contiguous(), "clone(contiguous_format) is not contiguous", got=list(flat.stride()))
    ctx.assert_close(flat, cpu)


def _to_format(ctx: CaseContext, dtype: torch.dtype, fmt: str) -> None:
    base = sample(_SHAPE[FORMATS[fmt][0]], dtype, ctx.seed)
    dev = base.to(ctx.device, copy=True)
    if fmt != "permuted":
        mf = getattr(torch, fmt)
        out = dev.to(memory_format=mf)
        _expect_layout(out, base.to(memory_format=mf), f".to(memory_format={fmt})")
        expect(out.is_contiguous(memory_format=mf), f".to(memory_format={fmt}) result is not in that format")
        ctx.assert_close(out, base)
        dev = out
    # back to contiguous_format; CPU decides the layout (a permuted tensor that is not a named
    # format suggests contiguous_format, so .to() returns it as it is)
    back = formatted(fmt, dev).to(memory_format=torch.contiguous_format)
    _expect_layout(back, formatted(fmt, base).to(memory_format=torch.contiguous_format),
                   ".to(memory_format=contiguous_format)")
    if fmt != "permuted":
        expect(back.is_contiguous(), ".to(memory_format=contiguous_format) is not contiguous", got=list(back.stride()))
    ctx.assert_close(back, base)


ELEMENTWISE: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": lambda x, y: x + y,
    "mul_scalar": lambda x, y: x * 2,
    "abs": lambda x, y: x.abs(),
    "relu": lambda x, y: torch.relu(x),
    "add_contiguous": lambda x, y: x + y.contiguous(),
}


def _elementwise(ctx: CaseContext, dtype: torch.dtype, fmt: str) -> None:
    cpu_x, dev_x = _inputs(ctx, dtype, fmt)
    cpu_y, dev_y = _inputs(ctx, dtype, fmt, seed=1)
    for name, fn in ELEMENTWISE.items():
        ctx.describe(op=name)
        expected = fn(cpu_x, cpu_y)
        actual = fn(dev_x, dev_y)
        _expect_layout(actual, expected, f"{name} on a {fmt} input")
        ctx.assert_close(actual, expected)


CONV_LIKE: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "conv": lambda x, w: F.conv2d(x, w, padding=1) if x.dim() == 4 else F.conv3d(x, w, padding=1),
    "max_pool": lambda x, w: F.max_pool2d(x, 2) if x.dim() == 4 else F.max_pool3d(x, 2),
    "avg_pool": lambda x, w: F.avg_pool2d(x, 2) if x.dim() == 4 else F.avg_pool3d(x, 2),
    "batch_norm": lambda x, w: F.batch_norm(x, None, None, training=True),
}


def _conv(ctx: CaseContext, dtype: torch.dtype, fmt: str) -> None:
    cpu_x, dev_x = _inputs(ctx, dtype, fmt)
    rank = FORMATS[fmt][0]
    w = formatted(fmt, sample((4, 3) + (3,) * (rank - 2), dtype, ctx.seed + 2) / 4)
    lacking = []
    for name, fn in CONV_LIKE.items():
        ctx.describe(op=name)
        try:
            expected = cpu_reference(ctx, lambda f=fn: f(cpu_x, w), f"{name} in {dtype}")
        except NotApplicable as exc:  # no CPU reference for this op alone: check the others
            lacking.append(str(exc))
            continue
        actual = fn(dev_x, w.to(ctx.device, copy=True))
        _expect_layout(actual, expected, f"{name} on a {fmt} input")
        ctx.assert_close(actual, expected, category="conv")
    ctx.describe(op=None, no_reference=lacking or None)
    if len(lacking) == len(CONV_LIKE):
        ctx.not_applicable("; ".join(lacking))


_format_case("clone", ("aten::clone",), ALL_DTYPES, _clone)
_format_case("to_memory_format", ("aten::_to_copy", "aten::clone"), ALL_DTYPES, _to_format)
_format_case("elementwise", ("aten::add.Tensor", "aten::mul.Tensor", "aten::abs", "aten::relu"),
             tuple(d for d in ALL_DTYPES if d not in ("bool", "complex64", "complex128")), _elementwise)
_format_case("conv", ("aten::convolution", "aten::max_pool2d", "aten::avg_pool2d", "aten::native_batch_norm"),
             FLOATING, _conv, extra_requires=("inference",))
