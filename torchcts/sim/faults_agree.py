"""The sim's planted faults of one form of an op drifting from its twin within the CPU tolerance
(issue 50 item 3), caught by the OpInfo suite's `agree` kind (cases/opinfo/agree.py) alone.

Each is wrong on one form only and by an ulp or so: the method/inplace/out kinds, which compare that
form with CPU within the op's tolerance, pass it, and the agree kind, which demands bit-for-bit
agreement between forms one kernel serves, fails it. Joined to the registry in faults.py.
"""

from __future__ import annotations

import torch

from torchcts.sim.fault_model import Fault, on_op


def _toward_zero(t: torch.Tensor) -> None:
    """Every nonzero element of a float32 tensor 1 ulp toward zero, in place."""
    t.copy_(torch.where(t != 0, torch.nextafter(t, torch.zeros_like(t)), t))


@on_op("tanh_")
def _tanh_inplace_ulp(func, args, kwargs, call):
    """float32 tanh_ (in-place) takes a scalar path whose polynomial rounds each result 1 ulp toward
    zero, where the functional and out= forms share the vector kernel."""
    out = call(*args, **kwargs)
    if isinstance(out, torch.Tensor) and out.dtype == torch.float32:
        _toward_zero(out)
    return out


@on_op("mean")
def _mean_out_reciprocal(func, args, kwargs, call):
    """float32 mean(out=) scales the sum by the reciprocal of the count (sum * (1/n)) where the
    functional form divides (sum / n): up to an ulp off on counts that are no power of two."""
    out = call(*args, **kwargs)
    target = kwargs.get("out")
    if func is not torch.ops.aten.mean.out or not isinstance(target, torch.Tensor) or target.dtype != torch.float32:
        return out
    x = args[0]
    n = x.numel() // target.numel() if target.numel() else 0
    if n > 1:
        target.copy_(target * n * torch.tensor(1.0 / n, dtype=torch.float32))
    return out


FAULTS = (
    Fault("tanh_inplace_ulp", "float32 tanh_ (in-place) rounds each result 1 ulp toward zero (within the CPU tolerance)",
          "opinfo", 3, ("opinfo/tanh/float32/agree",), _tanh_inplace_ulp, dtype="float32", op="tanh"),
    Fault("mean_out_reciprocal", "float32 mean(out=) multiplies by 1/n instead of dividing by n (within the CPU "
          "tolerance)", "opinfo", 3, ("opinfo/mean/float32/agree",), _mean_out_reciprocal, dtype="float32", op="mean"),
)
