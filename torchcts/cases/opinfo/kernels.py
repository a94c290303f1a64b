"""Whether two forms of an op reach one kernel on a device: the agree kind's bit-for-bit rule (issue 50
item 3), read from the dispatcher's tables and PyTorch's yaml, running nothing.

Two forms of one call (`torch.add(a, b)`, `a.add_(b)`, `torch.add(a, b, out=o)`) that reach the same
kernel with the same inputs and the same output layout compute the same bits; two kernels may round
differently and still both be right. So the agree kind demands bit-for-bit agreement only where the
tables show one kernel (`kernel_of` gives both forms the same identity), and otherwise agreement within
the op's tolerance. What serves an aten overload on a dispatch key, in the dispatcher's order:

- a kernel the key registers for it: the backend's own. On PyTorch's in-tree keys (CPU, CUDA, MPS) a
  function with `structured_delegate: X.out` in native_functions.yaml is built by the codegen from
  the structured kernel of `X.out` (add.Tensor and add_.Tensor from add.out): one kernel. Any other
  backend's kernels for X and X.out may be two functions, so they count as two (conservative: a
  false "failed" on a correct backend is worse than a tolerance comparison);
- else a CompositeExplicitAutogradNonFunctional kernel (a structured op's functional and in-place
  forms on a backend that registers only the out= kernel): it calls `X.out` through the dispatcher,
  so that overload's kernel decides (cases/fallback.py: out_overload);
- else a composite kernel (that overload's own), else the key's fallback (CPU's kernel of it).

A Python backend whose tensors answer `__torch_dispatch__` (the sim) runs above these tables; the sim
runs CPU's kernel of each overload, whose structured siblings are one kernel, so the answer holds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from torchcts.cases.explore.host_rule import entries
from torchcts.cases.fallback import COMPOSITE, NON_FUNCTIONAL, dispatch_key, has_fallback, out_overload

# Keys whose kernels PyTorch's own codegen builds from native_functions.yaml (structured delegates honoured).
IN_TREE = frozenset({"CPU", "CUDA", "MPS"})


def device_key(device_type: str) -> str:
    """The dispatch key serving `device_type` (CPU's own for cpu, the validation run's device)."""
    return dispatch_key(device_type) or {"cpu": "CPU", "meta": "Meta"}.get(device_type, "CPU")


def _has(name: str, key: str) -> bool:
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(name, key))
    except RuntimeError:  # not an operator this build knows
        return False


@functools.lru_cache(maxsize=4096)
def kernel_of(name: str, key: str) -> str:
    """An identity of the kernel computing the overload `name` (`aten::add.Tensor`) on dispatch key
    `key`: two overloads get the same identity only where the tables show one kernel (module doc)."""
    short = name.removeprefix("aten::")
    if _has(name, key):
        entry = entries().get(short)
        if key in IN_TREE and entry is not None:
            delegate = entries().get(entry.delegate) if entry.delegate else None
            if delegate is not None and delegate.structured:
                return f"aten::{entry.delegate} (structured, {key})"
            if entry.structured:
                return f"{name} (structured, {key})"
        return f"{name} ({key} kernel)"
    if _has(name, NON_FUNCTIONAL):
        out = out_overload(name)
        if out is not None and out != name:
            return kernel_of(out, key)
    if any(_has(name, k) for k in COMPOSITE):
        return f"{name} (composite)"
    return f"{name} ({key} fallback)" if has_fallback(key) else f"{name} (no {key} kernel)"


@dataclass(frozen=True)
class Rule:
    """How two forms of a call must agree: bit for bit, or within the op's tolerance; `why`, for the record."""

    bitwise: bool
    why: str


def rule(first: Sequence[str], second: Sequence[str], key: str, *, same_layout: bool = True,
         repeats: bool | Callable[[], bool] = True, nondeterministic: str | None = None) -> Rule:
    """The rule for two forms whose calls dispatched the overloads `first` and `second` (in order) on
    `key`. Bit for bit only when every overload reaches the same kernel in the same order, the forms
    write the same output layout (`same_layout`: a kernel may take another loop for another one), the
    first form gave the same bits when called twice (`repeats`: a callable is asked last, only where
    everything else says bit for bit, since it costs a second device call) and PyTorch names no kernel
    of the op nondeterministic (`nondeterministic`: the op fact's reason)."""
    if nondeterministic:
        return Rule(False, f"within the tolerance, doubled: {nondeterministic}")
    if not first or not second:
        return Rule(False, "within the tolerance, doubled: a form reached no operator on the device")
    kernels = [kernel_of(n, key) for n in first], [kernel_of(n, key) for n in second]
    if kernels[0] != kernels[1]:
        return Rule(False, f"within the tolerance, doubled: different kernels ({', '.join(kernels[0])} and "
                           f"{', '.join(kernels[1])})")
    if not same_layout:
        return Rule(False, "within the tolerance, doubled: one kernel, but the forms write different output layouts")
    if not (repeats() if callable(repeats) else repeats):
        return Rule(False, "within the tolerance, doubled: the functional form called twice gave different bits on this device")
    return Rule(True, f"bit for bit: one kernel serves both ({', '.join(dict.fromkeys(kernels[0]))})")
