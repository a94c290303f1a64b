"""Level 7 multi-device: copies between device indices, ops on a non-default index, device guards.

Every case needs device_count() >= 2 and reports not_applicable otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import CaseContext, CaseSet, compat, exactness_of, expect, sample

SUITE = CaseSet("multi_device")
COPY = exactness_of("copy_")  # a copy between devices or dtypes is exact (oracle/exactness.py)
cases = SUITE.cases

MULTI = ("multi_device",)


def two_devices(ctx: CaseContext):  # (module, device 0, device 1)
    """The device module and indices 0 and 1, or not_applicable with the count found."""
    mod = compat.device_module(ctx.device_type)
    count = mod.device_count() if mod is not None and hasattr(mod, "device_count") else 1
    if count < 2:
        ctx.not_applicable(f"torch.{ctx.device_type}.device_count() is {count}: multi-device cases need at least 2")
    return mod, torch.device(ctx.device_type, 0), torch.device(ctx.device_type, 1)


def _on(t: torch.Tensor, dev: torch.device, what: str) -> None:
    expect(t.device == dev, f"{what} landed on the wrong device", got=str(t.device), expected=str(dev))


@SUITE.case("copy/between_indices", level=7, dtypes=("float32", "int64", "bool"), requires=MULTI,
            ops=("aten::_to_copy", "aten::copy_"))
def copy_between_indices(ctx: CaseContext, dtype: torch.dtype) -> None:
    """to(), copy_() and non-contiguous copies between index 0 and 1 keep values and land where asked."""
    _, d0, d1 = two_devices(ctx)
    src = sample((6, 10), dtype, seed=ctx.seed)
    a = src.to(d0)
    b = a.to(d1)
    _on(b, d1, "to(index 1)")
    ctx.assert_close(b.cpu(), src, exact=COPY)
    back = b.to(d0)
    _on(back, d0, "to(index 0)")
    ctx.assert_close(back.cpu(), src, exact=COPY)
    dst = torch.empty(10, 6, dtype=dtype, device=d1)
    dst.copy_(a.t())  # non-contiguous source on the other index
    _on(dst, d1, "copy_ destination")
    ctx.assert_close(dst.cpu(), src.t(), exact=COPY)


@SUITE.case("ops/non_default_device", level=7, dtypes=("float32",), requires=MULTI, ops=("aten::mm", "aten::add", "aten::sum"))
def ops_on_index_1(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Ops on index-1 tensors run there, give CPU values, and leave the current device alone."""
    mod, _, d1 = two_devices(ctx)
    before = mod.current_device()
    a, b = sample((8, 5), dtype, seed=ctx.seed), sample((5, 3), dtype, seed=ctx.seed + 1)
    out = (a.to(d1) @ b.to(d1) + 1).sum(0)
    _on(out, d1, "the result of ops on index 1")
    ctx.assert_close(out.cpu(), (a @ b + 1).sum(0), category="matmul")
    expect(mod.current_device() == before, "ops on index 1 changed the current device")


@SUITE.case("guard/device_guard", level=7, requires=MULTI, ops=("aten::empty.memory_format",), oracle="property:device_guard")
def device_guard(ctx: CaseContext) -> None:
    """Inside torch.<dev>.device(1) new tensors go to index 1; the previous device comes back after."""
    mod, d0, d1 = two_devices(ctx)
    expect(hasattr(mod, "device"), f"torch.{ctx.device_type} has no device context manager")
    before = mod.current_device()
    with mod.device(1):
        t = torch.zeros(4, device=ctx.device_type)
        _on(t, d1, "a tensor made inside torch.<dev>.device(1)")
        u = torch.ones(2, device=d0) * 2  # an explicit index wins over the guard
        _on(u, d0, "a tensor made with an explicit index 0 inside the guard")
    expect(mod.current_device() == before, "the device guard did not restore the current device")


# Ops whose kernels take two device operands, one per family a backend writes apart (a binary
# elementwise kernel, a matmul, a concatenation, a ternary select): each checks the devices itself.
CROSS_DEVICE: dict[str, Callable[[torch.Tensor, torch.Tensor], Any]] = {
    "add": torch.add,
    "mm": lambda a, b: torch.mm(a.reshape(3, 1), b.reshape(1, 3)),
    "cat": lambda a, b: torch.cat([a, b]),
    "where": lambda a, b: torch.where(a > 0, a, b),
}


@SUITE.case("errors/cross_device", level=7, requires=MULTI, ops=tuple(f"aten::{op}" for op in CROSS_DEVICE),
            oracle="property:errors")
def cross_device_error(ctx: CaseContext) -> None:
    """Combining tensors on different indices raises a RuntimeError instead of computing silently, in
    each op of CROSS_DEVICE (OpenReg raised for add and computed mm, cat and where)."""
    _, d0, d1 = two_devices(ctx)
    silent = []
    for name, fn in CROSS_DEVICE.items():
        try:
            fn(torch.ones(3, device=d0), torch.ones(3, device=d1))
        except RuntimeError:
            continue
        silent.append(name)
    expect(not silent, f"{', '.join(silent)} of tensors on index 0 and index 1 did not raise")
