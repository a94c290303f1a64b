"""Planted fault: an impossible allocation "succeeds" with a tiny tensor instead of raising."""

import math

import torch

_empty = torch.empty


def _lying_empty(*size, dtype=None, **kwargs):
    shape = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)) else size
    itemsize = (dtype or torch.get_default_dtype()).itemsize
    if math.prod(shape) * itemsize > 1 << 40:
        return _empty(1, dtype=dtype, **kwargs)
    return _empty(*size, dtype=dtype, **kwargs)


torch.empty = _lying_empty
