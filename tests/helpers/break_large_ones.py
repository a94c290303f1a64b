"""Planted fault: torch.ones loses the last element of large tensors."""

import torch

_ones = torch.ones


def _lossy_ones(*size, **kwargs):
    t = _ones(*size, **kwargs)
    if t.numel() > 1 << 24:
        t.view(-1)[-1] = 0
    return t


torch.ones = _lossy_ones
