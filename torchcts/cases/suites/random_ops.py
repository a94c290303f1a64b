"""Level 3 random ops beyond shape: what does not depend on the random stream.

OpInfo checks a random op's output shape and dtype (and, here, that a seeded call repeats); the
`rng` suite checks the generators. Neither checks what a random op computes from its draws:
- deterministic parts: dropout keeps x / (1 - p) or writes 0 (exactly, per element), p = 0 and
  eval mode are the identity, p = 1 gives zeros, feature dropout drops whole channels, rrelu's
  eval slope is (lower + upper) / 2 and its training slope lies in [lower, upper];
  randperm is a permutation (no repeat, none missing) at every size and dtype; randint and
  random_ reach both ends of a range that spans the whole dtype and never leave it;
- distributions: the moments (mean, variance; Kolmogorov-Smirnov where the cdf is closed-form) of
  exponential_, geometric_, log_normal_, cauchy_, poisson, normal with tensor mean/std, bernoulli
  with per-element p, and dropout's drop rate. Each check has a false-alarm rate of ALPHA = 1e-6
  for a correct backend (bounds in torchcts/oracle/properties.py), stated in the case's oracle.

Draws use the default generator seeded with torch.manual_seed (the manifest's seed plus a salt),
so a run repeats; no case needs torch.Generator(device=...).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from torchcts.cases.api import (
    ALPHA,
    FLOATING,
    INTEGRAL,
    STAT_ORACLE,
    CaseContext,
    CaseSet,
    chi_square_check,
    cpu_reference,
    expect,
    expect_moments,
    expect_stat,
    ks_check,
    mean_check,
    randperm_is_permutation,
)

SUITE = CaseSet("random_ops")
cases = SUITE.cases
LEVEL = 3
N = 100_000
REQUIRES = ("rng",)
DROPOUT_P = {"p0.1": 0.1, "p0.5": 0.5, "p0.8": 0.8}


def _seed(ctx: CaseContext, salt: int) -> None:
    torch.manual_seed(ctx.seed + salt)


def _positive(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Inputs without zeros, so a zero in a dropout output can only be a dropped element."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, generator=g) + 0.5
    return torch.where(torch.rand(n, generator=g) < 0.5, -x, x).to(dtype)


@SUITE.case("dropout/scaling", level=LEVEL, dtypes=FLOATING, requires=REQUIRES, oracle=STAT_ORACLE,
            ops=("nn.functional.dropout", "aten::native_dropout", "aten::dropout"),
            params={k: {"p": p} for k, p in DROPOUT_P.items()})
def dropout_scaling(ctx: CaseContext, dtype: torch.dtype, p: float) -> None:
    """Every element is 0 or x / (1 - p); the share of zeros is p (mean test)."""
    x = _positive(N, dtype, ctx.seed)
    _seed(ctx, 1)
    y = F.dropout(x.to(ctx.device), p, training=True).cpu()
    expect(y.dtype == dtype and y.shape == x.shape, "dropout changed the dtype or shape", got=str(y.dtype))
    kept = y != 0
    ctx.describe(p=p, kept=int(kept.sum()))
    ctx.assert_close(y[kept], (x.double() / (1 - p)).to(dtype)[kept], category="reduction")
    expect_stat(mean_check((~kept).double(), p, p * (1 - p), ALPHA), "share of dropped elements")


@SUITE.case("dropout/identity", level=LEVEL, dtypes=FLOATING, requires=REQUIRES, oracle="cpu",
            ops=("nn.functional.dropout", "aten::native_dropout", "aten::dropout", "aten::feature_dropout"))
def dropout_identity(ctx: CaseContext, dtype: torch.dtype) -> None:
    """p = 0 and eval mode return x unchanged; p = 1 returns zeros (no division by zero)."""
    x = _positive(4096, dtype, ctx.seed)
    d = x.to(ctx.device)
    _seed(ctx, 2)
    checks = {
        "p=0": F.dropout(d, 0.0, training=True),
        "eval": F.dropout(d, 0.5, training=False),
        "module_eval": torch.nn.Dropout(0.3).eval()(d),
        "dropout2d_eval": F.dropout2d(d.reshape(16, 16, 16), 0.5, training=False).reshape(-1),
        "alpha_dropout_eval": F.alpha_dropout(d, 0.5, training=False),
    }
    for what, got in checks.items():
        ctx.describe(check=what)
        ctx.assert_close(got.cpu(), x)
    ctx.describe(check="p=1")
    ctx.assert_close(F.dropout(d, 1.0, training=True).cpu(), torch.zeros_like(x))
    ctx.info.pop("check", None)


@SUITE.case("dropout/channels", level=LEVEL, dtypes=FLOATING, requires=REQUIRES, oracle=STAT_ORACLE,
            ops=("nn.functional.dropout2d", "aten::feature_dropout", "aten::dropout2d"))
def dropout_channels(ctx: CaseContext, dtype: torch.dtype) -> None:
    """dropout2d zeroes whole (n, c) planes or scales them all by 1 / (1 - p)."""
    p = 0.3
    x = _positive(256 * 64 * 9, dtype, ctx.seed).reshape(256, 64, 3, 3)
    _seed(ctx, 3)
    y = F.dropout2d(x.to(ctx.device), p, training=True).cpu()
    dropped = (y == 0).flatten(2)
    whole = dropped.all(-1) | (~dropped).all(-1)
    expect(bool(whole.all()), "dropout2d dropped part of a channel", mixed_planes=int((~whole).sum()))
    kept = ~dropped.all(-1)
    ctx.assert_close(y[kept], (x.double() / (1 - p)).to(dtype)[kept], category="reduction")
    expect_stat(mean_check((~kept).double(), p, p * (1 - p), ALPHA), "share of dropped channels")


@SUITE.case("rrelu", level=LEVEL, dtypes=FLOATING, requires=REQUIRES, oracle="cpu+property:range",
            ops=("nn.functional.rrelu", "aten::rrelu_with_noise", "aten::rrelu"))
def rrelu(ctx: CaseContext, dtype: torch.dtype) -> None:
    """eval: slope (lower + upper) / 2, as on CPU; training: each negative slope in [lower, upper]."""
    lower, upper = 0.1, 0.3
    x = _positive(20_000, dtype, ctx.seed)
    expected = cpu_reference(ctx, lambda: F.rrelu(x, lower, upper, training=False), f"rrelu in {dtype}")
    ctx.assert_close(F.rrelu(x.to(ctx.device), lower, upper, training=False).cpu(), expected)
    cpu_reference(ctx, lambda: F.rrelu(x[:8], lower, upper, training=True), f"rrelu training in {dtype}")
    _seed(ctx, 4)
    y = F.rrelu(x.to(ctx.device), lower, upper, training=True).cpu().double()
    xd = x.double()
    pos = xd > 0
    ctx.assert_close(y[pos], xd[pos])
    slope = y[~pos] / xd[~pos]
    tol = 2 * float(torch.finfo(dtype).eps)
    expect(bool(((slope >= lower - tol) & (slope <= upper + tol)).all()), "rrelu slope outside [lower, upper]",
           min=float(slope.min()), max=float(slope.max()))
    expect(float(slope.max() - slope.min()) > (upper - lower) / 2, "rrelu training slopes are not random",
           min=float(slope.min()), max=float(slope.max()))


# dtype -> the largest n whose permutation the dtype holds exactly
RANDPERM_DTYPES = {"int64": 300_000, "int32": 300_000, "int16": 32_767, "uint8": 256, "int8": 128,
                   "float32": 300_000, "float64": 300_000, "float16": 2048, "bfloat16": 256}


@SUITE.case("randperm", level=LEVEL, dtypes=tuple(RANDPERM_DTYPES), requires=REQUIRES, oracle="property:permutation",
            ops=("aten::randperm",))
def randperm(ctx: CaseContext, dtype: torch.dtype) -> None:
    """A permutation of 0..n-1 (each value once) for sizes around the kernels' thresholds."""
    top = RANDPERM_DTYPES[str(dtype).removeprefix("torch.")]
    _seed(ctx, 5)
    sizes = sorted({1, 2, 3, 255, 256, 2047, 2048, 2049, 65_537, top} & set(range(top + 1)))
    randperm_is_permutation(ctx, dtype, tuple(sizes))


@SUITE.case("randint/full_range", level=LEVEL, dtypes=INTEGRAL, requires=REQUIRES, oracle=STAT_ORACLE,
            ops=("aten::randint", "aten::random_"))
def randint_full_range(ctx: CaseContext, dtype: torch.dtype) -> None:
    """randint over the dtype's whole range: never outside, uniform over 16 bins (chi-square),
    and for 8-bit dtypes both ends drawn (a miss has probability (255/256)^N, about 1e-170)."""
    info = torch.iinfo(dtype)
    high = info.max if dtype == torch.int64 else info.max + 1  # int64 cannot hold max + 1
    _seed(ctx, 6)
    got = torch.randint(info.min, high, (N,), dtype=dtype, device=ctx.device).cpu()
    expect(got.dtype == dtype, "randint has the wrong dtype", got=str(got.dtype))
    wide = got.to(torch.float64) if dtype == torch.int64 else got.to(torch.int64)
    expect(bool(((wide >= info.min) & (wide < high)).all()), "randint left [low, high)",
           min=float(wide.min()), max=float(wide.max()))
    bins = ((wide.double() - info.min) / (float(high) - info.min) * 16).floor().clamp(0, 15).long()
    expect_stat(chi_square_check(torch.bincount(bins, minlength=16), torch.ones(16), ALPHA), "uniformity")
    if info.bits == 8:
        expect(int(wide.min()) == info.min and int(wide.max()) == info.max, "randint never drew an end of the range",
               min=int(wide.min()), max=int(wide.max()))


def _random_top(dtype: torch.dtype) -> float:
    """random_()'s upper end: 2^mantissa digits for floats, max for integers, 1 for bool."""
    if dtype == torch.bool:
        return 1
    if dtype.is_floating_point:
        return float(2 ** (round(-math.log2(torch.finfo(dtype).eps)) + 1))
    return float(torch.iinfo(dtype).max)


@SUITE.case("random_/range", level=LEVEL, dtypes=("bool", *INTEGRAL, *FLOATING), requires=REQUIRES,
            oracle=STAT_ORACLE, ops=("aten::random_",))
def random_range(ctx: CaseContext, dtype: torch.dtype) -> None:
    """random_() stays in [0, top] (integral values); random_(3, 10) is uniform on 3..9."""
    _seed(ctx, 7)
    got = torch.empty(N, dtype=dtype, device=ctx.device).random_().cpu().double()
    top = _random_top(dtype)
    expect(bool(((got >= 0) & (got <= top) & (got == got.round())).all()), "random_() left [0, top]", top=top,
           min=float(got.min()), max=float(got.max()))
    if dtype == torch.bool:
        return
    small = torch.empty(N, dtype=dtype, device=ctx.device).random_(3, 10).cpu().long()
    expect(bool(((small >= 3) & (small < 10)).all()), "random_(3, 10) left [3, 10)")
    expect_stat(chi_square_check(torch.bincount(small - 3, minlength=7), torch.ones(7), ALPHA), "uniformity of random_(3, 10)")


def _exponential(d: torch.device, dt: torch.dtype) -> torch.Tensor:
    return torch.empty(N, dtype=dt, device=d).exponential_(2.0)


def _geometric(d: torch.device, dt: torch.dtype) -> torch.Tensor:
    return torch.empty(N, dtype=dt, device=d).geometric_(0.3)


def _log_normal(d: torch.device, dt: torch.dtype) -> torch.Tensor:
    return torch.empty(N, dtype=dt, device=d).log_normal_(0.5, 0.4)


def _cauchy(d: torch.device, dt: torch.dtype) -> torch.Tensor:
    return torch.empty(N, dtype=dt, device=d).cauchy_(1.0, 2.0)


def _poisson(d: torch.device, dt: torch.dtype) -> torch.Tensor:
    return torch.poisson(torch.full((N,), 3.5, dtype=dt, device=d))


def _normal_tensor(d: torch.device, dt: torch.dtype) -> torch.Tensor:
    mean, std = _normal_params(dt)
    return (torch.normal(mean.to(d), std.to(d)).cpu().double() - mean.double()) / std.double()


def _normal_params(dt: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    i = torch.arange(N, dtype=torch.float64)
    return (i % 7 - 3).to(dt), (1 + i % 3).to(dt)


def _bernoulli_p(d: torch.device, dt: torch.dtype) -> torch.Tensor:
    return torch.bernoulli(_bernoulli_probs(dt).to(d))


def _bernoulli_probs(dt: torch.dtype) -> torch.Tensor:
    return (torch.arange(N, dtype=torch.float64) % 10 / 10 + 0.05).to(dt)


def _check_moments(kind: str, x: torch.Tensor, dtype: torch.dtype) -> None:
    x = x.cpu().double()
    # cauchy_'s heavy tail overflows half precision: inf is a legitimate draw there
    expect(kind == "cauchy_" or bool(torch.isfinite(x).all()), f"{kind} produced non-finite values")
    if kind == "exponential_":
        expect(bool((x >= 0).all()), "exponential_ produced negative values", min=float(x.min()))
        expect_moments(x, dtype, 0.5, 0.25, 9 / 16, 5.0)
    elif kind == "geometric_":
        expect(bool(((x >= 1) & (x == x.round())).all()), "geometric_ values must be integers >= 1", min=float(x.min()))
        p = 0.3
        var = (1 - p) / p**2
        expect_moments(x, dtype, 1 / p, var, var**2 * (9 + p * p / (1 - p)), 0.0)
    elif kind == "log_normal_":
        expect(bool((x > 0).all()), "log_normal_ values must be positive", min=float(x.min()))
        expect_moments(x.log(), dtype, 0.5, 0.16, 3 * 0.16**2, 5.0)
    elif kind == "cauchy_":
        if dtype in (torch.float32, torch.float64):
            expect_stat(ks_check(x, lambda t: 0.5 + torch.atan((t - 1.0) / 2.0) / math.pi, ALPHA), "distribution")
        else:  # half precision: only the median, through the share of draws below it
            expect_stat(mean_check((x < 1.0).double(), 0.5, 0.25, ALPHA, 0.01), "median")
    elif kind == "poisson":
        expect(bool(((x >= 0) & (x == x.round())).all()), "poisson values must be integers >= 0", min=float(x.min()))
        expect_moments(x, dtype, 3.5, 3.5, 3.5 * (1 + 3 * 3.5), 0.0)
    elif kind == "normal_tensor":
        expect_moments(x, dtype, 0.0, 1.0, 3.0, 4.0)
    elif kind == "bernoulli_p":
        probs = _bernoulli_probs(dtype).double()
        expect(bool(((x == 0) | (x == 1)).all()), "bernoulli values must be 0 or 1")
        expect_stat(mean_check(x - probs, 0.0, float((probs * (1 - probs)).mean()), ALPHA), "mean")


DISTRIBUTIONS: dict[str, tuple[Callable[[torch.device, torch.dtype], torch.Tensor], tuple[str, ...]]] = {
    "exponential_": (_exponential, ("aten::exponential_",)),
    "geometric_": (_geometric, ("aten::geometric_",)),
    "log_normal_": (_log_normal, ("aten::log_normal_",)),
    "cauchy_": (_cauchy, ("aten::cauchy_",)),
    "poisson": (_poisson, ("aten::poisson",)),
    "normal_tensor": (_normal_tensor, ("aten::normal.Tensor_Tensor",)),
    "bernoulli_p": (_bernoulli_p, ("aten::bernoulli",)),
}


def distribution(ctx: CaseContext, dtype: torch.dtype, kind: str) -> None:
    draw, _ = DISTRIBUTIONS[kind]
    _seed(ctx, 8)
    cpu_reference(ctx, lambda: draw(torch.device("cpu"), dtype), f"{kind} in {dtype}")
    x = draw(ctx.device, dtype)
    if kind != "normal_tensor":
        expect(x.device.type == ctx.device_type, f"{kind} result is not on the device", got=str(x.device))
        expect(x.dtype == dtype, f"{kind} returned the wrong dtype", got=str(x.dtype))
    _check_moments(kind, x, dtype)


for _kind, (_draw, _ops) in DISTRIBUTIONS.items():
    SUITE.case(f"distribution/{_kind}", level=LEVEL, dtypes=FLOATING, requires=REQUIRES, oracle=STAT_ORACLE,
               ops=_ops, params={"moments": {"kind": _kind}})(distribution)
