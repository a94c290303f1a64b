"""The sim's decomposition mode: every op with a PyTorch decomposition runs through it, not the CPU kernel.

    import torchcts.sim.decomp      # the sim device, decomposition mode on (a `backend_import`)

`TORCHCTS_SIM_DECOMP` chooses the decompositions: `table` (the default) is PyTorch's Python
decomposition table, `torch._decomp.decomposition_table`; `composite` is PyTorch's C++
CompositeExplicitAutograd kernels, which are what a C++ PrivateUse1 backend gets for an op it
registers no kernel for (`math_native_layer_norm`, `math_group_norm`, ...), run by redispatching
to the PrivateUse1 key with CPU data.

A C++ PrivateUse1 backend that registers no kernel for an op gets PyTorch's composite kernel for
it, and PyTorch's own decomposition of an op is correct by definition for this suite: a tolerance
that fails it is a false "failed". This mode proves the tolerances: each op in
`torch._decomp.decomposition_table` runs its decomposition on the sim's CPU data (the ops the
decomposition calls run CPU kernels: one level, as for a backend missing that one kernel), so
`torchcts run --device sim --manifest <decomp manifest>` compares PyTorch's decompositions with
CPU's kernels case by case. The preset manifest (`manifest_path()`) names in its ledger the
decompositions that differ from the CPU kernel for a reason no tolerance should absorb.

Not decomposed: the sim's own plumbing (copies between devices, the sim's own kernels) and random
ops (a decomposition draws differently; their cases use property oracles either way).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import torchcts.sim  # noqa: F401 - registers the device
from torchcts import settings
from torchcts.sim import kernels, tensor

# Ops the sim itself needs to move data between devices, and random ops.
_KEEP = frozenset({"copy_", "_to_copy", "_copy_from", "_copy_from_and_resize", "clone", "lift_fresh", "lift_fresh_copy",
                   "detach", "alias", "set_", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})
USED: set[str] = set()  # decompositions that ran (for the sim's docs and tests)


def _decomposed(op: torch._ops.OpOverload, decomp: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        out = decomp(*args, **kwargs)
        if out is NotImplemented:  # the decomposition declines these arguments: the op's own kernel
            return op(*args, **kwargs)
        USED.add(str(op))
        return tuple(out) if isinstance(out, tuple) else out  # a return_types structseq: as the op returns

    return run


def decomposable(op: Any) -> bool:
    if not isinstance(op, torch._ops.OpOverload) or op in kernels.KERNELS:
        return False
    name = op._overloadpacket.__name__
    return name not in _KEEP and not tensor._takes_generator(op) and torch.Tag.nondeterministic_seeded not in op.tags


def table() -> dict[Any, Callable[..., Any]]:
    """PyTorch's Python decompositions."""
    from torch._decomp import decomposition_table

    return dict(decomposition_table)


_COMPOSITE_KEYS = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


def composite() -> dict[Any, Callable[..., Any]]:
    """PyTorch's C++ composite kernels of the ops that also have a CPU kernel (otherwise CPU runs the
    composite already): what the PrivateUse1 key computes for an op a backend has no kernel for."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)
    found: dict[Any, Callable[..., Any]] = {}
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::") or not has(name, "CPU") or has(name, "PrivateUse1"):
            continue
        if not any(has(name, k) for k in _COMPOSITE_KEYS):
            continue
        packet, _, overload = name[len("aten::"):].partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload or "default", None)
        if op is not None:
            found[op] = _redispatch(op, keys)
    return found


def _redispatch(op: torch._ops.OpOverload, keys: torch._C.DispatchKeySet) -> Callable[..., Any]:
    tensor_args = [i for i, a in enumerate(op._schema.arguments) if str(a.type) == "Tensor"]

    def run(*args: Any, **kwargs: Any) -> Any:
        # A Python number for a Tensor argument is a wrapped number that only the op's own argument
        # parser can make (its type promotion differs from a 0-dim tensor's): those calls decline.
        if any(i < len(args) and isinstance(args[i], (bool, int, float, complex)) for i in tensor_args):
            return NotImplemented
        return op.redispatch(keys, *args, **kwargs)

    return run


MODES: dict[str, Callable[[], dict[Any, Callable[..., Any]]]] = {"table": table, "composite": composite}


def enable(mode: str = "table") -> int:
    """Route every decomposable op through its decomposition; returns how many ops that is."""
    if mode not in MODES:
        raise ValueError(f"{settings.env_name('sim_decomp')}={mode!r}: use one of {', '.join(MODES)}")
    count = 0
    for op, fn in MODES[mode]().items():
        if decomposable(op):
            kernels.KERNELS[op] = _decomposed(op, fn)
            count += 1
    return count


def manifest_path() -> Path:
    """The decomposition mode's preset manifest (the sim's, with this module as backend_import)."""
    return Path(__file__).with_name("manifest_decomp.py")


MODE = settings.current().sim_decomp
OPS = enable(MODE)
