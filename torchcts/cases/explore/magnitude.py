"""Magnitude near zero, an exploration axis for the functions whose point is accuracy there
(issue 39 item 3): log1p, expm1, sinc and their kin exist because log(1 + x) and exp(x) - 1 lose
every digit for tiny x. A naive kernel is wrong by 100% at x = 1e-10, yet within any atol of the
right answer, so only the float64 truth can tell (oracle/truth.py; exploration's forward checks
judge by it, cases/explore/run.py). One explored sample in NEAR_ZERO_EVERY of these ops gets half of
its input's elements replaced by tiny normal values, log-uniform from 1e-3 down to the dtype's
smallest normal, both signs, drawn from the sample's own seed (`f"{case_id}#{index}#tiny"`), so the
other axes' draws are unchanged.
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from torchcts.cases.opinfo.samples import rebuilt

NEAR_ZERO_EVERY = 2
SMALLEST_EXPONENT = -3  # the largest tiny value is 10^-3


def near_zero(sample: Any, case_id: str, index: int) -> tuple[Any, bool]:
    """The sample of an op accurate near zero (op facts of kind `near_zero`: values.Policy.near_zero)
    with tiny normal values written into half of its floating input's elements, and whether it was
    rewritten."""
    x = sample.input
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.layout != torch.strided or x.numel() == 0:
        return sample, False
    rng = random.Random(f"{case_id}#{index}#tiny")
    if rng.randrange(NEAR_ZERO_EVERY):
        return sample, False
    low = math.log10(torch.finfo(x.dtype).tiny)
    out = x.detach().clone().contiguous()
    flat = out.view(-1)
    for i in range(0, flat.numel(), 2):
        flat[i] = rng.choice((1.0, -1.0)) * 10.0 ** rng.uniform(low, SMALLEST_EXPONENT)
    return rebuilt(sample, out.requires_grad_(x.requires_grad), sample.args, sample.kwargs), True
