"""Which of a case's dispatched overloads ran on the backend's CPU fallback (issue 48 item 4).

A backend in bring-up registers a boxed fallback for its dispatch key (pytorch_ocl's runs ~190 ops
through `at::native::cpu_fallback`: copy to the CPU, run the CPU kernel, copy back). A case that
passes that way proves the CPU kernel, not the backend's: the engineer needs to know which passes
rest on the fallback and which fallback ops carry the most cases (what to implement next).

The dispatch observer (cases/observe.py) sees the overloads that reached the device; the
dispatcher's tables say what serves each one on the device's key, read without running anything:
- a kernel registered for the key: the backend's own;
- a CompositeExplicitAutogradNonFunctional kernel (a structured op's functional and in-place
  forms): it calls the op's out= overload through the dispatcher, so that overload decides
  (`aten::sin` runs `aten::sin.out`, which is what the fallback runs and names in its warning);
- a CompositeExplicitAutograd kernel: composite, counted as the backend's (the ops it calls
  internally are not seen, cases/observe.py);
- else, when the key has a backend fallback: the fallback.
A Python backend's wrapper subclass (the sim) answers in `__torch_dispatch__`, above the tables:
there the tables say nothing (observe.py passes no names), so no record claims a fallback it
cannot know.
"""

from __future__ import annotations

import functools

import torch

# Device type -> its dispatch key, for the in-tree accelerators; any other type is PrivateUse1's.
DISPATCH_KEYS = {"cpu": None, "cuda": "CUDA", "xpu": "XPU", "mps": "MPS", "meta": None}
NON_FUNCTIONAL = "CompositeExplicitAutogradNonFunctional"
COMPOSITE = ("CompositeExplicitAutograd", "CompositeImplicitAutograd")


def dispatch_key(device_type: str) -> str | None:
    """The dispatch key whose kernels serve `device_type`, None for the CPU (it is the reference)."""
    return DISPATCH_KEYS.get(device_type, "PrivateUse1")


def has_fallback(key: str) -> bool:
    """Whether a boxed fallback is registered for the whole key (torch.library's `fallback`)."""
    try:
        return bool(torch._C._dispatch_has_backend_fallback(getattr(torch._C.DispatchKey, key)))
    except Exception:  # noqa: BLE001 - a key or query this build lacks: nothing is claimed
        return False


def fallback_ops(names: list[str], device_type: str) -> list[str]:
    """The overloads among `names` (dispatched to the device) that ran on its backend fallback:
    the out= overload for a structured op's functional form; [] where there is no fallback."""
    key = dispatch_key(device_type)
    if key is None or not has_fallback(key):
        return []
    return sorted({op for op in (served_by_fallback(name, key) for name in names) if op})


@functools.lru_cache(maxsize=4096)
def served_by_fallback(name: str, key: str) -> str | None:
    """The overload the fallback runs when `name` is dispatched on `key`, or None (a kernel serves it)."""
    if _has(name, key):
        return None
    if _has(name, NON_FUNCTIONAL):
        out = out_overload(name)  # itself for an out= overload (aten::logsumexp.out): never followed again
        return None if out is None or out == name else served_by_fallback(out, key)
    if any(_has(name, k) for k in COMPOSITE):
        return None
    return name


def _has(name: str, key: str) -> bool:
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(name, key))
    except RuntimeError:  # not an operator this build knows
        return False


def out_overload(name: str) -> str | None:
    """`aten::sin.out` for `aten::sin`, `aten::add.out` for `aten::add.Tensor` and `aten::add_.Tensor`:
    the out= overload of the same op whose other arguments have the same names."""
    namespace, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    ns = getattr(torch.ops, namespace, None)
    packet, own = getattr(ns, base.removesuffix("_"), None), getattr(ns, base, None)
    try:
        schema = getattr(own, overload or "default")._schema
        candidates = [getattr(packet, o)._schema for o in packet.overloads()]
    except (AttributeError, TypeError):
        return None
    wanted = _inputs(schema)
    for other in candidates:
        if any(_is_out(a) for a in other.arguments) and _inputs(other) == wanted:
            return f"{other.name}.{other.overload_name}" if other.overload_name else other.name
    return None


def _inputs(schema: torch._C.FunctionSchema) -> list[tuple[str, str]]:
    """(name, type) of every argument but out= ones: `mul.Scalar` pairs with `mul.Scalar_out`, not `mul.out`."""
    return [(a.name, str(a.type)) for a in schema.arguments if not _is_out(a)]


def _is_out(arg: torch._C.Argument) -> bool:
    """An out= argument: written to and keyword-only (an in-place op's `self` is written, positional)."""
    return arg.alias_info is not None and arg.alias_info.is_write and arg.kwarg_only
