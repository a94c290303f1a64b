"""Pinned host memory on the sim: the host allocator a backend's hooks provide, emulated.

A C++ backend hands PyTorch a pinned-memory allocator through PrivateUse1HooksInterface
(`getPinnedMemoryAllocator`, `isPinnedPtr`); the hooks a Python backend can register
(`torch._C._acc.PrivateUse1Hooks`) have only is_available / has_primary_context / is_built, so
`tensor.pin_memory()` raises NotImplementedError on a Python PrivateUse1 device. The sim registers
CPU kernels instead for the two ops that reach that allocator: `aten::_pin_memory` copies into a
fresh buffer and remembers its storage, `aten::is_pinned` asks whether a tensor's storage is one of
them (alive, by data pointer). `pin_memory()`, `is_pinned()` and a `pin_memory=True` DataLoader then
behave as on a device with a pinned allocator. Allocation with `pin_memory=True`
(`torch.empty(..., pin_memory=True)`) asks the allocator from C++ and still raises: the data_loading
suite pins with `.pin_memory()` only (docs/semantic-suites.md).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch

_LIBS: list[torch.library.Library] = []
_LOCK = threading.RLock()  # re-entered when a storage dies (its callback) while this thread holds it
# data pointer of a pinned buffer -> its storage (weakly: the entry goes with the buffer's last tensor)
_PINNED: dict[int, weakref.ref[torch.UntypedStorage]] = {}


def _forget(key: int, ref: weakref.ref[torch.UntypedStorage]) -> None:
    """A pinned buffer was freed: drop its entry, unless its address already holds a newer one."""
    with _LOCK:
        if _PINNED.get(key) is ref:
            del _PINNED[key]


def _pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
    """A copy of `self` in a buffer of the (emulated) pinned allocator, same sizes and strides."""
    out = torch.empty_like(self)
    out.copy_(self)
    storage = out.untyped_storage()
    key = storage.data_ptr()
    with _LOCK:
        _PINNED[key] = weakref.ref(storage, lambda ref: _forget(key, ref))
    return out


def _is_pinned(self: torch.Tensor, device: Any = None) -> bool:
    if self.device.type != "cpu" or self.numel() == 0:
        return False
    storage = self.untyped_storage()
    with _LOCK:
        ref = _PINNED.get(storage.data_ptr())
        return ref is not None and ref() is not None


def register() -> None:
    """Register the CPU kernels of `_pin_memory` and `is_pinned` (once per process)."""
    if _LIBS:
        return
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("_pin_memory", _pin_memory, "CPU")
    lib.impl("is_pinned", _is_pinned, "CPU")
    _LIBS.append(lib)
