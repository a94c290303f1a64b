"""Level-1 core primitives (suite `operators`): every factory for every claimed dtype, scalars out
of the device (item, tolist), moves between devices, torch.equal and printing.

Values are checked against CPU; `empty` and `empty_like` have no defined values and are checked
structurally (shape, dtype, device, strides).
"""

from __future__ import annotations

import re

import torch

from torchcts.cases.api import (
    ALL_DTYPES,
    CaseContext,
    CaseSet,
    contiguous_strides,
    cpu_reference,
    exactness_of,
    expect,
    sample,
)

SUITE = CaseSet("operators")
cases = SUITE.cases  # a part of the operators suite (cases/registry.py)
COPY = exactness_of("copy_")  # a copy between devices or dtypes is exact (oracle/exactness.py)
NUMERIC = tuple(d for d in ALL_DTYPES if d != "bool")
SHAPES = ((), (0,), (1,), (3, 4), (2, 3, 5))


def expect_structure(ctx: CaseContext, t: torch.Tensor, shape: tuple[int, ...], dtype: torch.dtype,
                     strides: tuple[int, ...] | None = None) -> None:
    """Shape, dtype, device and strides of a tensor whose values are undefined."""
    got = {"shape": list(t.shape), "dtype": str(t.dtype), "device": str(t.device), "stride": list(t.stride())}
    expect(tuple(t.shape) == tuple(shape), "wrong shape", **got)
    expect(t.dtype == dtype, "wrong dtype", **got)
    expect(t.device.type == ctx.device_type, "created on the wrong device", **got)
    want = strides if strides is not None else contiguous_strides(tuple(shape))
    expect(tuple(t.stride()) == tuple(want), "wrong strides", expected=list(want), **got)


@SUITE.case("core/empty", level=1, dtypes=ALL_DTYPES, ops=("aten::empty.memory_format",),
            oracle="property:structure")
def empty(ctx: CaseContext, dtype: torch.dtype) -> None:
    for shape in SHAPES:
        ctx.describe(shape=list(shape))
        expect_structure(ctx, torch.empty(shape, dtype=dtype, device=ctx.device), shape, dtype)


@SUITE.case("core/arange", level=1, dtypes=ALL_DTYPES, ops=("aten::arange", "aten::arange.start_step"))
def arange(ctx: CaseContext, dtype: torch.dtype) -> None:
    ranges = [(0, 10, 1), (2, 17, 3), (10, 0, -2), (5, 5, 1)]
    if dtype.is_floating_point:
        ranges.append((-1.0, 2.0, 0.25))
    for start, end, step in ranges:
        ctx.describe(start=start, end=end, step=step)
        expected = cpu_reference(ctx, lambda s=start, e=end, st=step: torch.arange(s, e, st, dtype=dtype), "arange")
        actual = torch.arange(start, end, step, dtype=dtype, device=ctx.device)
        ctx.assert_close(actual, expected)


@SUITE.case("core/linspace", level=1, dtypes=ALL_DTYPES, ops=("aten::linspace",),
            oracle="cpu+property:endpoints")
def linspace(ctx: CaseContext, dtype: torch.dtype) -> None:
    lo = 0 if dtype == torch.uint8 else -3  # negative values have no uint8 representation
    for start, end, steps in ((lo, 7, 11), (0, 1, 1), (0, 1, 0), (2, 50, 25), (0, 100, 64)):
        ctx.describe(start=start, end=end, steps=steps)
        expected = cpu_reference(ctx, lambda a=start, b=end, n=steps: torch.linspace(a, b, n, dtype=dtype), "linspace")
        actual = torch.linspace(start, end, steps, dtype=dtype, device=ctx.device)
        expect(tuple(actual.shape) == (steps,), "linspace returned the wrong number of points", got=list(actual.shape))
        if steps >= 2:
            # read on the host: indexing on the device would be a device op this case does not test
            ends = actual.cpu()[[0, -1]].to(torch.complex128 if dtype.is_complex else torch.float64).tolist()
            expect(ends == [start, end], "linspace must start at start and end exactly at end", got=[str(v) for v in ends])
        ctx.assert_close(actual, expected)


@SUITE.case("core/eye", level=1, dtypes=ALL_DTYPES, ops=("aten::eye", "aten::eye.m"))
def eye(ctx: CaseContext, dtype: torch.dtype) -> None:
    for n, m in ((0, None), (1, None), (5, None), (3, 7), (6, 2)):
        ctx.describe(n=n, m=m)
        args = (n,) if m is None else (n, m)
        ctx.assert_close(torch.eye(*args, dtype=dtype, device=ctx.device), torch.eye(*args, dtype=dtype))


_LIKE = {
    "empty_like": lambda t, **kw: torch.empty_like(t, **kw),
    "zeros_like": lambda t, **kw: torch.zeros_like(t, **kw),
    "ones_like": lambda t, **kw: torch.ones_like(t, **kw),
    "full_like": lambda t, **kw: torch.full_like(t, True if (kw.get("dtype") or t.dtype) == torch.bool else 7, **kw),
}


@SUITE.case("core/like", level=1, dtypes=ALL_DTYPES, params={k: {"fn": k} for k in _LIKE},
            ops=("aten::empty_like", "aten::zeros_like", "aten::ones_like", "aten::full_like"))
def like(ctx: CaseContext, dtype: torch.dtype, fn: str) -> None:
    make = _LIKE[fn]
    for shape in SHAPES:
        ctx.describe(shape=list(shape))
        src = sample(shape, dtype, ctx.seed)
        dev = src.to(ctx.device)
        for kw in ({}, {"dtype": torch.float32}):
            out, ref = make(dev, **kw), make(src, **kw)
            expect_structure(ctx, out, shape, ref.dtype)
            if fn != "empty_like":
                ctx.assert_close(out, ref, constant=True)


@SUITE.case("core/item", level=1, dtypes=ALL_DTYPES, ops=("aten::item", "aten::_local_scalar_dense"))
def item(ctx: CaseContext, dtype: torch.dtype) -> None:
    for shape in ((), (1,), (1, 1)):
        src = sample(shape, dtype, ctx.seed + 3)
        got, want = src.to(ctx.device).item(), src.item()
        ctx.describe(shape=list(shape))
        expect(type(got) is type(want) and got == want, "item() differs from CPU", got=repr(got), expected=repr(want))


@SUITE.case("core/tolist", level=1, dtypes=ALL_DTYPES, ops=("aten::_local_scalar_dense",))
def tolist(ctx: CaseContext, dtype: torch.dtype) -> None:
    for shape in SHAPES:
        src = sample(shape, dtype, ctx.seed + 5)
        got, want = src.to(ctx.device).tolist(), src.tolist()
        ctx.describe(shape=list(shape))
        expect(got == want, "tolist() differs from CPU", got=repr(got)[:200], expected=repr(want)[:200])


@SUITE.case("core/to_device", level=1, dtypes=ALL_DTYPES, ops=("aten::_to_copy",))
def to_device(ctx: CaseContext, dtype: torch.dtype) -> None:
    src = sample((4, 5), dtype, ctx.seed)
    dev = src.to(ctx.device)
    expect(dev.device.type == ctx.device_type, ".to(device) left the tensor elsewhere", got=str(dev.device))
    expect(dev.to(ctx.device) is dev, ".to(device) of a tensor already there must return it unchanged")
    back = dev.cpu()
    expect(back.device.type == "cpu" and back.dtype == dtype, ".cpu() wrong device or dtype", got=f"{back.device} {back.dtype}")
    ctx.assert_close(back, src, exact=COPY)
    ctx.assert_close(dev.to("cpu"), src, exact=COPY)
    as_f32 = src.to(ctx.device, torch.float32)
    expect(as_f32.device.type == ctx.device_type and as_f32.dtype == torch.float32, ".to(device, dtype) result wrong")
    ctx.assert_close(as_f32, src.to(torch.float32), exact=COPY)


@SUITE.case("core/equal", level=1, dtypes=ALL_DTYPES, ops=("aten::equal",), oracle="property:equal")
def equal(ctx: CaseContext, dtype: torch.dtype) -> None:
    src = sample((3, 6), dtype, ctx.seed)
    a, b = src.to(ctx.device), src.clone().to(ctx.device)
    expect(torch.equal(a, b), "torch.equal is False for equal tensors")
    changed = src.clone()
    changed[1, 2] = (not bool(changed[1, 2])) if dtype == torch.bool else changed[1, 2] + 1
    expect(not torch.equal(a, changed.to(ctx.device)), "torch.equal is True for tensors differing in one element")
    expect(not torch.equal(a, a[:2]), "torch.equal is True for tensors of different shapes")
    expect(torch.equal(a[:, ::2], src[:, ::2].contiguous().to(ctx.device)), "torch.equal is wrong for a strided view")


_DEVICE_SUFFIX = re.compile(r",\s*device='[^']*'")
_SPACE = re.compile(r"\s+")


def printed_values(text: str) -> str:
    """A tensor's repr without its device and layout: PyTorch wraps `dtype=...` onto a new line when
    a long `device='name:0'` makes the line too long, which changes no value."""
    return _SPACE.sub("", _DEVICE_SUFFIX.sub("", text))


@SUITE.case("core/repr", level=1, dtypes=ALL_DTYPES, ops=("aten::_local_scalar_dense",), oracle="cpu+property:repr")
def printing(ctx: CaseContext, dtype: torch.dtype) -> None:
    for shape in ((), (0,), (5,), (3, 4)):
        src = sample(shape, dtype, ctx.seed + 1)
        text = repr(src.to(ctx.device))
        ctx.describe(shape=list(shape), repr=text[:300])
        if ctx.device_type != "cpu":
            expect(f"device='{ctx.device}" in text or f"device='{ctx.device_type}" in text,
                   "repr of a device tensor does not name its device")
        expect(printed_values(text) == printed_values(repr(src)), "printed values differ from CPU",
               expected=repr(src)[:300])
