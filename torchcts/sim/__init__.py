"""A simulated PrivateUse1 device, `sim`, running on CPU, with optional planted faults.

    import torchcts.sim        # registers the device: torch.zeros(3, device="sim")

Use it like any third-party backend: `torchcts run --device sim --manifest torchcts:sim/manifest.py`,
the manifest being `torchcts/sim/manifest.py` (see `manifest_path()`). `TORCHCTS_SIM_FAULT=a,b`
plants the named faults of `torchcts.sim.faults.FAULTS` at import; `torchcts selftest` uses them
to prove the suite catches each one.
"""

from __future__ import annotations

from pathlib import Path

import torch

from torchcts import compat
from torchcts.sim import autocast, device, distributed, dynamo, faults, pinned, state, tensor

__all__ = ["SimTensor", "manifest_path", "register"]

SimTensor = tensor.SimTensor


def register() -> None:
    """Rename PrivateUse1 to `sim` and install the device module, hooks and the op fallback."""
    if torch._C._get_privateuse1_backend_name() == state.NAME and hasattr(torch, state.NAME):
        return
    compat.setup_python_backend(state.NAME, device)  # 2.9+: from Python; older: a compiled guard
    tensor.register_kernels()
    autocast.register()  # PyTorch registers no autocast kernels for PrivateUse1 (sim/autocast.py)
    pinned.register()  # a Python backend's hooks cannot give PyTorch a pinned allocator (sim/pinned.py)
    dynamo.install()  # dynamo wraps sim tensors as device tensors (torch.compile)
    distributed.register()  # the c10d backend `simccl` (sim/distributed.py)
    torch.serialization.register_package(5, lambda obj: None, _refuse_storage_on_sim)
    torch.serialization.add_safe_globals([torch._utils._rebuild_device_tensor_from_cpu_tensor, tensor._rebuild])


def _refuse_storage_on_sim(obj: object, location: str) -> None:
    """Loading a CPU-saved storage onto the sim (map_location="sim") needs a device storage, and a
    Python backend has no allocator to make one (PyTorch segfaults): refuse with an error instead."""
    if location.split(":")[0] == state.NAME:
        raise RuntimeError(f"sim: cannot create device storages (map_location={location!r} of a CPU-saved tensor)")


def manifest_path() -> Path:
    """The sim's preset manifest (a manifest.py file), for `--manifest`."""
    return Path(__file__).with_name("manifest.py")


register()
faults.activate_from_env()
