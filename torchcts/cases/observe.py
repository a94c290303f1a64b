"""Observed dispatch: the aten overloads that reached the device under test while a case ran.

`engine/runner.py: run_case` runs every case body inside `observe(case, device)`, a
`TorchDispatchMode` that records each overload called with a tensor on the device under test (an
argument or a result). The record's `dispatched` field is that sorted list; `coverage report RUN`
counts it (docs/coverage.md, "Observed coverage").

What a dispatch mode sees: every op that reaches the Python dispatch key, which sits below
Autograd and above the backend keys. So it sees backward kernels (the autograd engine calls them
through the dispatcher, with the mode's thread-local state), factories (`empty`, `randn` with
`device=`), copies to and from the device, and CompositeExplicitAutograd kernels; it does not see
a CompositeImplicitAutograd op itself, only the ops it decomposes into (unless the backend
registers its own kernel for it, in which case that kernel's op is seen), nor ops a kernel calls
internally, nor ops run on other threads.

CPU references are not the device under test: TorchCTS's oracle code (the CPU reference of the
helpers, of the OpInfo runner, of cases/overloads.py and of the generated suite, CPU input
construction, the comparison) runs inside `unobserved()`, which takes the mode off the stack, so
on `--device cpu` (where the device filter cannot tell them apart) they are not counted either,
and run exactly as without observation.

A mode changes what `isTensorSubclassLike` answers inside PyTorch's C++ composite kernels (a few
take a functional path under a mode), and torch.compile traces differently under one: cases where
that changes a result are not observed, by `UNOBSERVED` (their record says why).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode, _pop_mode, _push_mode

from torchcts import settings
from torchcts.cases.ops import schema_name
from torchcts.model.case import Case

# `TORCHCTS_OBSERVE_DISPATCH=0` runs every case without observation (benchmarks, debugging).
ENV = settings.env_name("observe_dispatch")

# Case id globs (or suite names) never observed -> why. First match wins.
UNOBSERVED: dict[str, str] = {
    "compiler": "torch.compile traces under a dispatch mode differently (the mode becomes part of the trace)",
    "compiler_ops": "torch.compile traces under a dispatch mode differently (the mode becomes part of the trace)",
    "distributed": "the collectives run in the rank processes (cases/ranks.py), which this process's observer "
                   "does not see; and a failing case must not run its collectives again without it",
    "opinfo/linalg.matrix_rank*/out": "linalg_matrix_rank's composite out= kernel never writes `out` under a "
                                      "dispatch mode (isTensorSubclassLike), so observing would fail the case",
    "*/linalg_matrix_rank*": "the out= overloads of linalg_matrix_rank (out_variants, generated): the same composite "
                             "out= kernel, which never writes `out` under a dispatch mode",
}


def unobserved_reason(case: Case) -> str | None:
    """Why this case runs without observation, or None."""
    if not settings.current().observe_dispatch:
        return f"{ENV}=0"
    for pattern, why in UNOBSERVED.items():
        if case.suite == pattern or fnmatch.fnmatchcase(case.id, pattern):
            return why
    return None


# The attribute of a case's failure holding what that case's rerun needs (`hand_to_rerun`).
_RERUN = "_torchcts_rerun"


def hand_to_rerun(exc: BaseException, **kwargs: Any) -> None:
    """Let the failure `exc` give keyword arguments to the case function's rerun without the observer
    (engine/runner.py), so that run need not find again what this one found (an explore case's find:
    cases/explore/find.py). The failure itself carries them: nothing outlives the case or reaches
    another one run in the same process."""
    setattr(exc, _RERUN, {**rerun_kwargs(exc), **kwargs})


def rerun_kwargs(exc: BaseException) -> dict[str, Any]:
    """What the failure `exc` hands to the case's rerun (`hand_to_rerun`); empty for any other failure."""
    held = getattr(exc, _RERUN, None)
    return dict(held) if isinstance(held, dict) else {}


def _on(obj: Any, device_type: str) -> bool:
    """Whether obj is, or directly holds, a tensor on device_type (list/tuple arguments one level deep)."""
    if isinstance(obj, torch.Tensor):
        return obj.device.type == device_type
    if isinstance(obj, (list, tuple)):
        return any(isinstance(t, torch.Tensor) and t.device.type == device_type for t in obj)
    return False


def _wrapped(obj: Any) -> bool:
    """Whether obj is a tensor subclass with its own __torch_dispatch__ (a wrapper subclass)."""
    return isinstance(obj, torch.Tensor) and type(obj).__torch_dispatch__ is not torch.Tensor.__torch_dispatch__


_NAMES: dict[Any, str] = {}


def overload_name(func: Any) -> str:
    """`aten::add.Tensor`, `aten::abs` (the default overload): the surface names of coverage/surfaces.py."""
    name = _NAMES.get(func)
    if name is None:
        name = _NAMES[func] = schema_name(func._schema)
    return name


class DispatchObserver(TorchDispatchMode):
    """Records the overloads called with a tensor on `device_type`; changes nothing else."""

    def __init__(self, device_type: str) -> None:
        super().__init__()
        self.device_type = device_type
        self.seen: set[Any] = set()
        # A device tensor answering its own __torch_dispatch__ (a Python backend's wrapper subclass,
        # the sim) was seen: the dispatcher's tables do not say what served its ops (cases/fallback.py).
        self.wrapped = False

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """False: PyTorch (2.13 measured) otherwise wraps __torch_dispatch__ in torch._dynamo.disable,
        which imports dynamo at the first op observed (~2 s per process) and roughly doubles the
        mode's cost per op. The guard only matters for torch.compile under the mode: the cases that
        compile are in UNOBSERVED."""
        return False

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func not in self.seen:
            dev = self.device_type
            if (_on(out, dev) or any(_on(a, dev) for a in args) or any(_on(v, dev) for v in kwargs.values())):
                self.seen.add(func)
                self.wrapped = self.wrapped or _wrapped(out) or any(_wrapped(a) for a in args)
        return out

    def names(self) -> list[str]:
        return sorted({overload_name(f) for f in self.seen if getattr(f, "namespace", "aten") == "aten"})

    def fallback(self) -> list[str] | None:
        """The overloads that ran on the backend's CPU fallback (cases/fallback.py); None when the
        device's tensors answer their own dispatch (what served them is not in the tables)."""
        if self.wrapped:
            return None
        from torchcts.cases.fallback import fallback_ops

        return fallback_ops(self.names(), self.device_type)


@contextmanager
def observe(case: Case, device: torch.device) -> Iterator[DispatchObserver | None]:
    """Observe the body (None when the case is in UNOBSERVED or observation is switched off)."""
    if unobserved_reason(case) is not None:
        yield None
        return
    with DispatchObserver(device.type) as mode:
        yield mode


@contextmanager
def unobserved() -> Iterator[None]:
    """TorchCTS's own CPU work (references, inputs, comparisons): not the device under test.

    Takes an active observer off the dispatch-mode stack for the block, so the block runs exactly
    as without observation; a no-op when no observer is on top (none active, or a case's own mode)."""
    if not isinstance(_get_current_dispatch_mode(), DispatchObserver):
        yield
        return
    mode = _pop_mode()
    try:
        yield
    finally:
        _push_mode(mode)
