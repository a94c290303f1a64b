"""The sim's planted data-loading and profiler faults, caught by `data_loading` and `profiler` (issue 32).

`non_blocking_copy_unordered`: the sim's non_blocking copies go to a copy queue that compute does
not wait for; they land at `torch.sim.synchronize()`. Reading a copy's destination after a
synchronize (what a correct program does for a device-to-host copy) sees the right values; a
device op right after a host-to-device copy (what the stream order promises is safe) reads the
destination's stale contents.

`profiler_relu_decomposed`: the sim's tensors decompose `torch.relu` above the dispatcher (their
`__torch_function__` calls clamp_min), as a Python backend lacking a kernel might: the values are
right, but torch.profiler records `aten::clamp_min` where the program called `aten::relu`.

Joined to the registry in faults.py.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts.sim import device, tensor
from torchcts.sim.fault_model import Fault, on_op

# (destination, the data it will hold once the copy lands), drained by synchronize
_QUEUED: list[tuple[torch.Tensor, torch.Tensor]] = []


def _non_blocking(func: Any, args: tuple, kwargs: dict) -> bool:
    if func._overloadpacket.__name__ == "copy_":
        return bool(kwargs.get("non_blocking", args[2] if len(args) > 2 else False))
    return bool(kwargs.get("non_blocking", False))


@on_op("_to_copy", "copy_")
def _queue_non_blocking(func, args, kwargs, call):
    """A non_blocking copy returns (or leaves) its destination stale; the data lands at synchronize."""
    if not _non_blocking(func, args, kwargs):
        return call(*args, **kwargs)
    if func._overloadpacket.__name__ == "copy_":
        dst, src = args[0], args[1]
        _QUEUED.append((dst, src.detach().clone()))
        return dst
    out = call(*args, **kwargs)
    _QUEUED.append((out, out.detach().clone()))
    with torch.no_grad():
        out.zero_()
    return out


def _install_copy_queue() -> None:
    _queue_non_blocking()
    synchronize = device.synchronize

    def drain_then_synchronize(dev: Any = None) -> None:
        with torch.no_grad():
            while _QUEUED:
                dst, data = _QUEUED.pop(0)
                dst.copy_(data)
        synchronize(dev)

    device.synchronize = drain_then_synchronize


def _install_relu_decomposed() -> None:
    relus = (torch.relu, torch.Tensor.relu, torch.nn.functional.relu)

    def torch_function(cls: type, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        # as PyTorch runs a subclass with the default __torch_function__ (which it skips): no conversion
        with torch._C.DisableTorchFunctionSubclass():
            if func in relus:
                return torch.clamp_min(args[0], 0)
            return func(*args, **(kwargs or {}))

    tensor.SimTensor.__torch_function__ = classmethod(torch_function)  # type: ignore[method-assign]


@on_op("_to_copy", "copy_")
def _non_blocking_drops_offset(func, args, kwargs, call):
    """A non_blocking host-to-device copy of a view hands the DMA queue the source's storage pointer
    without its storage offset: the copy starts at the storage's first element. A blocking copy, or a
    view at offset 0, is right."""
    if not _non_blocking(func, args, kwargs):
        return call(*args, **kwargs)
    at = 1 if func._overloadpacket.__name__ == "copy_" else 0
    src = args[at]
    if not isinstance(src, torch.Tensor) or src.storage_offset() == 0 or id(src) not in tensor.HOST_TENSORS:
        return call(*args, **kwargs)
    moved = torch.as_strided(src, src.shape, src.stride(), 0)
    return call(*args[:at], moved, *args[at + 1:], **kwargs)


FAULTS = (
    Fault("non_blocking_copy_unordered", "non_blocking copies land at synchronize(): a device op right after a "
          "host-to-device copy reads stale data", "data_loading", 6,
          ("data_loading/non_blocking/*", "data_loading/dataloader/pinned/*"), _install_copy_queue),
    Fault("non_blocking_drops_offset", "a non_blocking host-to-device copy of a view ignores its storage offset",
          "transfers", 3, ("transfers/to_device/*/non_blocking*", "transfers/copy_into_device/*"),
          _non_blocking_drops_offset, op="_to_copy"),
    Fault("profiler_relu_decomposed", "torch.relu runs as clamp_min above the dispatcher: the profile names "
          "aten::clamp_min where the program called aten::relu", "profiler", 6,
          ("profiler/ops/pointwise/*",), _install_relu_decomposed),
)
