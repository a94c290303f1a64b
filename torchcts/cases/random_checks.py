"""Statistical and permutation checks of random ops, shared by the `rng` and `random_ops` suites.

Random ops have no CPU oracle (streams differ by design), so both suites judge draws by properties
with one false-alarm rate per check (ALPHA; the bounds are in oracle/properties.py), named in the
cases' oracle (STAT_ORACLE). Kept here so that neither suite imports the other.
"""

from __future__ import annotations

import torch

from torchcts.cases.context import CaseContext
from torchcts.cases.helpers import expect
from torchcts.oracle.properties import DEFAULT_ALPHA, StatCheck, mean_check, variance_check

__all__ = ["ALPHA", "STAT_ORACLE", "expect_moments", "expect_stat", "randperm_is_permutation"]

ALPHA = DEFAULT_ALPHA
STAT_ORACLE = f"property:stat(alpha={ALPHA:g})"


def expect_stat(check: StatCheck, what: str) -> None:
    """Fail the case with the test's statistic, bound and rate when a statistical check failed."""
    expect(check.ok, f"{what}: {check.name} test failed (false-alarm rate {check.alpha:g})", **check.to_json())


def _resolution(dtype: torch.dtype, scale: float) -> float:
    return float(torch.finfo(dtype).eps) * scale if dtype.is_floating_point else 0.0


def expect_moments(x: torch.Tensor, dtype: torch.dtype, mean: float, var: float, mu4: float, scale: float) -> None:
    """Mean and variance of the draws within their bounds, allowing for the rounding of `dtype` at `scale`."""
    res = _resolution(dtype, scale)
    expect_stat(mean_check(x, mean, var, ALPHA, res), "mean")
    expect_stat(variance_check(x, var, mu4, ALPHA, res), "variance")


def randperm_is_permutation(ctx: CaseContext, dtype: torch.dtype,
                            sizes: tuple[int, ...] = (0, 1, 2, 17, 1000, 30_000)) -> None:
    """randperm(n) of each size holds 0..n-1 once each, and is not the identity (n >= 256: 1/256!)."""
    for n in sizes:
        p = torch.randperm(n, dtype=dtype, device=ctx.device).cpu()
        ctx.describe(n=n)
        expect(p.dtype == dtype and p.shape == (n,), "randperm has the wrong dtype or length", n=n, got=str(p.dtype))
        values = p.to(torch.int64)
        expect(torch.equal(values.sort().values, torch.arange(n)), "randperm repeats or misses a value", n=n,
               unique=int(values.unique().numel()))
        if n >= 256:
            expect(not torch.equal(values, torch.arange(n)), "randperm returned the identity", n=n)
