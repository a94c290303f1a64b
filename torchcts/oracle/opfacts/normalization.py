"""How a normalisation op's sample is laid out (kinds `normalization`, `running_stats`): the op
facts oracle/conditioning.py reads to widen the absolute tolerance by the sample's conditioning.

`normalization`'s value groups the sample's input as the op normalises it (input, weight, eps, the
groups as rows, a running variance it divides by); `running_stats`'s says where the sample holds the
running statistics the op updates in place, and its momentum. Both read OpInfo's sample argument
layout of the op, so a new normalisation op is one entry of each here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from torchcts.oracle.opfacts.model import Fact

DEFAULT_EPS = 1e-5


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


_NORM = ("normalises groups of elements, x - mean over sqrt(var + eps): a group of nearly equal values turns a "
         "rounding of the mean into a large absolute error a right kernel makes too")
_SAMPLES = "OpInfo's sample generator of the op (its argument layout), common_methods_invocations.py"
_RUNNING = ("updates running statistics in place, which its schema does not mark as written: "
            "(1 - m) * running + m * batch statistic rounds at the input dtype, and a momentum outside [0, 1] "
            "(OpInfo's samples use -1.2) amplifies the rounding")
_BATCH = RunningStats((2, 3), lambda s: _arg(s, 5, "momentum", 0.1))  # native_batch_norm & co.

FACTS: tuple[Fact, ...] = (
    *(Fact("normalization", (op,), _NORM, _SAMPLES, grouping) for op, grouping in (
        ("nn.functional.layer_norm", _layer),
        ("native_layer_norm", _layer),
        ("nn.functional.group_norm", _group),
        ("native_group_norm", _native_group),
        ("nn.functional.batch_norm", _batch),
        ("native_batch_norm", _native_batch(6, 4)),
        ("_native_batch_norm_legit", _native_batch(6, 4)),
        ("_batch_norm_with_update", _native_batch(5, None)),
        ("nn.functional.instance_norm", _instance),
    )),
    *(Fact("running_stats", (op,), _RUNNING, _SAMPLES, stats) for op, stats in (
        ("nn.functional.batch_norm", RunningStats((0, 1), lambda s: _arg(s, 5, "momentum", 0.1))),
        ("native_batch_norm", _BATCH),
        ("_native_batch_norm_legit", _BATCH),
        ("_batch_norm_with_update", RunningStats((2, 3), lambda s: _arg(s, 4, "momentum", 0.1))),
        ("nn.functional.instance_norm", RunningStats(("running_mean", "running_var"),
                                                     lambda s: s.kwargs.get("momentum", 0.1))),
    )),
)
