"""What a device without a kernel of its own answers: PyTorch's composite kernel, run on CPU.

A backend that registers no kernel for `native_layer_norm` still runs it: the dispatcher picks the
op's CompositeExplicitAutograd kernel for the device's key (after a direct kernel, before a
fallback). On a few inputs that composite answers otherwise than CPU's fused kernel
(`oracle/allowed.py: CompositeRule`, each with its reason and source); for such a device the
composite's answer is as much PyTorch's as CPU's. `composite_answer` recomputes a call on CPU with
exactly those ops sent to their composite kernels, only for ops the device's key really lacks (a
device with its own kernel, CPU and CUDA among them, gets no second answer).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchcts.oracle.allowed import composite_rules


@functools.lru_cache(maxsize=16)
def routed_to_composite(device_type: str) -> frozenset[str]:
    """The CompositeRule overloads the device's dispatch key runs through their composite kernel."""
    try:
        key = str(torch._C._dispatch_key_for_device(device_type))
    except Exception:  # noqa: BLE001 - a device this process does not know: no routing to judge
        return frozenset()
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return frozenset(o for o in composite_rules()
                     if not has(f"aten::{o.removesuffix('.default')}", key)
                     and has(f"aten::{o.removesuffix('.default')}", "CompositeExplicitAutograd"))


class _Composed(TorchDispatchMode):
    """CPU, except that the listed overloads run their CompositeExplicitAutograd kernel (and so do the
    listed overloads that kernel calls)."""

    def __init__(self, overloads: frozenset[str]) -> None:
        super().__init__()
        self.overloads = overloads
        self.used: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = f"{func._schema.name.removeprefix('aten::')}.{func._overloadname}"
        if name in self.overloads:
            self.used.add(name)
            # the composite's own calls dispatch again, as on the device: addr.out's composite calls
            # addr, which the device runs through its composite too (answering NaN where CPU's gives -inf)
            with self:
                return func._op_dk(torch._C.DispatchKey.CompositeExplicitAutograd, *args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))


def composite_answer(call: Callable[[], Any], device_type: str) -> tuple[Any, list[str]] | None:
    """`call()` (on CPU inputs) with the ops the device routes to their composite kernel run there,
    and the names of the rules that made a difference; None when no such op ran (CPU's answer is
    the only one)."""
    overloads = routed_to_composite(device_type)
    if not overloads:
        return None
    mode = _Composed(overloads)
    with mode:
        out = call()
    if not mode.used:
        return None
    rules = composite_rules()
    return out, sorted({rules[o] for o in mode.used})
