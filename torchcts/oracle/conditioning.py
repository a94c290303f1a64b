"""The conditioning of a normalisation sample: how much absolute error the op cannot avoid there.

Normalisation (layer, group, batch, instance norm) centres each group of elements, `x - mean`,
and divides by `sqrt(var + eps)`. Computed at unit roundoff `u`, the centring loses about
`u * max|x|` of absolute accuracy (the mean's rounding), and the division multiplies that by
`1 / sqrt(var + eps)`: a group of nearly equal values (var ~ 0) turns a rounding of 1e-6 into
3e-4 with eps = 1e-5, although both results are right. PyTorch lets a kernel accumulate in the
input's own dtype (its composite kernels for backends without a normalisation kernel do), so `u`
is the unit roundoff of the input dtype, not of float32.

`conditioned_atol` gives the absolute tolerance that accounts for this:
`ACCUMULATION * u(dtype) * kappa * max(1, max|weight|)`, kappa being the largest
`max|x_g| / sqrt(var_g + eps)` over the sample's normalised groups (and, for the gradient, kappa
times the largest `1 / sqrt(var_g + eps)`, since the backward divides by the deviation again).
The tolerance table's relative tolerance still applies; this only raises the absolute floor,
and only as far as the sample's own conditioning demands. docs/sim.md shows it passing every
OpInfo sample of PyTorch's own decompositions (`torchcts.sim.decomp`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchcts.oracle.opfacts import FACTS
from torchcts.oracle.opfacts.normalization import Grouping, RunningStats

# Rounding of a sum of n terms grows with n; the samples' groups are small (OpInfo: <= 125
# elements), and a factor of 8 covers the observed error of PyTorch's composites with margin.
ACCUMULATION = 8.0


def unit_roundoff(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps / 2 if dtype.is_floating_point else 0.0


# OpInfo name -> how it groups its input (op facts of kind `normalization`, oracle/opfacts/normalization.py);
# `tolerance_category` gives these ops "normalization".
GROUPINGS: dict[str, Callable[[Any], Grouping]] = FACTS.selectors("normalization")


def _max_abs(t: Any) -> float:
    if not isinstance(t, torch.Tensor) or t.numel() == 0:
        return 0.0
    t = t.detach().to("cpu", torch.float64).abs()
    t = t[torch.isfinite(t)]
    return float(t.max()) if t.numel() else 0.0


def kappa(op_name: str, sample: Any, *, backward: bool = False) -> float | None:
    """The sample's conditioning (see the module docstring); None when the op is not a normalisation."""
    grouping: Callable[[Any], Grouping] | None = FACTS.get("normalization", op_name)
    if grouping is None:
        return None
    try:
        x, weight, eps, groups, running_var = grouping(sample)
    except (IndexError, RuntimeError, TypeError, ValueError):
        return None  # an argument layout this table does not know: no extra tolerance
    g = groups.detach().to("cpu", torch.float64)
    if g.numel() == 0:
        return 0.0
    spread = g.var(dim=1, unbiased=False) if g.shape[1] > 1 else torch.zeros(g.shape[0], dtype=torch.float64)
    variances = [spread]
    if isinstance(running_var, torch.Tensor) and running_var.numel():
        variances.append(running_var.detach().to("cpu", torch.float64).reshape(-1))
    # Groups with var + eps <= 0 give NaN or inf on every correct kernel: nothing to widen there.
    denominators = [d[d > 0] for d in (v + float(eps) for v in variances)]
    rstd = max((float((1 / d.sqrt()).max()) for d in denominators if d.numel()), default=0.0)
    k = _max_abs(x) * rstd
    if backward:
        k *= max(1.0, rstd)
    return k * max(1.0, _max_abs(weight))


def conditioned_atol(op_name: str, sample: Any, dtype: torch.dtype, *, backward: bool = False) -> float:
    """The absolute error a correct kernel may make on this sample (0.0 when nothing is known)."""
    k = kappa(op_name, sample, backward=backward)
    if k is None or not math.isfinite(k):
        return 0.0
    return ACCUMULATION * unit_roundoff(dtype) * k


def running_stats(op_name: str) -> RunningStats | None:
    """Where an op's sample holds the running statistics it updates in place, which its schema does
    not mark as written (op facts of kind `running_stats`); for an OpInfo name, a variant's full
    name (`nn.functional.batch_norm.without_cudnn`) too."""
    found: RunningStats | None = FACTS.get("running_stats", op_name) or FACTS.get("running_stats", op_name.rpartition(".")[0])
    return found


def running_stats_atol(op_name: str, sample: Any) -> float:
    """The absolute error a correct kernel may make in the running statistics it updates (the
    arguments after the call, cases/opinfo/effects.py), at the input's dtype; 0.0 for other ops."""
    entry = running_stats(op_name)
    if entry is None or not isinstance(sample.input, torch.Tensor):
        return 0.0
    try:
        m = float(entry.momentum(sample) or 0.0)
    except (IndexError, TypeError, ValueError):
        return 0.0
    running = max((_max_abs(t) for t in entry.tensors(sample)), default=0.0)
    x = _max_abs(sample.input)
    bound = abs(1 - m) * running + abs(m) * max(x, x * x)
    return ACCUMULATION * unit_roundoff(sample.input.dtype) * bound if math.isfinite(bound) else 0.0
