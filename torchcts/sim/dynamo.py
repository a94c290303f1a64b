"""torch.compile on the sim: dynamo sees sim tensors as the plain device tensors they stand for.

A C++ PrivateUse1 backend's tensors are plain `torch.Tensor`s, which dynamo wraps as tensors: it
fakes them (FakeTensor on device `sim`, shapes from PyTorch's meta kernels), AOTAutograd
functionalises the graph, and `aot_eager` runs it on the device's eager kernels. The sim's
tensors are Python wrapper subclasses (tensor.SimTensor), and dynamo's VariableBuilder wraps a
tensor subclass only when its `__torch_dispatch__` is Tensor's or it is a traceable wrapper
subclass (`__tensor_flatten__`); anything else becomes an opaque object and every op on it breaks
the graph ("Failed to convert args/kwargs to proxy"). Measured on PyTorch 2.13: that check is
the only obstacle. With it answered "a tensor" for SimTensor, fake propagation, guards, dynamic
shapes, graph breaks, input mutation and `aot_eager` work unchanged, and the compiled graph runs
every op through `tensor.dispatch` (so planted faults are reached as in eager).

`__tensor_flatten__` is not the answer: it makes the sim a traceable subclass, whose fake is built
from its inner CPU tensor (the meta converter then refuses a `sim` tensor on a `meta` storage),
and whose graph would trace through the sim's Python into CPU ops: not what a device's compile is.

PyTorch 2.12 and 2.13 (measured); older dynamo asserts on any other tensor subclass in
wrap_tensor, so there the sim does not claim `compile` (compat.python_backend_compiles).

dynamo is imported lazily (seconds under load): the hook is applied once `torch._dynamo` has
been imported (by torch.compile), or at once if it already is.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

DYNAMO = "torch._dynamo"


def _patch() -> None:
    import torch
    from torch._dynamo import trace_rules
    from torch._dynamo.variables.builder import VariableBuilder as cls

    from torchcts.sim import tensor
    from torchcts.sim.tensor import SimTensor

    if getattr(cls._wrap, "_torchcts_sim", False):
        return
    # The sim's Python is its kernels (C++ in a real backend): dynamo must run it, never trace it
    # (after a graph break it would otherwise compile SimTensor.__new__ as user code). Skipping the
    # sim's files covers its entry frames; the kernels run with dynamo off for every frame they call.
    trace_rules.add("torchcts.sim")
    tensor.dispatch = torch._dynamo.disable(tensor.dispatch, recursive=True)
    wrap = cls._wrap

    def _wrap(self: Any, value: Any) -> Any:
        if type(value) is SimTensor:  # what a C++ backend's plain tensor takes
            return self.wrap_tensor(value)
        return wrap(self, value)

    _wrap._torchcts_sim = True  # type: ignore[attr-defined]
    cls._wrap = _wrap


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds torch._dynamo with the regular finders and patches it once the package has loaded."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != DYNAMO:
            return None
        sys.meta_path.remove(self)  # the regular finders locate it; we only wrap its execution
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _patch()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Make dynamo wrap sim tensors as device tensors, now or when it is first imported."""
    if DYNAMO in sys.modules:
        _patch()
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
