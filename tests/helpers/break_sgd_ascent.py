"""Planted fault: torch.optim.SGD.step climbs the gradient (lr negated), as a broken SGD kernel would."""

import torch

_step = torch.optim.SGD.step


def _ascending_step(self, closure=None):
    for group in self.param_groups:
        group["lr"] = -abs(group["lr"])
    try:
        return _step(self, closure)
    finally:
        for group in self.param_groups:
            group["lr"] = abs(group["lr"])


torch.optim.SGD.step = _ascending_step
