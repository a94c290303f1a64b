"""Aliasing and mutation (suite `operators`, level 3): views share memory with their base on the
device, writes through a view show in the base and back, in-place ops return `self`, `out=`
returns and fills the given tensor (resizing an empty one, keeping a non-contiguous one's
strides), `copy_` across devices and dtypes, and `detach`/`.data` alias.

Every sequence of operations runs on CPU and on the device; besides the CPU oracle of values,
memory sharing is checked as a property (same storage pointer), since a copy that happens to have
the right values is exactly the bug these cases exist to catch.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchcts.cases.api import (
    ALL_DTYPES,
    COMPLEX,
    FLOATING,
    INTEGRAL,
    CaseContext,
    CaseSet,
    cpu_reference,
    dtype_of,
    exactness_of,
    expect,
    expect_raises,
    same_storage,
    sample,
    sample_for_cast,
)

SUITE = CaseSet("operators")
cases = SUITE.cases  # a part of the operators suite (cases/registry.py)
COPY = exactness_of("copy_")  # a copy between devices or dtypes is exact (oracle/exactness.py)
NUMERIC = INTEGRAL + FLOATING + COMPLEX
BASE_SHAPE = (6, 8)

# name -> (view function of a (6, 8) base, whether writing through it is defined)
VIEWS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], bool]] = {
    "view": (lambda t: t.view(8, 6), True),
    "reshape": (lambda t: t.reshape(48), True),
    "flatten": (lambda t: t.flatten(), True),
    "transpose": (lambda t: t.transpose(0, 1), True),
    "t": (lambda t: t.t(), True),
    "permute": (lambda t: t.unsqueeze(0).permute(2, 0, 1), True),
    "swapaxes": (lambda t: t.swapaxes(0, 1), True),
    "narrow": (lambda t: t.narrow(1, 2, 3), True),
    "select": (lambda t: t.select(0, 2), True),
    "index_int": (lambda t: t[3], True),
    "slice_step": (lambda t: t[1::2, ::3], True),
    "unsqueeze": (lambda t: t.unsqueeze(1), True),
    "squeeze": (lambda t: t.unsqueeze(0).squeeze(0), True),
    "unflatten": (lambda t: t.unflatten(1, (2, 4)), True),
    "diagonal": (lambda t: t.diagonal(offset=1), True),
    "split": (lambda t: t.split(3, dim=1)[1], True),
    "chunk": (lambda t: t.chunk(2, dim=0)[1], True),
    "as_strided": (lambda t: t.as_strided((3, 3), (8, 2), 1), True),
    "expand": (lambda t: t[:, :1].expand(6, 5), False),
    "unfold": (lambda t: t.unfold(1, 3, 2), False),
}


def _ops_of(name: str) -> tuple[str, ...]:
    aten = {"index_int": "select.int", "slice_step": "slice.Tensor", "t": "t", "reshape": "view",
            "flatten": "view", "squeeze": "squeeze.dim", "split": "split.Tensor", "chunk": "split.Tensor"}
    return (f"aten::{aten.get(name, name)}",)


def _view_case(name: str, fn: Callable[[torch.Tensor], torch.Tensor], writable: bool) -> None:
    @SUITE.family(f"aliasing/view/{name}", qualname=f"view_{name}",
                  level=3, dtypes=ALL_DTYPES, ops=_ops_of(name),
                  oracle="cpu+property:shares_storage")
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        cpu_base = sample(BASE_SHAPE, dtype, ctx.seed)
        dev_base = cpu_base.to(ctx.device, copy=True)
        cpu_view, dev_view = fn(cpu_base), fn(dev_base)
        expect(same_storage(dev_view, dev_base), f"{name} on the device returned a copy, not a view of its base")
        expect(dev_view._is_view(), f"{name} result is not marked as a view")
        layout = (list(dev_view.stride()), dev_view.storage_offset())
        expect(layout == (list(cpu_view.stride()), cpu_view.storage_offset()), "view strides/offset differ from CPU",
               got=layout, expected=(list(cpu_view.stride()), cpu_view.storage_offset()))
        ctx.assert_close(dev_view, cpu_view)
        if writable:
            # write through the view: the base must change where the view maps
            new = sample(tuple(cpu_view.shape), dtype, ctx.seed + 1)
            cpu_view.copy_(new)
            dev_view.copy_(new.to(ctx.device, copy=True))
            ctx.describe(step="write through view, read base")
            ctx.assert_close(dev_base, cpu_base)
        # write to the base: the existing view must see it
        cpu_base.copy_(sample(BASE_SHAPE, dtype, ctx.seed + 2))
        dev_base.copy_(cpu_base.to(ctx.device, copy=True))
        ctx.describe(step="write base, read view")
        ctx.assert_close(dev_view, cpu_view)


for _name, (_fn, _writable) in VIEWS.items():
    _view_case(_name, _fn, _writable)


@SUITE.case("aliasing/view_of_view", level=3, dtypes=("float32", "int64"),
            ops=("aten::view", "aten::transpose", "aten::fill_"),
            oracle="property:shares_storage")
def view_of_view(ctx: CaseContext, dtype: torch.dtype) -> None:
    base = sample(BASE_SHAPE, dtype, ctx.seed).to(ctx.device, copy=True)
    v2 = base.t()[1:5].unsqueeze(0)
    expect(same_storage(v2, base) and v2._base is base, "a view of a view must share the root base")
    v2.fill_(3)
    expect(bool((base.cpu()[:, 1:5] == 3).all()), "writes through a view of a view do not reach the base")


@SUITE.case("aliasing/real_imag", level=3, dtypes=COMPLEX, ops=("aten::real", "aten::imag", "aten::view_as_real"),
            oracle="cpu+property:shares_storage")
def real_imag(ctx: CaseContext, dtype: torch.dtype) -> None:
    cpu = sample((5, 4), dtype, ctx.seed)
    dev = cpu.to(ctx.device, copy=True)
    for get in (lambda t: t.real, lambda t: t.imag, torch.view_as_real):
        expect(same_storage(get(dev), dev), "real/imag/view_as_real must be views of the complex tensor")
    dev.real.fill_(2)
    dev.imag[1].fill_(-1)
    cpu.real.fill_(2)
    cpu.imag[1].fill_(-1)
    ctx.assert_close(dev, cpu)


def _host(fn: Callable[[torch.Tensor], torch.Tensor], t: torch.Tensor) -> torch.Tensor:
    """fn of t computed on a host copy, moved to t's device: an operand the case needs, not one it tests."""
    return fn(t.detach().cpu()).to(t.device)


# name -> (in-place function, dtypes)
INPLACE: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], tuple[str, ...]]] = {
    "add_": (lambda t: t.add_(t, alpha=2) if t.dtype == torch.bool else t.add_(3), ALL_DTYPES),
    "mul_": (lambda t: t.mul_(t), ALL_DTYPES),
    "sub_": (lambda t: t.sub_(1), NUMERIC),
    "neg_": (lambda t: t.neg_(), NUMERIC),
    "zero_": (lambda t: t.zero_(), ALL_DTYPES),
    "fill_": (lambda t: t.fill_(1), ALL_DTYPES),
    "clamp_": (lambda t: t.clamp_(-2, 5), INTEGRAL + FLOATING),
    # the mask and the copy's source are made on the host: a device `ne` or `flip` is not the op under test
    "masked_fill_": (lambda t: t.masked_fill_(_host(lambda h: h.real != 0 if h.is_complex() else h != 0, t), 1),
                     ALL_DTYPES),
    "index_fill_": (lambda t: t.index_fill_(-1, torch.tensor([0, 2], device=t.device), 1), ALL_DTYPES),
    "copy_": (lambda t: t.copy_(_host(lambda h: h.flip(-1), t)), ALL_DTYPES),
    "mul_float": (lambda t: t.mul_(1.5), ALL_DTYPES),
}


def _inplace_case(name: str, fn: Callable[[torch.Tensor], torch.Tensor], dtypes: tuple[str, ...]) -> None:
    op = name.removesuffix("_float") + ("_" if name.endswith("_float") else "")

    @SUITE.family(f"aliasing/inplace/{name}", qualname=f"inplace_{name}",
                  level=3, dtypes=dtypes, ops=(f"aten::{op}",),
                  oracle="cpu+property:returns_self")
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        for where, view in (("contiguous", lambda t: t), ("transposed", lambda t: t.t()), ("strided", lambda t: t[::2, 1::3])):
            cpu_base = sample(BASE_SHAPE, dtype, ctx.seed)
            dev_base = cpu_base.to(ctx.device, copy=True)
            ctx.describe(target=where)
            try:
                cpu_reference(ctx, lambda b=cpu_base, v=view: fn(v(b)), f"{name} in {dtype}")
            except RuntimeError as exc:  # e.g. an integer tensor cannot hold a float result
                expect_raises(lambda b=dev_base, v=view: fn(v(b)), "CPU refuses this in-place op", type(exc))
                continue
            target = view(dev_base)
            result = fn(target)
            expect(result is target, f"{name} must return self")
            ctx.assert_close(dev_base, cpu_base)


for _name, (_fn, _dtypes) in INPLACE.items():
    _inplace_case(_name, _fn, _dtypes)


OUT_OPS: dict[str, tuple[Callable[..., torch.Tensor], tuple[str, ...]]] = {
    "add": (lambda a, b, out: torch.add(a, b, out=out), ALL_DTYPES),
    "mul": (lambda a, b, out: torch.mul(a, b, out=out), ALL_DTYPES),
    "abs": (lambda a, b, out: torch.abs(a, out=out), INTEGRAL + FLOATING + COMPLEX),
    "sum": (lambda a, b, out: torch.sum(a, dim=1, out=out), NUMERIC),
    "mm": (lambda a, b, out: torch.mm(a, b.t(), out=out), ("float32", "float64", "int64")),
}


def _out_case(name: str, fn: Callable[..., torch.Tensor], dtypes: tuple[str, ...]) -> None:
    @SUITE.family(f"aliasing/out/{name}", qualname=f"out_{name}",
                  level=3, dtypes=dtypes, ops=(f"aten::{name}.out",),
                  oracle="cpu+property:out_semantics")
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        a, b = sample((4, 6), dtype, ctx.seed), sample((4, 6), dtype, ctx.seed + 1)
        expected = fn(a, b, None)
        da, db = a.to(ctx.device, copy=True), b.to(ctx.device, copy=True)
        shape = tuple(expected.shape)
        # right shape, contiguous: written in place, no reallocation
        out = torch.empty(shape, dtype=expected.dtype, device=ctx.device)
        ptr = out.data_ptr()
        expect(fn(da, db, out) is out, "out= must return the given tensor")
        expect(out.data_ptr() == ptr, "out= of the right shape was reallocated")
        ctx.assert_close(out, expected)
        # empty out: resized to the result shape
        out = torch.empty(0, dtype=expected.dtype, device=ctx.device)
        expect(fn(da, db, out) is out, "out= must return the given tensor")
        expect(tuple(out.shape) == shape, "an empty out= was not resized", got=list(out.shape))
        ctx.assert_close(out, expected)
        # non-contiguous out of the right shape: strides kept, values right
        if len(shape) == 2:
            out = torch.empty(tuple(reversed(shape)), dtype=expected.dtype, device=ctx.device).t()
            strides = out.stride()
            fn(da, db, out)
            expect(out.stride() == strides, "out= changed a non-contiguous out's strides",
                   got=list(out.stride()), expected=list(strides))
            ctx.assert_close(out, expected)


for _name, (_fn, _dtypes) in OUT_OPS.items():
    _out_case(_name, _fn, _dtypes)


@SUITE.case("aliasing/copy_", level=3, dtypes=[(a, b) for a in ALL_DTYPES for b in ALL_DTYPES],
            ops=("aten::copy_",), oracle="cpu+property:returns_self")
def copy_between(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """copy_ from CPU, from the device, to CPU, into a non-contiguous and a broadcast target."""
    dst_dtype = dtype_of(dtypes[1])
    src = sample_for_cast((4, 5), dtype, dst_dtype, ctx.seed)
    expected = torch.empty(4, 5, dtype=dst_dtype).copy_(src)
    dev_src = src.to(ctx.device, copy=True)
    for what, source in (("from cpu", src), ("on device", dev_src)):
        dst = torch.empty(4, 5, dtype=dst_dtype, device=ctx.device)
        expect(dst.copy_(source) is dst, "copy_ must return self")
        ctx.describe(copy=what)
        ctx.assert_close(dst, expected, exact=COPY)
    ctx.describe(copy="to cpu")
    ctx.assert_close(torch.empty(4, 5, dtype=dst_dtype).copy_(dev_src), expected, exact=COPY)
    ctx.describe(copy="into a transposed target")
    dst = torch.empty(5, 4, dtype=dst_dtype, device=ctx.device).t()
    dst.copy_(dev_src)
    ctx.assert_close(dst, expected, exact=COPY)
    ctx.describe(copy="broadcast one row")
    dst = torch.empty(4, 5, dtype=dst_dtype, device=ctx.device).copy_(dev_src[1:2])
    ctx.assert_close(dst, expected[1:2].expand(4, 5), exact=COPY)


@SUITE.case("aliasing/detach", level=3, dtypes=ALL_DTYPES, ops=("aten::detach", "aten::alias"),
            oracle="property:shares_storage")
def detach(ctx: CaseContext, dtype: torch.dtype) -> None:
    t = sample((3, 4), dtype, ctx.seed).to(ctx.device, copy=True)
    if dtype.is_floating_point or dtype.is_complex:
        t.requires_grad_()
    for name, alias in (("detach()", t.detach()), (".data", t.data)):
        expect(same_storage(alias, t), f"{name} must share memory with the tensor")
        expect(not alias.requires_grad, f"{name} must not require grad")
        alias[0, 0] = alias[1, 1]
        host = t.detach().cpu()  # compared on the host: a device eq is not the op under test
        expect(bool(host[0, 0] == host[1, 1]), f"a write through {name} is not visible in the tensor")
