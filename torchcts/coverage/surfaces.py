"""Dispatcher surfaces: every `aten::` overload of the running build, read from the dispatcher.

A surface is one overload (`aten::add.Tensor`, `aten::add.out`, `aten::add_.Tensor`, or `aten::abs`
for a default overload). Its kind is derived from its schema alone, so it is the same on every
machine running the same PyTorch build; which dispatch keys have kernels depends on the build and
on the backends imported into the process.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from torchcts.cases.ops import is_random, writes_out

# Surface kind -> what it means. The first matching rule of surface_kind() wins, in this order.
KINDS: dict[str, str] = {
    "backward": "a gradient kernel (name contains 'backward')",
    "rng": "draws random numbers (takes a Generator, or a rand*/dropout/bernoulli/normal family op)",
    "out": "writes its result into out= arguments",
    "in-place": "mutates self (name ends with '_', or an __i*__ operator)",
    "mutating": "mutates an argument other than self or out= (running stats, noise buffers)",
    "view": "returns a view or alias of an input (Tensor(a) return)",
    "factory": "creates tensors without tensor inputs, or a *_like / new_* constructor",
    "query": "returns no tensor (sizes, scalars, predicates)",
    "functional": "returns new tensors computed from tensor inputs",
}

# Dispatch keys whose kernel registrations the inventory lists (missing keys are skipped).
INVENTORY_KEYS = (
    "CPU", "CUDA", "HIP", "MPS", "XPU", "PrivateUse1", "Meta",
    "CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional",
    "SparseCPU", "SparseCUDA", "QuantizedCPU", "NestedTensorCPU", "NestedTensorCUDA",
)
COMPOSITE_IMPLICIT = "CompositeImplicitAutograd"
COMPOSITE_EXPLICIT = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")

# How a device reaches a surface's kernel, best first (see registration()).
KERNELS = {
    "native": "a kernel registered for the device's own dispatch key",
    "composite_explicit": "one CompositeExplicitAutograd kernel shared by all backends",
    "composite_implicit": "decomposes into other operators (CompositeImplicitAutograd)",
    "fallback": "the device key's boxed fallback (e.g. a CPU fallback)",
    "missing": "no kernel: calling it on the device raises NotImplementedError",
}


@dataclass(frozen=True)
class Surface:
    name: str  # full overload name: "aten::add.Tensor"
    op: str  # the operator packet: "aten::add"
    overload: str  # "Tensor", or "" for the default overload
    kind: str
    schema: str
    writes_out: bool = False  # an out= overload (not a backward's grad_input): naming its packet never covers it

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "op": self.op, "overload": self.overload, "kind": self.kind, "schema": self.schema}


def _has_type(t: Any, word: str) -> bool:
    return word in str(t)


def surface_kind(schema: Any) -> str:
    """The kind of one overload from its FunctionSchema (see KINDS for the rules and their order)."""
    base = schema.name.split("::", 1)[-1]
    plain = base.strip("_")
    args = list(schema.arguments)
    tensor_in = any(_has_type(a.type, "Tensor") for a in args)
    tensor_out = any(_has_type(r.type, "Tensor") for r in schema.returns)
    if "backward" in base:
        return "backward"
    if is_random(schema):
        return "rng"
    if any(getattr(a, "is_out", False) for a in args) or (schema.is_mutable and schema.overload_name.endswith("out")):
        return "out"
    if (base.endswith("_") and not base.endswith("__")) or base.startswith("__i"):
        return "in-place"
    if schema.is_mutable:
        return "mutating"
    if any(r.alias_info is not None or "Tensor(" in str(r) for r in schema.returns) and tensor_out:
        return "view"
    if tensor_out and (not tensor_in or plain.endswith("_like") or plain.startswith("new_")):
        return "factory"
    if not tensor_out:
        return "query"
    return "functional"


def _full_name(schema: Any) -> str:
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


@functools.lru_cache(maxsize=1)
def all_surfaces() -> tuple[Surface, ...]:
    """Every aten:: overload the dispatcher knows, sorted by name (cached per process)."""
    import torch

    names = {n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    schemas: dict[str, Any] = {}
    for op in sorted({n.split(".", 1)[0] for n in names}):
        for s in torch._C._jit_get_schemas_for_operator(op):
            schemas.setdefault(_full_name(s), s)
    out = []
    for name in sorted(names):
        s = schemas.get(name)
        op, _, overload = name.partition(".")
        if s is None:  # registered without a schema visible to the JIT: keep it, kind unknown
            out.append(Surface(name, op, overload, "functional", ""))
            continue
        out.append(Surface(name, op, overload, surface_kind(s), str(s), writes_out(s)))
    return tuple(out)


def dispatch_key_for_device(device: str) -> str:
    """The backend dispatch key of a device type (cpu -> CPU, a PrivateUse1 name -> PrivateUse1)."""
    import torch

    from torchcts.backends.devices import reject_rocm_name
    from torchcts.errors import UsageError

    reject_rocm_name(device)
    try:
        return str(torch._C._dispatch_key_for_device(device))
    except Exception:  # noqa: BLE001 - torch raises RuntimeError for unknown device strings
        from torchcts.compat import privateuse1_name

        raise UsageError(
            f"unknown device '{device}': use cpu, cuda, mps, xpu or the PrivateUse1 name "
            f"('{privateuse1_name()}' in this process)"
        ) from None


@functools.lru_cache(maxsize=4)
def kernel_table(keys: tuple[str, ...] = INVENTORY_KEYS) -> dict[str, frozenset[str]]:
    """Dispatch key -> the operator names with a kernel registered for it (one dispatcher call per key)."""
    import torch

    table: dict[str, frozenset[str]] = {}
    for key in keys:
        try:
            table[key] = frozenset(torch._C._dispatch_get_registrations_for_dispatch_key(key))
        except Exception:  # noqa: BLE001 - a key this build does not know
            continue
    return table


def has_backend_fallback(key: str) -> bool:
    """Whether the key has a boxed backend fallback (one query for coverage and the records)."""
    from torchcts.cases.fallback import has_fallback

    return has_fallback(key)


def kernel_keys(name: str, table: dict[str, frozenset[str]]) -> list[str]:
    return [k for k, names in table.items() if name in names]


def registration(name: str, device_key: str, table: dict[str, frozenset[str]] | None = None) -> dict[str, Any]:
    """How the device's key reaches this surface: native, composite, fallback or missing (KERNELS)."""
    table = table if table is not None else kernel_table()
    if device_key not in table:
        table = {**table, **kernel_table((device_key,))}
    keys = kernel_keys(name, table)
    delegate = None
    if device_key in keys:
        kernel = "native"
    elif any(k in keys for k in COMPOSITE_EXPLICIT):
        kernel = "composite_explicit"
        delegate = _dead_delegate(name, device_key, table)
        if delegate is not None:
            kernel = "missing"
    elif COMPOSITE_IMPLICIT in keys:
        kernel = "composite_implicit"
    elif has_backend_fallback(device_key):
        kernel = "fallback"
    else:
        kernel = "missing"
    out = {"dispatch_key": device_key, "kernel": kernel, "keys": keys}
    if delegate is not None:
        out["calls_missing"] = delegate
    return out


def _delegate_of(name: str) -> str | None:
    """The overload a generated CompositeExplicitAutograd wrapper calls: an out= overload's
    functional sibling (`X.out` -> `X`, `X.Y_out` -> `X.Y`), a functional op's in-place form (`X` ->
    `X_`, for in-place-only kernels); None when the name says nothing."""
    op, _, overload = name.partition(".")
    if overload == "out":
        return op
    if overload.endswith("_out"):
        return f"{op}.{overload.removesuffix('_out')}"
    if not op.endswith("_"):
        return f"{op}_.{overload}" if overload else f"{op}_"
    return None


def _dead_delegate(name: str, device_key: str, table: dict[str, frozenset[str]], depth: int = 0) -> str | None:
    """Why a composite_explicit surface cannot run on the device, or None: an `*_overrideable`
    op (its composite kernel only raises until a backend registers one), or the overload its
    generated wrapper calls has no kernel (neither the device's, composite, nor a fallback), or is
    itself such a wrapper of one that has none (`_philox_normal.out` -> `_philox_normal` ->
    `_philox_normal_`: the chain is named)."""
    if "_overrideable" in name:
        return "itself (its composite kernel raises until a backend registers one)"
    target = _delegate_of(name)
    if target is None or not any(target in names for names in table.values()) and not _known(target):
        return None
    keys = kernel_keys(target, table)
    if device_key in keys or COMPOSITE_IMPLICIT in keys:
        return None
    if any(k in keys for k in COMPOSITE_EXPLICIT):
        inner = _dead_delegate(target, device_key, table, depth + 1) if depth < 2 else None
        return f"{target} -> {inner}" if inner is not None and "_overrideable" not in target else None
    return None if has_backend_fallback(device_key) else target


def _known(name: str) -> bool:
    import torch

    return name in _all_op_names(torch.__version__)


@functools.lru_cache(maxsize=1)
def _all_op_names(_version: str) -> frozenset[str]:
    import torch

    return frozenset(torch._C._dispatch_get_all_op_names())


def by_op(surfaces: Iterable[Surface]) -> dict[str, list[Surface]]:
    """Operator packet ("aten::add") -> its overloads."""
    out: dict[str, list[Surface]] = {}
    for s in surfaces:
        out.setdefault(s.op, []).append(s)
    return out
