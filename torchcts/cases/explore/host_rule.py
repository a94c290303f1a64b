"""PyTorch's own rule for a host (CPU) operand beside device tensors, emulated on CPU (issue 48 item 3).

Placement (placement.py) moves one 0-dim operand of an explored sample to the host. PyTorch lets a
device kernel take such a CPU scalar only through TensorIterator (its `allow_cpu_scalars`); every
other aten function of an in-tree device checks that its tensors share one device (the device check
the codegen adds to a function not marked `device_check: NoCheck` in native_functions.yaml), and a
composite passes the operand on to ops of either kind (binary_cross_entropy_with_logits' target goes
to an in-place `mul_` of a host tensor, which TensorIterator refuses: it never writes a CPU scalar).
So whether a device must accept a placed sample is decided by the aten calls the sample makes, not
by the op's name: `refusal` runs the op on CPU copies under a dispatch mode that follows which
tensors would live on the host (the placed operand, wrapped Python numbers, whatever is computed
from host tensors alone) and asks each call that mixes host and device tensors PyTorch's rule:

- a function that copies across devices (copy_, _to_copy) takes any;
- a function without `device_check: NoCheck` refuses any (index_add, index_reduce);
- one with it whose only kernel is a composite is followed into that composite;
- else (a TensorIterator op) at most one 0-dim host tensor, read only (never written).

A sample PyTorch's rule refuses is dropped, as an input CPU rejects: a device raising there gives
no verdict. The rule is read from the yaml torchgen ships with this PyTorch (torchgen/packaged/);
without it every mixed call counts as refused, so exploration only loses placements.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from torchcts.cases.observe import unobserved
from torchcts.cases.opinfo.samples import HostArg, rebuilt

# Functions whose point is to move data between devices: any tensor may be on either side.
CROSS_DEVICE = frozenset({"copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to", "lift_fresh",
                          "lift_fresh_copy", "_local_scalar_dense", "detach"})
_COMPOSITE_KEYS = frozenset({"CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional",
                             "CompositeImplicitAutograd"})


@dataclass(frozen=True)
class Entry:
    """What native_functions.yaml says of one overload, as far as devices go."""

    no_check: bool  # `device_check: NoCheck`: the codegen adds no same-device check
    composite_only: bool  # no kernel of its own besides a composite: its callees decide


def _yaml() -> Path | None:
    spec = importlib.util.find_spec("torchgen")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    return path if path.is_file() else None


_FUNC = re.compile(r"^- func: ([\w.]+)\(")
_KEYS = re.compile(r"^    ([\w, ]+):")


@functools.lru_cache(maxsize=1)
def entries() -> dict[str, Entry]:
    """`name` or `name.overload` -> Entry, for every function of this PyTorch's yaml ({} without it)."""
    path = _yaml()
    if path is None:
        return {}
    found: dict[str, Entry] = {}
    name, lines = None, []
    for line in [*path.read_text().splitlines(), "- func: END("]:
        m = _FUNC.match(line)
        if m is None:
            lines.append(line)
            continue
        if name is not None:
            found[name] = _entry(lines)
        name, lines = m.group(1), []
    return found


def _entry(lines: list[str]) -> Entry:
    text = "\n".join(lines)
    keys: set[str] = set()
    in_dispatch = False
    for line in lines:
        if line.startswith("  dispatch:"):
            in_dispatch = True
            continue
        if in_dispatch:
            m = _KEYS.match(line)
            if m is None:
                in_dispatch = line.startswith("    ") or not line.strip()
                continue
            keys.update(k.strip() for k in m.group(1).split(","))
    own = "structured_delegate:" in text or "structured: True" in text or bool(keys - _COMPOSITE_KEYS)
    return Entry(re.search(r"device_check:\s*NoCheck", text) is not None, not own)


def _key(func: Any) -> tuple[str, str]:
    base = func._schema.name.removeprefix("aten::")
    return base, base if func._overloadname == "default" else f"{base}.{func._overloadname}"


_FOLLOW = object()  # the call's composite decides: follow it


def _judge(func: Any, args: tuple, kwargs: dict, host: list[torch.Tensor]) -> Any:
    """None: PyTorch's rule accepts the call's host tensors; _FOLLOW: its composite decides; else why not."""
    base, name = _key(func)
    if base in CROSS_DEVICE:
        return None
    entry = entries().get(name)
    if entry is None:
        return f"aten::{name} is no function of PyTorch's native_functions.yaml: its device rule is unknown"
    if not entry.no_check:
        return f"aten::{name} checks that its tensors share one device"
    if entry.composite_only:
        return _FOLLOW
    written = set()
    for arg, value in zip(func._schema.arguments, (*args, *[kwargs.get(a.name) for a in
                                                              func._schema.arguments[len(args):]]), strict=False):
        if arg.alias_info is not None and arg.alias_info.is_write:
            written.update(id(t) for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor))
    if any(t.dim() != 0 for t in host):
        return f"aten::{name} takes a CPU tensor beside device tensors only as a 0-dim scalar"
    if any(id(t) in written for t in host):
        return f"aten::{name} would write a CPU tensor from device tensors"
    if len(host) > 1:
        return f"aten::{name} takes at most one CPU scalar beside device tensors"
    return None


class _Residence(TorchDispatchMode):
    """CPU, following which tensors a device run would hold on the host; the first refusal is kept."""

    def __init__(self, device: list[torch.Tensor]) -> None:
        super().__init__()
        self.device = {id(t): t for t in device}  # everything else (placed, wrapped numbers) is the host's
        self.refused: str | None = None

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        host = [t for t in tensors if id(t) not in self.device]
        on_device = bool(tensors) and len(host) < len(tensors)
        if host and on_device and self.refused is None:
            why = _judge(func, args, kwargs, host)
            if why is _FOLLOW:
                with self:  # the composite's own calls come back here
                    out = func._op_dk(torch._C.DispatchKey.CompositeExplicitAutograd, *args, **kwargs)
                self._mark(out)
                return out
            self.refused = why
        out = func(*args, **kwargs)
        if on_device or not tensors:  # computed on the device (a factory: from the device's options)
            self._mark(out)
        return out

    def _mark(self, out: Any) -> None:
        for t in pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.device.setdefault(id(t), t)


@unobserved()  # TorchCTS's own work on CPU, not the device's
def refusal(fn: Callable[..., Any], sample: Any) -> str | None:
    """Why PyTorch's own rule refuses `fn` on the sample with its host operands (HostArg, Python
    numbers) where the other tensors are on a device; None when it accepts it, or when CPU rejects
    the call anyway (the reference drops it)."""
    device: list[torch.Tensor] = []

    def copy(x: Any) -> Any:
        if isinstance(x, HostArg):
            return x.value.detach().clone()
        if isinstance(x, torch.Tensor):
            device.append(x.detach().clone().requires_grad_(x.requires_grad))
            return device[-1]
        return x

    inp, args, kwargs = pytree.tree_map(copy, (sample.input, list(sample.args), dict(sample.kwargs)),
                                        is_leaf=lambda x: isinstance(x, HostArg))
    cpu = rebuilt(sample, inp, args, kwargs)
    mode = _Residence(device)
    try:
        with mode:
            fn(cpu.input, *cpu.args, **cpu.kwargs)
    except Exception:  # noqa: BLE001 - CPU rejects the call: the reference drops the sample anyway
        return None
    return mode.refused
