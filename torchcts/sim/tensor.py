"""The sim device's tensors and its one kernel: every aten op runs on CPU behind the device.

A sim tensor is a wrapper subclass (`t.device.type == "sim"`) holding a CPU tensor `_cpu` with the
same sizes, strides and storage offset. Ops reach the sim two ways, and both end in `dispatch`:
- through `__torch_dispatch__` (the Python key, below autograd) when any input is a sim tensor;
- through a PrivateUse1 backend fallback for ops without sim inputs (factories with device="sim",
  `cpu_tensor.to("sim")` allocating its destination).

`dispatch` unwraps sim tensors to their CPU data, maps device="sim" to cpu, runs the op on CPU and
rewraps every result. A result that *is* an input's CPU tensor (in-place and out= ops) returns that
input's wrapper, its metadata refreshed if the op resized it; a view result shares the input's CPU
storage, so aliasing and mutation through views behave as on a real device. Planted faults hook in
per op (see faults.py); with no fault active the hook table is empty and costs one dict lookup.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch

from torchcts.oracle.allowed import host_argument_ops
from torchcts.sim import kernels, state

# op packet name ("add", "sum") -> hook(func, args, kwargs, call) -> result; filled by faults.py.
OP_HOOKS: dict[str, Callable[..., Any]] = {}  # packet name (or "*": every op without its own hook) -> fault hook
HOST_TENSORS: set[int] = set()  # ids of the hooked call's arguments that are CPU tensors (not sim tensors)


class SimTensor(torch.Tensor):
    """A tensor on the sim device; its data lives in `_cpu` (same sizes, strides, offset)."""

    _cpu: torch.Tensor

    @staticmethod
    def __new__(cls, cpu: torch.Tensor, index: int = 0) -> SimTensor:
        r = torch.Tensor._make_wrapper_subclass(
            cls, cpu.size(), strides=cpu.stride(), storage_offset=cpu.storage_offset(),
            dtype=cpu.dtype, layout=cpu.layout, device=torch.device(state.NAME, index), requires_grad=False,
        )
        r._cpu = cpu
        # Lazy conjugation and negation are tensor flags; the wrapper must carry them too.
        if cpu.is_conj():
            torch._C._set_conj(r, True)
        if cpu.is_neg():
            torch._C._set_neg(r, True)
        state.MEMORY.track(r, cpu)
        _remember_storage(r, cpu)
        return r

    def __init__(self, cpu: torch.Tensor, index: int = 0) -> None:  # __new__ did it
        super().__init__()

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        body = repr(self._cpu).removeprefix("tensor(").removesuffix(")")
        return f"tensor({body}, device='{self.device}')"

    # Real devices expose their memory address; aliasing checks compare it.
    def data_ptr(self) -> int:
        return self._cpu.data_ptr()

    def untyped_storage(self) -> torch.UntypedStorage:
        return self._cpu.untyped_storage()

    # `t.data = new` (set_data) swaps the TensorImpl's storage in C++ and never dispatches, so the
    # wrapper's `_cpu` must follow by hand; else t keeps reading its old data (pytorch/xla#3392 is the
    # same bug on a backend whose data also lives outside the TensorImpl).
    @property
    def data(self) -> torch.Tensor:
        return torch._C.TensorBase.data.__get__(self)

    @data.setter
    def data(self, new: torch.Tensor) -> None:
        torch._C.TensorBase.data.__set__(self, new)
        if isinstance(new, SimTensor):
            self._cpu = new._cpu

    def tolist(self) -> Any:
        """Tensor.tolist refuses subclasses; a device backend copies to the host and converts."""
        return self.cpu().tolist()

    def __coerce_same_metadata_as_tangent__(self, expected_metadata: Any, expected_type: Any = None) -> SimTensor:
        """AOTAutograd traced the backward with plain device tensors (sim/dynamo.py): a sim tensor
        is one at run time, so a gradient arriving as a SimTensor is already what it expects."""
        return self

    def __reduce_ex__(self, protocol: int):
        """Pickle as a plain device tensor (the way storage-less PrivateUse1 tensors are saved)."""
        hook = OP_HOOKS.get("__reduce_ex__")
        if hook is not None:
            return hook(self)
        # The CPU tensor itself (not a copy): torch.save then keeps its strides, storage offset and
        # the storage shared with other saved views, and _rebuild puts them back on the sim.
        return (_rebuild, (self._cpu.detach(), str(self.device), self.requires_grad))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return dispatch(func, args, kwargs or {})


def _rebuild(data: torch.Tensor, device: str, requires_grad: bool) -> torch.Tensor:
    """Unpickle a saved sim tensor where map_location says: on the sim it wraps the loaded CPU
    tensor (views saved together share its storage); elsewhere it is copied there. A callable
    map_location already chose where the storage lives: the tensor stays with it."""
    chosen = torch.serialization._serialization_tls.map_location
    where = data.device if callable(chosen) else torch.device(torch._utils._get_restore_location(device))
    out = SimTensor(data, state.check_index(where.index or 0)) if where.type == state.NAME else data.to(where)
    out.requires_grad_(requires_grad)
    return out


def _map(fn: Callable[[Any], Any], x: Any) -> Any:
    """tree_map for what op arguments and results hold (tuples, lists, dicts); pytree is slower."""
    if isinstance(x, (tuple, list)):
        return type(x)(_map(fn, y) for y in x)
    if isinstance(x, dict):
        return {k: _map(fn, v) for k, v in x.items()}
    return fn(x)


# The wrapper's own (data-less) storage -> its CPU tensor: PyTorch's composite kernels pass a tensor's
# storage on (set_.source_Tensor_storage_offset calls set_.source_Storage_storage_offset with it).
_STORAGES: dict[int, weakref.ref[torch.Tensor]] = {}


def _remember_storage(wrapper: torch.Tensor, cpu: torch.Tensor) -> None:
    key = torch.Tensor.untyped_storage(wrapper)._cdata

    def forget(ref: weakref.ref[torch.Tensor], key: int = key) -> None:
        if _STORAGES.get(key) is ref:
            del _STORAGES[key]

    _STORAGES[key] = weakref.ref(cpu, forget)


def _unwrap(x: Any) -> Any:
    if isinstance(x, SimTensor):
        return x._cpu
    if isinstance(x, torch.UntypedStorage) and x.device.type == state.NAME:
        cpu = _STORAGES.get(x._cdata, lambda: None)()
        return cpu.untyped_storage() if cpu is not None else x
    if isinstance(x, torch.device) and x.type == state.NAME:
        return torch.device("cpu")
    if isinstance(x, str) and x.split(":")[0] == state.NAME:
        return torch.device("cpu")
    return x


def _target_index(args: tuple, kwargs: dict) -> int | None:
    """The sim device index results go to, or None when the op targets another device."""
    dev = kwargs.get("device")
    if dev is not None:
        dev = torch.device(dev)
        if dev.type != state.NAME:
            return None
        return state.check_index(dev.index if dev.index is not None else state.current())
    for a in args:
        if isinstance(a, SimTensor):
            return a.device.index or 0
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, SimTensor):
                    return b.device.index or 0
    return state.current()


def _refresh(wrapper: SimTensor, cpu: torch.Tensor) -> SimTensor:
    """An in-place/out= op that resized or restrided its CPU tensor: make the wrapper agree."""
    if (wrapper.shape, wrapper.stride(), wrapper.storage_offset()) != (cpu.shape, cpu.stride(), cpu.storage_offset()):
        with torch.no_grad():
            wrapper.data = SimTensor(cpu, wrapper.device.index or 0)
        wrapper._cpu = cpu
    return wrapper


def _refresh_written(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> None:
    """Refresh the wrappers of every argument the op writes: an op that returns nothing
    (`_foreach_add.List_out(..., Tensor(a!)[] out) -> ()`) resizes its outs in place too."""
    for i, arg in enumerate(func._schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = args[i] if i < len(args) and not arg.kwarg_only else kwargs.get(arg.name)
        for t in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(t, SimTensor):
                _refresh(t, t._cpu)


def dispatch(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    index = _target_index(args, kwargs)
    # CPU's storage-less zero tensors crash when a later sim op reads them: materialise zeros.
    if func is torch.ops.aten._efficientzerotensor.default:
        func = torch.ops.aten.zeros.default
    if _mixes_devices(func, args, kwargs):
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{state.NAME}:{index} and cpu! ({func})")
    cargs, ckwargs = _map(_unwrap, args), _map(_unwrap, kwargs)
    if _takes_generator(func) and ckwargs.get("generator") is None:
        ckwargs["generator"] = state.generator()
    hook = OP_HOOKS.get(func._overloadpacket.__name__, OP_HOOKS.get("*")) if OP_HOOKS else None
    if hook is not None:  # which unwrapped tensors came from the host (a CPU scalar tensor), for faults
        HOST_TENSORS.clear()
        HOST_TENSORS.update(id(x) for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor)
                            and not isinstance(x, SimTensor))
    call = kernels.KERNELS.get(func, func)
    with _cpu_kernel_keys():
        out = hook(func, cargs, ckwargs, call) if hook is not None else call(*cargs, **ckwargs)
    if func._schema.is_mutable:
        _refresh_written(func, args, kwargs)
    if index is None:
        return out
    inputs = _sim_inputs(args, kwargs)
    by_cpu = {id(a._cpu): a for a in inputs}
    by_storage: dict[int, SimTensor] | None = None

    def rewrap(x: Any) -> Any:
        nonlocal by_storage
        if isinstance(x, torch.Tensor) and not isinstance(x, SimTensor):
            same = by_cpu.get(id(x))
            if same is not None and same._cpu is x:
                return _refresh(same, x)
            wrapped = SimTensor(x, index)
            if inputs:
                if by_storage is None:
                    by_storage = {_storage_key(a._cpu): a for a in inputs}
                base = by_storage.get(_storage_key(x))
                if base is not None:
                    _share_storage(wrapped, base)
            return wrapped
        return x

    return _map(rewrap, out)


def _storage_key(cpu: torch.Tensor) -> int:
    return cpu.untyped_storage()._cdata


def _share_storage(view: SimTensor, base: SimTensor) -> None:
    """A result that views an input's CPU memory shares the input wrapper's storage too, as views do
    on any device: PyTorch's C++ code asks `is_alias_of` (storage identity), e.g. matmul(out=) only
    copies its folded result back when the view it wrote is not an alias of `out`."""
    torch._functionalize_unsafe_set(view, base)


# The dispatch keys above Python that PyTorch's own kernels rely on, which a __torch_dispatch__ call
# runs with excluded: CPU kernels composed of other ops (linalg_pinv's matmul with U.mH(), ...) leave
# conjugate/negative views and zero tensors to these keys' fallbacks, as a C++ backend kernel would.
_TENSOR_FLAG_KEYS = (torch._C.DispatchKeySet(torch._C.DispatchKey.Conjugate)
                     | torch._C.DispatchKeySet(torch._C.DispatchKey.Negative)
                     | torch._C.DispatchKeySet(torch._C.DispatchKey.ZeroTensor))


def _cpu_kernel_keys() -> torch._C._ForceDispatchKeyGuard:
    """Run a CPU kernel with the conjugate/negative/zero-tensor fallbacks enabled again."""
    return torch._C._ForceDispatchKeyGuard(torch._C._dispatch_tls_local_include_set(),
                                           torch._C._dispatch_tls_local_exclude_set() - _TENSOR_FLAG_KEYS)


# Ops that take a CPU tensor next to sim tensors on a real device too (copies; CPU indices).
# The addcmul/addcdiv foreach ops' `.Tensor` overloads take their scalars as a CPU tensor (read on the host);
# the ops with an argument PyTorch keeps on the host (packed sequences' lengths and batch sizes,
# _reshape_from_tensor's shape, ...) come from the one list of them (oracle/allowed.py: HostArgument).
_CROSS_DEVICE = frozenset({"copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "index", "index_put_",
                           "_index_put_impl_", "index_put", "set_", "_foreach_addcmul", "_foreach_addcmul_",
                           "_foreach_addcdiv", "_foreach_addcdiv_"}) | host_argument_ops()


def _mixes_devices(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> bool:
    """A non-scalar CPU tensor among the inputs of an op on sim tensors, or a CPU out=: CPU 0-dim
    inputs are scalars that every device accepts; anything else is a device mismatch a backend must refuse."""
    if func._overloadpacket.__name__ in _CROSS_DEVICE:
        return False
    flat = [*args, *kwargs.values()]
    flat += [b for a in flat if isinstance(a, (list, tuple)) for b in a]
    tensors = [a for a in flat if isinstance(a, torch.Tensor)]
    outs = kwargs.get("out")
    outs = {id(t) for t in (outs if isinstance(outs, (list, tuple)) else [outs]) if isinstance(t, torch.Tensor)}
    # a CPU 0-dim tensor is a scalar input, never an output: out= must be on the device
    return any(isinstance(t, SimTensor) for t in tensors) and any(
        not isinstance(t, SimTensor) and t.device.type == "cpu" and (t.dim() > 0 or id(t) in outs) for t in tensors)


def _sim_inputs(args: tuple, kwargs: dict) -> list[SimTensor]:
    found: list[SimTensor] = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, SimTensor):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(b for b in a if isinstance(b, SimTensor))
    return found


_GEN_CACHE: dict[Any, bool] = {}


def _takes_generator(func: torch._ops.OpOverload) -> bool:
    got = _GEN_CACHE.get(func)
    if got is None:
        got = _GEN_CACHE[func] = any(a.name == "generator" for a in func._schema.arguments)
    return got


def fallback(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """The PrivateUse1 kernel for every op that reaches the key without a sim tensor input."""
    return dispatch(op, args, kwargs)


# Ops that PyTorch calls with the Python key excluded (the torch.tensor(..., device=) constructor
# copies its data in such a region); the backend fallback asserts there, an op kernel does not.
EXPLICIT = ("copy_.default", "_to_copy.default", "_copy_from.default", "_copy_from_and_resize.default",
            *(f"linalg_matrix_rank.{o}" for o in ("out", "out_tol_tensor", "atol_rtol_tensor_out", "atol_rtol_float_out")),
            "nanmean.out")
# linalg_matrix_rank(out=)'s composite C++ kernel, given a tensor subclass (as every sim tensor is),
# computes the sum functionally and rebinds its local `out` instead of writing it: the Python `out`
# stays unwritten (PyTorch's own CPU tensors under a TorchDispatchMode show it too). A sim kernel
# for the out= overloads skips that composite, as a C++ backend's tensors (no Python key) do, and
# runs CPU's on plain tensors. nanmean(out=)'s composite kernel on torch 2.7 reaches a CPU
# DispatchStub with the sim's device type (an internal assert): the sim kernel runs CPU's instead.

_LIBS: list[torch.library.Library] = []


def _kernel(op: torch._ops.OpOverload) -> Callable[..., Any]:
    return lambda *args, **kwargs: dispatch(op, args, kwargs)


def register_kernels() -> None:
    if _LIBS:
        return
    everything = torch.library.Library("_", "IMPL")  # a whole-backend fallback
    everything.fallback(fallback, "PrivateUse1")
    ops = torch.library.Library("aten", "IMPL")
    for name in EXPLICIT:
        packet, _, overload = name.partition(".")
        op = getattr(getattr(torch.ops.aten, packet), overload)
        ops.impl(op, _kernel(op), "PrivateUse1")
    _LIBS.extend((everything, ops))


def is_sim(t: Any) -> bool:
    return isinstance(t, SimTensor)

