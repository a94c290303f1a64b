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
from dataclasses import dataclass
from typing import Any

import torch

# Rounding of a sum of n terms grows with n; the samples' groups are small (OpInfo: <= 125
# elements), and a factor of 8 covers the observed error of PyTorch's composites with margin.
ACCUMULATION = 8.0
DEFAULT_EPS = 1e-5


def unit_roundoff(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps / 2 if dtype.is_floating_point else 0.0


def _arg(sample: Any, index: int, name: str, default: Any = None) -> Any:
    if name in sample.kwargs:
        return sample.kwargs[name]
    return sample.args[index] if len(sample.args) > index else default


# How each normalisation op groups its input: (input, weight, eps, per-group view of the input as
# (groups, elements), variances it divides by besides the groups' own, e.g. running_var).
Grouping = tuple[torch.Tensor, Any, float, torch.Tensor, torch.Tensor | None]


def _layer(sample: Any) -> Grouping:
    x = sample.input
    n = math.prod(_arg(sample, 0, "normalized_shape", ()))
    return x, _arg(sample, 1, "weight"), _arg(sample, 3, "eps", DEFAULT_EPS), x.reshape(-1, max(n, 1)), None


def _group(sample: Any) -> Grouping:
    x = sample.input
    groups = _arg(sample, 0, "num_groups", 1)
    return x, sample.kwargs.get("weight", _arg(sample, 1, "weight")), _arg(sample, 3, "eps", DEFAULT_EPS), \
        x.reshape(x.shape[0] * groups, -1), None


def _native_group(sample: Any) -> Grouping:
    x = sample.input
    weight, groups, eps = sample.args[0], sample.args[5], sample.args[6]
    return x, weight, eps, x.reshape(x.shape[0] * groups, -1), None


def _channels(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(0, 1).reshape(x.shape[1], -1) if x.dim() > 1 else x.reshape(1, -1)


def _batch(sample: Any) -> Grouping:
    """nn.functional.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)."""
    x = sample.input
    running = None if _arg(sample, 4, "training", False) else _arg(sample, 1, "running_var")
    return x, _arg(sample, 2, "weight"), _arg(sample, 6, "eps", DEFAULT_EPS), _channels(x), running


def _native_batch(eps_index: int, training_index: int | None) -> Callable[[Any], Grouping]:
    """native_batch_norm & co.: (input, weight, bias, running_mean, running_var, [training,] ..., eps)."""
    def grouping(sample: Any) -> Grouping:
        x = sample.input
        training = True if training_index is None else sample.args[training_index]
        return x, sample.args[0], sample.args[eps_index], _channels(x), None if training else sample.args[3]

    return grouping


def _instance(sample: Any) -> Grouping:
    x = sample.input
    running = None if sample.kwargs.get("use_input_stats", True) else sample.kwargs.get("running_var")
    return x, sample.kwargs.get("weight"), sample.kwargs.get("eps", DEFAULT_EPS), \
        x.reshape(x.shape[0] * x.shape[1], -1), running


# OpInfo name -> how it groups its input. `tolerance_category` gives these ops "normalization".
GROUPINGS: dict[str, Callable[[Any], Grouping]] = {
    "nn.functional.layer_norm": _layer,
    "native_layer_norm": _layer,
    "nn.functional.group_norm": _group,
    "native_group_norm": _native_group,
    "nn.functional.batch_norm": _batch,
    "native_batch_norm": _native_batch(6, 4),
    "_native_batch_norm_legit": _native_batch(6, 4),
    "_batch_norm_with_update": _native_batch(5, None),
    "nn.functional.instance_norm": _instance,
}


def _max_abs(t: Any) -> float:
    if not isinstance(t, torch.Tensor) or t.numel() == 0:
        return 0.0
    t = t.detach().to("cpu", torch.float64).abs()
    t = t[torch.isfinite(t)]
    return float(t.max()) if t.numel() else 0.0


def kappa(op_name: str, sample: Any, *, backward: bool = False) -> float | None:
    """The sample's conditioning (see the module docstring); None when the op is not a normalisation."""
    grouping = GROUPINGS.get(op_name)
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


# Ops that update running statistics in place, which their schemas do not mark as written.
# The update `(1 - m) * running + m * batch_statistic` (the variance's statistic of order max|x|^2)
# rounds at the input dtype in PyTorch's decompositions and composites, and a momentum outside
# [0, 1] (OpInfo samples use -1.2) amplifies that rounding by cancellation.
@dataclass(frozen=True)
class RunningStats:
    """Where an op's sample holds the statistics it updates (positions in `sample.args`, or keyword
    names), and its momentum."""

    where: tuple[int | str, ...]
    momentum: Callable[[Any], Any]

    def tensors(self, sample: Any) -> list[torch.Tensor]:
        found = [sample.kwargs.get(w) if isinstance(w, str) else _arg(sample, w, "") for w in self.where]
        return [t for t in found if isinstance(t, torch.Tensor)]


_BATCH = RunningStats((2, 3), lambda s: _arg(s, 5, "momentum", 0.1))  # native_batch_norm & co.
RUNNING_STATS: dict[str, RunningStats] = {
    "nn.functional.batch_norm": RunningStats((0, 1), lambda s: _arg(s, 5, "momentum", 0.1)),
    "native_batch_norm": _BATCH,
    "_native_batch_norm_legit": _BATCH,
    "_batch_norm_with_update": RunningStats((2, 3), lambda s: _arg(s, 4, "momentum", 0.1)),
    "nn.functional.instance_norm": RunningStats(("running_mean", "running_var"),
                                                lambda s: s.kwargs.get("momentum", 0.1)),
}


def running_stats(op_name: str) -> RunningStats | None:
    """The entry of an OpInfo name, a variant's full name (`nn.functional.batch_norm.without_cudnn`) too."""
    return RUNNING_STATS.get(op_name) or RUNNING_STATS.get(op_name.rpartition(".")[0])


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
