"""Level 3 in-place through views: every in-place op applied to a view of a larger base.

OpInfo's in-place samples are fresh, contiguous tensors at storage offset 0, so a kernel that
ignores the storage offset, assumes unit strides or computes into a temporary and forgets to
copy back passes them. Here the same samples (and hand-written index/scatter/fill/copy calls)
are written into a view of a larger base (VIEWS: a slice with a storage offset, a select, a
permutation, a step-3 slice) and the op runs on the view, on the device and on CPU. Compared
with CPU: the op returns the view itself, the view's values, and the base outside the view,
which must be left bit-identical. Random in-place ops (no CPU oracle for their values) are
checked on the untouched region only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import (
    CaseContext,
    CaseSet,
    constant_by_definition,
    copy_sample,
    expect,
    generate,
    load_op_db,
    lookup,
    oracle_for,
    sample,
    select_samples,
    strengthener,
)

SUITE = CaseSet("inplace_views")
cases = SUITE.cases
LEVEL = 3
MAX_SAMPLES = 2  # OpInfo samples per op: each runs through every view kind


# A view kind makes (base shape, view of a base) for a wanted view shape; None when it does not apply.
def _offset(shape: tuple[int, ...]) -> tuple[tuple[int, ...], Callable[[torch.Tensor], torch.Tensor]] | None:
    if not shape:
        return (3,), lambda b: b[1]
    return (shape[0] + 3, *shape[1:]), lambda b: b[2:2 + shape[0]]


def _select(shape: tuple[int, ...]) -> tuple[tuple[int, ...], Callable[[torch.Tensor], torch.Tensor]] | None:
    return (*shape, 3), lambda b: b.select(-1, 1)


def _transposed(shape: tuple[int, ...]) -> tuple[tuple[int, ...], Callable[[torch.Tensor], torch.Tensor]] | None:
    if len(shape) < 2:
        return None
    order = tuple(reversed(range(len(shape))))
    return tuple(shape[i] for i in order), lambda b: b.permute(order)


def _strided(shape: tuple[int, ...]) -> tuple[tuple[int, ...], Callable[[torch.Tensor], torch.Tensor]] | None:
    if not shape:
        return None
    return (3 * shape[0] + 1, *shape[1:]), lambda b: b[1::3]


VIEWS: dict[str, Callable[[tuple[int, ...]], Any]] = {
    "offset": _offset, "select": _select, "transposed": _transposed, "strided": _strided,
}


def _base(shape: tuple[int, ...], dtype: torch.dtype, salt: int) -> torch.Tensor:
    return sample(shape, dtype, 1000 + salt)


def untouched(base_shape: tuple[int, ...], view: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """Mask of the base's elements outside the view (the base is contiguous)."""
    index = torch.arange(int(torch.Size(base_shape).numel())).reshape(base_shape)
    mask = torch.ones(index.numel(), dtype=torch.bool)
    mask[view(index).reshape(-1)] = False
    return mask


def check_through_views(ctx: CaseContext, value: torch.Tensor, apply: Callable[[torch.Tensor, str], Any],
                        values: bool = True, salt: int = 0, constant: bool = False) -> int:
    """For each view kind: a base whose view holds `value`; `apply(view, device)` runs the in-place op
    on it (on CPU first: when CPU raises, the kind is skipped). Returns the number of kinds checked.
    `constant`: the op writes one value everywhere by definition (fill_, zero_: not a weak reference)."""
    checked = 0
    for kind, make in VIEWS.items():
        made = make(tuple(value.shape))
        if made is None:
            continue
        base_shape, view = made
        cpu_base = _base(base_shape, value.dtype, salt)
        view(cpu_base).copy_(value)
        dev_base = cpu_base.to(ctx.device, copy=True)
        try:
            apply(view(cpu_base), "cpu")
        except Exception:  # noqa: BLE001 - CPU rejects this layout or sample: nothing to compare
            continue
        ctx.describe(view=kind, base_shape=list(base_shape))
        dev_view = view(dev_base)
        result = apply(dev_view, "device")
        expect(result is dev_view, "the in-place op did not return the view it was applied to",
               got=type(result).__name__)
        got = dev_base.cpu()
        mask = untouched(base_shape, view)
        outside, want = got.reshape(-1)[mask], cpu_base.reshape(-1)[mask]
        expect(torch.equal(outside, want), "the in-place op on a view changed the base outside the view",
               changed=int((outside != want).sum()), of=int(mask.sum()))
        if values:
            ctx.assert_close(view(got), view(cpu_base), constant=constant)
        checked += 1
    ctx.info.pop("view", None)
    ctx.info.pop("base_shape", None)
    return checked


def _opinfo_targets() -> list[tuple[str, str, str, str]]:
    """(op name, variant, aten name, dtype) of every OpInfo with an in-place variant, one dtype each."""
    out = []
    for op in load_op_db():
        if op.inplace_variant is None or not callable(op.inplace_variant):
            continue
        supported = {str(d).removeprefix("torch.") for d in op.supported_dtypes("cpu")}
        dtype = next((d for d in ("float32", "int64", "bool", "complex64") if d in supported), None)
        if dtype is not None:
            out.append((op.name, op.variant_test_name, op.aten_name or op.name, dtype))
    return out


def opinfo_inplace(ctx: CaseContext, dtype: torch.dtype, op: str, variant: str) -> None:
    """An OpInfo op's in-place variant, on its first samples, through every view kind."""
    import warnings

    info = lookup(op, variant)
    fn = info.inplace_variant
    values = oracle_for(info) == "cpu"
    strengthen = strengthener(op, variant) or (lambda s: s)  # samples whose results tell (as the OpInfo suite's)
    constant = constant_by_definition(op, str(dtype).removeprefix("torch."), variant=variant)
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, s in select_samples(generate(info, dtype, device=ctx.device), None, None):
            if checked >= MAX_SAMPLES:
                break
            if s.broadcasts_input or not isinstance(s.input, torch.Tensor) or s.input.layout != torch.strided:
                continue
            if s.input.numel() == 0:
                continue
            s = strengthen(s)
            cpu_s, dev_s = copy_sample(s, "cpu"), copy_sample(s, ctx.device)
            ctx.describe(sample_index=i, input_shape=list(s.input.shape))

            def apply(view: torch.Tensor, where: str, _c: Any = cpu_s, _d: Any = dev_s) -> Any:
                args = _c if where == "cpu" else _d
                if where == "cpu":  # random ops: the device and CPU streams differ anyway
                    torch.manual_seed(ctx.seed)
                return fn(view, *args.args, **args.kwargs)

            checked += bool(check_through_views(ctx, s.input.detach(), apply, values=values, salt=i, constant=constant))
    ctx.info["samples_checked"] = checked
    if not checked:
        ctx.not_applicable("no OpInfo sample could be applied in place to a view (CPU rejects them all)")


for _op, _variant, _aten, _dtype in _opinfo_targets():
    _key = _op + (f".{_variant}" if _variant else "")
    SUITE.case(f"opinfo/{_key}", level=LEVEL, dtypes=(_dtype,), ops=(f"aten::{_aten}_", _op),
               params={"views": {"op": _op, "variant": _variant}})(opinfo_inplace)


# Hand-written in-place calls on a (4, 6) view: name -> fn(view, device, dtype) -> result.
SHAPE = (4, 6)


def _idx(device: Any, *values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long).to(device)


def _src(device: Any, dtype: torch.dtype, shape: tuple[int, ...], salt: int = 7) -> torch.Tensor:
    return sample(shape, dtype, salt).to(device)


def _dev(where: str, ctx: CaseContext) -> Any:
    return "cpu" if where == "cpu" else ctx.device


HANDWRITTEN: dict[str, Callable[[torch.Tensor, Any, torch.dtype], Any]] = {
    "copy_": lambda v, d, dt: v.copy_(_src(d, dt, SHAPE)),
    "copy_/broadcast": lambda v, d, dt: v.copy_(_src(d, dt, (6,))),
    "fill_": lambda v, d, dt: v.fill_(1),
    "fill_/tensor": lambda v, d, dt: v.fill_(torch.tensor(1, dtype=dt).to(d)),
    "zero_": lambda v, d, dt: v.zero_(),
    "index_fill_": lambda v, d, dt: v.index_fill_(1, _idx(d, 0, 3, 5), 1),
    "index_copy_": lambda v, d, dt: v.index_copy_(0, _idx(d, 3, 1), _src(d, dt, (2, 6))),
    "index_add_": lambda v, d, dt: v.index_add_(1, _idx(d, 5, 0, 5), _src(d, dt, (4, 3))),
    "index_put_": lambda v, d, dt: v.index_put_((_idx(d, 0, 2), _idx(d, 1, 4)), _src(d, dt, (2,))),
    "index_put_/accumulate": lambda v, d, dt: v.index_put_((_idx(d, 1, 1),), _src(d, dt, (2, 6)), accumulate=True),
    "masked_fill_": lambda v, d, dt: v.masked_fill_(_src(d, torch.bool, SHAPE), 1),
    "masked_scatter_": lambda v, d, dt: v.masked_scatter_(_src(d, torch.bool, SHAPE), _src(d, dt, SHAPE)),
    "scatter_": lambda v, d, dt: v.scatter_(1, _idx(d, 5, 0, 2, 1, 3, 4).reshape(1, 6).expand(4, 6).contiguous(),
                                            _src(d, dt, SHAPE)),
    "scatter_/value": lambda v, d, dt: v.scatter_(0, _idx(d, 3, 0, 1, 2, 0, 3).reshape(1, 6), 1),
    "scatter_add_": lambda v, d, dt: v.scatter_add_(0, _idx(d, 0, 0, 3, 3, 1, 2).reshape(1, 6), _src(d, dt, (1, 6))),
    "scatter_reduce_": lambda v, d, dt: v.scatter_reduce_(1, _idx(d, 0, 0, 5, 2).reshape(1, 4).expand(4, 4)
                                                          .contiguous(), _src(d, dt, (4, 4)), "amax"),
    "put_": lambda v, d, dt: v.put_(_idx(d, 0, 7, 23), _src(d, dt, (3,))),
    "masked_fill_/tensor": lambda v, d, dt: v.masked_fill_(_src(d, torch.bool, (6,)), torch.tensor(1, dtype=dt).to(d)),
}
HAND_DTYPES = ("float32", "float16", "int64", "bool")


def handwritten(ctx: CaseContext, dtype: torch.dtype, call: str) -> None:
    fn = HANDWRITTEN[call]
    value = sample(SHAPE, dtype, ctx.seed)
    constant = call in ("fill_", "fill_/tensor", "zero_")  # one value everywhere by definition
    if not check_through_views(ctx, value, lambda v, where: fn(v, _dev(where, ctx), dtype), constant=constant):
        ctx.not_applicable(f"CPU rejects {call} on {dtype} for every view kind")


for _call in HANDWRITTEN:
    SUITE.case(f"ops/{_call}", level=LEVEL, dtypes=HAND_DTYPES, ops=(f"aten::{_call.split('/')[0]}",),
               params={"views": {"call": _call}})(handwritten)
