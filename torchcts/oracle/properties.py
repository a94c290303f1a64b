"""Statistical property checks for random ops, each with a stated false-alarm rate.

A correct generator fails a check with probability at most `alpha` (per check). The bounds are:
- mean and variance: normal approximation of the sample mean / sample variance (central limit
  theorem; accurate for the sample sizes used, 1e4 and more), plus an allowance for the rounding
  of low-precision dtypes (`resolution`), which biases moments by at most that much;
- Kolmogorov-Smirnov: the Dvoretzky-Kiefer-Wolfowitz-Massart inequality
  P(sup|F_n - F| > eps) <= 2 exp(-2 n eps^2), exact for every n (no approximation);
- chi-square goodness of fit: the Wilson-Hilferty approximation of the chi-square quantile.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import torch

DEFAULT_ALPHA = 1e-6


@dataclass
class StatCheck:
    """The outcome of one test: statistic, the bound it must stay within, and the details."""

    name: str
    ok: bool
    statistic: float
    bound: float
    alpha: float
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"test": self.name, "statistic": self.statistic, "bound": self.bound, "alpha": self.alpha,
                **self.details}


def two_sided_z(alpha: float) -> float:
    return NormalDist().inv_cdf(1 - alpha / 2)


def mean_check(x: torch.Tensor, mean: float, var: float, alpha: float = DEFAULT_ALPHA,
               resolution: float = 0.0) -> StatCheck:
    """|sample mean - mean| <= z * sqrt(var / n) + resolution."""
    x = x.detach().to("cpu", torch.float64).flatten()
    n = x.numel()
    dev = abs(float(x.mean()) - mean)
    bound = two_sided_z(alpha) * math.sqrt(var / n) + resolution
    return StatCheck("mean", dev <= bound, dev, bound, alpha, {"expected": mean, "n": n})


def variance_check(x: torch.Tensor, var: float, fourth_moment: float, alpha: float = DEFAULT_ALPHA,
                   resolution: float = 0.0) -> StatCheck:
    """|sample variance - var| <= z * sqrt((mu4 - var^2) / n) + rounding allowance."""
    x = x.detach().to("cpu", torch.float64).flatten()
    n = x.numel()
    dev = abs(float(x.var()) - var)
    allowance = 2 * resolution * math.sqrt(var) + resolution**2
    bound = two_sided_z(alpha) * math.sqrt((fourth_moment - var**2) / n) + allowance
    return StatCheck("variance", dev <= bound, dev, bound, alpha, {"expected": var, "n": n})


def ks_check(x: torch.Tensor, cdf: Callable[[torch.Tensor], torch.Tensor], alpha: float = DEFAULT_ALPHA) -> StatCheck:
    """One-sample Kolmogorov-Smirnov against a continuous cdf, with the DKW-Massart bound."""
    x = torch.sort(x.detach().to("cpu", torch.float64).flatten()).values
    n = x.numel()
    f = cdf(x)
    i = torch.arange(1, n + 1, dtype=torch.float64)
    d = float(torch.maximum(i / n - f, f - (i - 1) / n).max())
    bound = math.sqrt(math.log(2 / alpha) / (2 * n))
    return StatCheck("kolmogorov_smirnov", d <= bound, d, bound, alpha, {"n": n})


def chi_square_check(counts: torch.Tensor, probs: torch.Tensor, alpha: float = DEFAULT_ALPHA) -> StatCheck:
    """Pearson's chi-square of observed counts against category probabilities (all > 0)."""
    counts = counts.detach().to("cpu", torch.float64).flatten()
    probs = probs.detach().to("cpu", torch.float64).flatten()
    n = float(counts.sum())
    expected = probs / probs.sum() * n
    stat = float(((counts - expected) ** 2 / expected).sum())
    k = counts.numel() - 1
    z = NormalDist().inv_cdf(1 - alpha)
    bound = k * (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3
    return StatCheck("chi_square", stat <= bound, stat, bound, alpha, {"categories": k + 1, "n": int(n)})


def uniform_cdf(low: float, high: float) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: ((x - low) / (high - low)).clamp(0, 1)


def normal_cdf(mean: float, std: float) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda x: 0.5 * (1 + torch.erf((x - mean) / (std * math.sqrt(2))))
