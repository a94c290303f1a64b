"""The sim device's process state: its name, current index, generator and memory accounting."""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch

NAME = "sim"
COUNT = 1

_local = threading.local()
_GENERATOR = torch.Generator()
_GENERATOR.manual_seed(0)


def current() -> int:
    return getattr(_local, "index", 0)


def check_index(index: int) -> int:
    if not 0 <= index < COUNT:
        raise RuntimeError(f"sim: invalid device index {index} (device_count() == {COUNT})")
    return index


def set_current(index: int) -> None:
    _local.index = check_index(index)


def generator() -> torch.Generator:
    """The sim device's default generator (a CPU generator of its own, apart from CPU's)."""
    return _GENERATOR


class Memory:
    """Bytes of sim storages alive now, and the peak since the last reset.

    Storages are keyed by data pointer; each wrapper holds a reference, released by a weakref
    finalizer, so views share one entry and freeing the last view frees the bytes.
    """

    def __init__(self) -> None:
        self.refs: dict[int, int] = {}
        self.sizes: dict[int, int] = {}
        self.allocated = 0
        self.peak = 0
        self._lock = threading.Lock()

    def track(self, wrapper: Any, cpu: torch.Tensor) -> None:
        try:
            storage = cpu.untyped_storage()
            key, size = storage.data_ptr(), storage.nbytes()
        except (RuntimeError, NotImplementedError):  # no real memory: zero tensors, sparse layouts
            return
        with self._lock:
            self.refs[key] = self.refs.get(key, 0) + 1
            self.allocated += size - self.sizes.get(key, 0)
            self.sizes[key] = size
            self.peak = max(self.peak, self.allocated)
        weakref.finalize(wrapper, self.release, key)

    def release(self, key: int) -> None:
        with self._lock:
            n = self.refs.get(key, 0) - 1
            if n > 0:
                self.refs[key] = n
                return
            self.refs.pop(key, None)
            self.allocated -= self.sizes.pop(key, 0)

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.allocated


MEMORY = Memory()
