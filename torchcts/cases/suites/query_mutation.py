"""Level 3 query and metadata-mutating ops: `is_*`, `_has_*`, `set_`, `resize_`, `item()`, copies and
in-place view mutations, called through `torch.ops.aten` so the overload itself dispatches.

These ops return Python values or change a tensor's metadata (sizes, strides, storage offset,
storage) rather than compute: OpInfo compares values of results and never reaches them. A
backend that gets `set_`'s storage offset, `resize_`'s preserved prefix, `is_set_to`'s storage
identity or `t_`'s strides wrong corrupts every later op on that tensor. Each case builds the same
tensors on the device and on CPU, applies the op, and compares with CPU a record of what the op
says or did: the returned values, sizes, strides, storage offset, whether storage is shared, and
the values read back (and written through). Where CPU raises, the device must raise the same
exception type. Overloads this PyTorch lacks are recorded `missing`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import (
    ALL_DTYPES,
    CaseContext,
    CaseSet,
    is_missing_kernel,
    mirror,
    qualified,
    resolve,
    same_storage,
    sample,
)

SUITE = CaseSet("query_mutation")
cases = SUITE.cases
LEVEL = 3
DTYPES = ("float32", "int64", "bool", "complex64", "float16")
aten = torch.ops.aten


def meta(t: torch.Tensor) -> dict[str, Any]:
    """What a metadata op must get right, and the values read back."""
    return {"shape": tuple(t.shape), "stride": tuple(t.stride()), "offset": t.storage_offset(), "dtype": str(t.dtype),
            "values": t.cpu().clone()}


def _t(dtype: torch.dtype, device: torch.device, shape: tuple[int, ...] = (3, 4), seed: int = 0) -> torch.Tensor:
    return sample(shape, dtype, seed).to(device)


@SUITE.case("predicates", level=LEVEL, dtypes=ALL_DTYPES,
            ops=("aten::is_complex", "aten::is_floating_point", "aten::is_signed", "aten::is_nonzero",
                 "aten::is_same_size", "aten::is_contiguous", "aten::is_contiguous.memory_format", "aten::is_conj",
                 "aten::is_neg", "aten::is_inference", "aten::is_leaf", "aten::_is_zerotensor", "aten::is_pinned",
                 "aten::_is_all_true", "aten::_is_any_true"))
def predicates(ctx: CaseContext, dtype: torch.dtype) -> None:
    # a channels_last layout is asked only where it is claimed (a device that keeps its tensors
    # contiguous, as pytorch_ocl does, answers is_contiguous True: no claim's failure)
    channels_last = ctx.claims("channels_last")

    def ask(dev: torch.device) -> dict[str, Any]:
        t, one = _t(dtype, dev), _t(dtype, dev, (1,))
        out = {"is_complex": aten.is_complex(t), "is_floating_point": aten.is_floating_point(t),
               "is_signed": aten.is_signed(t), "is_nonzero": aten.is_nonzero(one),
               "is_nonzero_zero": aten.is_nonzero(torch.zeros((), dtype=dtype, device=dev)),
               "is_same_size": (aten.is_same_size(t, t.t().t()), aten.is_same_size(t, t.t())),
               "is_contiguous": (aten.is_contiguous(t), aten.is_contiguous(t.t())),
               "is_conj": aten.is_conj(t), "is_neg": aten.is_neg(t), "is_inference": aten.is_inference(t),
               "is_leaf": aten.is_leaf(t), "is_zerotensor": aten._is_zerotensor(t), "is_pinned": aten.is_pinned(t)}
        if channels_last:
            nchw = _t(dtype, dev, (2, 3, 4, 5)).contiguous(memory_format=torch.channels_last)
            out.update(channels_last=(aten.is_contiguous(nchw), aten.is_contiguous.memory_format(nchw, torch.channels_last)))
        if dtype == torch.bool:  # the all/any of a bool tensor (the checks of torch._assert_async)
            out.update(all_true=aten._is_all_true(t).cpu(), any_true=aten._is_any_true(t).cpu())
        return out

    mirror(ctx, {"predicates": ask,
                 "is_nonzero_many": lambda dev: aten.is_nonzero(_t(dtype, dev, (2,))),
                 "is_nonzero_empty": lambda dev: aten.is_nonzero(_t(dtype, dev, (0,)))})


@SUITE.case("storage_queries", level=LEVEL, dtypes=("float32",),
            ops=("aten::is_set_to", "aten::_has_compatible_shallow_copy_type", "aten::_has_same_storage_numel"))
def storage_queries(ctx: CaseContext, dtype: torch.dtype) -> None:
    def ask(dev: torch.device) -> dict[str, Any]:
        t = _t(dtype, dev, (4, 5))
        others = {"self": t, "detached": t.detach(), "view": t.view(5, 4), "slice": t[1:], "clone": t.clone()}
        return {name: (aten.is_set_to(t, o), aten._has_same_storage_numel(t, o),
                       aten._has_compatible_shallow_copy_type(t, o)) for name, o in others.items()}

    mirror(ctx, {"storage_queries": ask})


def _set_checks(dtype: torch.dtype) -> dict[str, Callable[[torch.device], Any]]:
    """Each set_ overload: x becomes a view of src's storage; the record, then a write through x."""
    def after(x: torch.Tensor, ret: torch.Tensor, src: torch.Tensor) -> dict[str, Any]:
        rec = {**meta(x), "returns_self": ret is x, "shares": same_storage(x, src)}
        if x.numel():
            x.fill_(sample((), dtype, 9).item())
        return {**rec, "src_after_write": src.cpu().clone()}

    def run(how: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Callable[[torch.device], Any]:
        def check(dev: torch.device) -> Any:
            src, x = _t(dtype, dev, (4, 5), 1), torch.empty(0, dtype=dtype, device=dev)
            return after(x, how(x, src), src)
        return check

    out = {
        "storage": run(lambda x, s: x.set_(s.untyped_storage())),
        "storage_offset": run(lambda x, s: x.set_(s.untyped_storage(), 3, (2, 3), (1, 2))),
        "tensor": run(lambda x, s: x.set_(s[1:, 1::2])),
        "empty": run(lambda x, s: aten.set_(x.set_(s))),
    }
    if resolve("set_", "source_Tensor_storage_offset") is not None:
        out["tensor_offset"] = run(lambda x, s: aten.set_.source_Tensor_storage_offset(x, s, 2, (3, 2), (5, 1)))
    return out


@SUITE.case("set_", level=LEVEL, dtypes=DTYPES,
            ops=("aten::set_", "aten::set_.source_Storage", "aten::set_.source_Storage_storage_offset",
                 "aten::set_.source_Tensor", "aten::set_.source_Tensor_storage_offset"))
def set_overloads(ctx: CaseContext, dtype: torch.dtype) -> None:
    mirror(ctx, _set_checks(dtype))


@SUITE.case("resize_", level=LEVEL, dtypes=DTYPES, ops=("aten::resize_", "aten::resize_as_"))
def resize(ctx: CaseContext, dtype: torch.dtype) -> None:
    """resize_ keeps the first min(old, new) elements in order; new elements are not compared."""
    def grow(dev: torch.device) -> Any:
        x = _t(dtype, dev, (3, 4))
        ret = x.resize_(5, 5)
        return {"returns_self": ret is x, "shape": tuple(x.shape), "stride": x.stride(), "kept": x.view(-1)[:12].cpu()}

    def shrink(dev: torch.device) -> Any:
        x = _t(dtype, dev, (3, 4))
        return {**meta(aten.resize_(x, [2, 3])), "to_zero": tuple(aten.resize_(x, [0]).shape)}

    def channels_last(dev: torch.device) -> Any:
        x = _t(dtype, dev, (2, 3, 4, 5))
        return tuple(aten.resize_(x, [2, 3, 4, 5], memory_format=torch.channels_last).stride())

    def as_other(dev: torch.device) -> Any:
        x, other = _t(dtype, dev, (2, 6)), _t(dtype, dev, (3, 2))
        return {"shape": tuple(aten.resize_as_(x, other).shape), "kept": x.reshape(-1)[:6].cpu()}

    mirror(ctx, {"grow": grow, "shrink": shrink, "channels_last": channels_last, "as_other": as_other,
                 "negative": lambda dev: aten.resize_(_t(dtype, dev), [-1, 2])})


@SUITE.case("item", level=LEVEL, dtypes=ALL_DTYPES, ops=("aten::_local_scalar_dense",))
def item(ctx: CaseContext, dtype: torch.dtype) -> None:
    """item() of a one-element tensor, of a view with a storage offset, and of special values; item() of
    a many-element tensor raises on both (aten::_local_scalar_dense itself is undefined there: CPU's
    kernel returns the first element, pytorch_ocl's refuses, and only item() checks first)."""
    def read(dev: torch.device) -> Any:
        t = _t(dtype, dev, (3, 4), 2)
        out = [aten._local_scalar_dense(t[1:2, 2:3]), t[2, 3].item(), aten._local_scalar_dense(t.t()[3, 1])]
        if dtype.is_floating_point:
            special = torch.tensor([float("inf"), float("-inf"), float("nan")], dtype=dtype, device=dev)
            out += [repr(aten._local_scalar_dense(special[i])) for i in range(3)]
        return out

    mirror(ctx, {"item": read, "many": lambda dev: _t(dtype, dev).item()})


@SUITE.case("copies", level=LEVEL, dtypes=DTYPES,
            ops=("aten::_to_copy", "aten::_copy_from", "aten::_copy_from_and_resize", "aten::_reshape_alias"))
def copies(ctx: CaseContext, dtype: torch.dtype) -> None:
    """_to_copy (dtype, layout), _copy_from/_copy_from_and_resize (the backend copy entry points: CPU
    has none, so the reference is CPU's copy_) and _reshape_alias (a view: storage shared)."""
    def to_copy(dev: torch.device) -> Any:
        x = _t(dtype, dev, (2, 3, 4, 5)).permute(0, 2, 3, 1)
        return [meta(aten._to_copy(x)), meta(aten._to_copy(x, dtype=torch.float64)),
                meta(aten._to_copy(x, memory_format=torch.contiguous_format)), aten._to_copy(x) is x]

    def reshape_alias(dev: torch.device) -> Any:
        x = _t(dtype, dev, (4, 6))
        v = aten._reshape_alias(x, [6, 4], [4, 1])
        return {**meta(v), "shares": same_storage(v, x)}

    checks: dict[str, Callable[[torch.device], Any]] = {"to_copy": to_copy, "reshape_alias": reshape_alias}
    mirror(ctx, checks)
    src = _t(dtype, torch.device("cpu"), (3, 4), 3).t()
    for name, call in (("copy_from", lambda s, d: aten._copy_from(s, d)),
                       ("copy_from_and_resize", lambda s, d: aten._copy_from_and_resize(s, d))):
        dst = torch.empty((4, 3) if name == "copy_from" else (0,), dtype=dtype, device=ctx.device)
        try:
            call(src.to(ctx.device), dst)
        except Exception as exc:  # noqa: BLE001 - a backend may route copies through copy_ alone
            if not is_missing_kernel(exc):
                raise
            ctx.info["checks"][name] = "no_device_kernel"
            continue
        ctx.assert_close(dst.cpu(), src.contiguous())
        ctx.info["checks"][name] = "checked"


# name -> (op overload, its arguments after self, the view of the base it runs on)
VIEW_MUTATIONS: dict[str, tuple[str, str, tuple[Any, ...]]] = {
    "as_strided_": ("as_strided_", "default", ((3, 2), (1, 3), 2)),
    "detach_": ("detach_", "default", ()),
    "squeeze_": ("squeeze_", "default", ()),
    "squeeze_.dim": ("squeeze_", "dim", (1,)),
    "squeeze_.dims": ("squeeze_", "dims", ([0, 2],)),
    "unsqueeze_": ("unsqueeze_", "default", (0,)),
    "t_": ("t_", "default", ()),
    "transpose_": ("transpose_", "default", (0, 1)),
    "swapdims_": ("swapdims_", "default", (0, 1)),
    "swapaxes_": ("swapaxes_", "default", (1, 0)),
}


def view_mutation(ctx: CaseContext, dtype: torch.dtype, mutation: str) -> None:
    """The in-place view op on a view of a base: self returned, its new metadata, storage still the
    base's, a write through it reaches the base where CPU's does."""
    name, overload, extra = VIEW_MUTATIONS[mutation]
    fn = resolve(name, overload)
    if fn is None:
        ctx.not_applicable(f"this PyTorch has no aten::{name}.{overload}")

    def check(dev: torch.device) -> Any:
        base = _t(dtype, dev, (4, 7), 4)
        view = base[1:, 2:5] if name != "squeeze_" else base[1:2, 2:5].unsqueeze(-1)
        if name == "detach_":  # a view cannot be detached in place: a tensor whose grad is tracked
            with ctx.helper_op("aten::mul.Tensor"):  # a device op besides the one under test
                view = (base.requires_grad_() if dtype.is_floating_point else base) * 2
        ret = fn(view, *extra)
        rec = {**meta(view), "returns_self": ret is view, "shares": same_storage(view, base),
               "requires_grad": view.requires_grad}
        with ctx.helper_op("aten::fill_.Scalar"):  # the write that shows the aliasing
            view.fill_(sample((), dtype, 5).item())
        return {**rec, "base_after_write": base.detach().cpu().clone()}

    mirror(ctx, {mutation: check})


for _op, (_name, _overload, _) in VIEW_MUTATIONS.items():
    SUITE.case(f"view_mutation/{_op}", level=LEVEL, dtypes=("float32", "int64"),
               ops=(qualified(_name, _overload),),
               params={"views": {"mutation": _op}})(view_mutation)


@SUITE.case("mutating", level=LEVEL, dtypes=("float32", "float64"),
            ops=("aten::retain_grad", "aten::_cummax_helper", "aten::_cummin_helper",
                 "aten::_native_batch_norm_legit", "aten::_batch_norm_with_update"))
def mutating(ctx: CaseContext, dtype: torch.dtype) -> None:
    """The ops the schema marks as writing arguments that are not self or out: retain_grad,
    cummax/cummin's helpers (values and indices written), batch norm's running statistics (written
    in training). Not `set_data` (`.data =`): on the sim, a Python backend, aten::set_data changes
    the CPU tensor behind a wrapper but not the wrapper (docs/coverage.md)."""
    def retain_grad(dev: torch.device) -> Any:
        x = _t(dtype, dev, (3, 4)).requires_grad_()
        y = x * 2
        aten.retain_grad(y)
        (y * y).sum().backward()
        return y.grad.cpu()

    def helper(name: str) -> Callable[[torch.device], Any]:
        def check(dev: torch.device) -> Any:
            x = _t(dtype, dev, (4, 5), 2)
            values, indices = torch.empty_like(x), torch.empty(x.shape, dtype=torch.int64, device=dev)
            getattr(aten, name)(x, values, indices, 1)
            return values.cpu(), indices.cpu()
        return check

    def batch_norm(name: str) -> Callable[[torch.device], Any]:
        def check(dev: torch.device) -> Any:
            x, w, b = _t(dtype, dev, (4, 3, 5), 3), _t(dtype, dev, (3,), 4), _t(dtype, dev, (3,), 5)
            mean, var = torch.zeros(3, dtype=dtype, device=dev), torch.ones(3, dtype=dtype, device=dev)
            args = (True, 0.1, 1e-5) if name == "_native_batch_norm_legit" else (0.1, 1e-5)
            out = getattr(aten, name)(x, w, b, mean, var, *args)
            return [o.cpu() for o in out[:3]], mean.cpu(), var.cpu()  # _batch_norm_with_update's 4th: a reserve
        return check

    checks: dict[str, Callable[[torch.device], Any]] = {"retain_grad": retain_grad}
    checks.update({n: helper(n) for n in ("_cummax_helper", "_cummin_helper")})
    checks.update({n: batch_norm(n) for n in ("_native_batch_norm_legit", "_batch_norm_with_update")
                   if resolve(n, "default") is not None})
    mirror(ctx, checks, "normalization")
