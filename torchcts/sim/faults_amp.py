"""The sim's planted automatic-mixed-precision faults, caught by the `amp` suite (issue 32).

One in GradScaler's inf check (a device kernel), one in the backend's own autocast lists
(sim/autocast.py): PyTorch gives a PrivateUse1 backend no lists, so a backend that copies them
can misfile an op. Joined to the registry in faults.py.
"""

from __future__ import annotations

import torch

from torchcts.sim import autocast
from torchcts.sim.fault_model import Fault, on_op


@on_op("_amp_foreach_non_finite_check_and_unscale_")
def _amp_check_ignores_nan(func, args, kwargs, call):
    """The non-finite check tests isinf only: a NaN gradient leaves found_inf at 0 (the step runs)."""
    grads, found_inf = args[0], args[1]
    before = found_inf.clone()
    out = call(*args, **kwargs)
    if not any(bool(torch.isinf(g).any()) for g in grads):
        found_inf.copy_(before)
    return out


def _mse_loss_in_lower_list() -> None:
    """The backend's autocast lists file mse_loss with the matmuls: it runs in the autocast dtype."""
    autocast.MOVED["mse_loss"] = "lower"


FAULTS = (
    Fault("amp_check_ignores_nan", "GradScaler's non-finite check ignores NaN gradients: the step is not skipped",
          "amp", 6, ("amp/gradscaler/skip_nonfinite/nan/*",), _amp_check_ignores_nan),
    Fault("autocast_mse_loss_lower", "autocast runs mse_loss in the low dtype (the backend's lists misfile it)",
          "amp", 4, ("amp/autocast/float32/mse_loss/*",), _mse_loss_in_lower_list, op="mse_loss"),
)
