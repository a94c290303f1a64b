"""Test-only faults for exploration (tests/explore/test_explore.py), planted on the sim device.

Used as a manifest's backend_import (device_name "sim"): importing it imports the sim and chains
two bugs in front of its kernels, each at a switch point OpInfo's own samples never reach:
    sum    reduces wrongly (adds 1) when `dim` is an empty list
    clamp  returns +1.0 where the input is -0.0 when `min` is None
Not in torchcts/sim/faults.py: those are the selftest's, owned elsewhere, and exploration must
never be tuned to them.
"""

import torch

import torchcts.sim  # noqa: F401 - registers the device
from torchcts.sim import tensor


def _sum(func, args, kwargs, call):
    out = call(*args, **kwargs)
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if isinstance(dim, (list, tuple)) and len(dim) == 0 and isinstance(out, torch.Tensor):
        return out + 1
    return out


def _clamp(func, args, kwargs, call):
    out = call(*args, **kwargs)
    low = args[1] if len(args) > 1 else kwargs.get("min")
    x = args[0]
    if low is None and isinstance(out, torch.Tensor) and x.is_floating_point() and out.shape == x.shape:
        negzero = (x == 0) & torch.signbit(x)
        if bool(negzero.any()):
            return torch.where(negzero, torch.ones_like(out), out)
    return out


tensor.OP_HOOKS["sum"] = _sum
tensor.OP_HOOKS["clamp"] = _clamp
