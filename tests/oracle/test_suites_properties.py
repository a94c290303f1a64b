"""The statistical checks of oracle/properties.py accept correct samples and reject skewed ones."""

from __future__ import annotations

import torch

from torchcts.oracle.properties import (
    chi_square_check,
    ks_check,
    mean_check,
    normal_cdf,
    uniform_cdf,
    variance_check,
)

N = 100_000


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_uniform_accepted_and_skew_rejected() -> None:
    u = torch.rand(N, generator=_g(), dtype=torch.float64)
    assert mean_check(u, 0.5, 1 / 12).ok
    assert variance_check(u, 1 / 12, 1 / 80).ok
    assert ks_check(u, uniform_cdf(0, 1)).ok
    skewed = u**1.05
    assert not mean_check(skewed, 0.5, 1 / 12).ok
    assert not ks_check(skewed, uniform_cdf(0, 1)).ok
    assert not variance_check(u * 1.05, 1 / 12, 1 / 80).ok


def test_normal_and_chi_square() -> None:
    x = torch.randn(N, generator=_g(1), dtype=torch.float64)
    assert ks_check(x, normal_cdf(0, 1)).ok
    assert not ks_check(x + 0.05, normal_cdf(0, 1)).ok
    counts = torch.bincount(torch.randint(0, 10, (N,), generator=_g(2)), minlength=10)
    assert chi_square_check(counts, torch.ones(10)).ok
    skewed = counts.clone()
    skewed[0] += 1000  # 10% excess in one of ten categories
    check = chi_square_check(skewed, torch.ones(10))
    assert not check.ok and check.statistic > check.bound and check.alpha == 1e-6
