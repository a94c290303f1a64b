"""Random number generation (capability `rng`), level 3.

Random ops have no CPU oracle (streams differ by design); they are checked by properties:
- reproducibility: torch.manual_seed and a torch.Generator(device=...) reseeded give identical
  draws (generator objects only in `generator/*`: the other cases draw from the default
  generator); get_state/set_state replays; consecutive draws differ; other seeds give other draws;
- ranges: rand in [0, 1), randint in [low, high), uniform_ in [from, to], bernoulli in {0, 1}
  (p = 0 and p = 1 exact), multinomial never draws a zero-probability category and without
  replacement never repeats, randperm is a permutation;
- distributions: mean and variance tests, Kolmogorov-Smirnov (float32/float64) and chi-square,
  each with a false-alarm rate of ALPHA = 1e-6 per check for a correct generator (bounds in
  torchcts/oracle/properties.py); the oracle name states it: `property:stat(alpha=1e-06)`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

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
    normal_cdf,
    randperm_is_permutation,
    uniform_cdf,
)

SUITE = CaseSet("rng")
cases = SUITE.cases
N = 100_000
REQUIRES = ("rng",)
PROBS = (0.1, 0.2, 0.3, 0.4, 0.0)

Draw = Callable[[torch.device, torch.dtype, "torch.Generator | None", int], torch.Tensor]

# name -> (draw(device, dtype, generator, n), dtypes, aten ops)
DRAWS: dict[str, tuple[Draw, tuple[str, ...], tuple[str, ...]]] = {
    "rand": (lambda d, dt, g, n: torch.rand(n, dtype=dt, device=d, generator=g), FLOATING, ("aten::rand",)),
    "randn": (lambda d, dt, g, n: torch.randn(n, dtype=dt, device=d, generator=g), FLOATING, ("aten::randn",)),
    "randint": (lambda d, dt, g, n: torch.randint(2, 12, (n,), dtype=dt, device=d, generator=g),
                INTEGRAL + ("float32", "float64"), ("aten::randint.low",)),
    "bernoulli": (lambda d, dt, g, n: torch.bernoulli(torch.full((n,), 0.3, dtype=dt, device=d), generator=g),
                  FLOATING, ("aten::bernoulli",)),
    "multinomial": (lambda d, dt, g, n: torch.multinomial(torch.tensor(PROBS, dtype=dt, device=d), n,
                                                          replacement=True, generator=g),
                    FLOATING, ("aten::multinomial",)),
    "randperm": (lambda d, dt, g, n: torch.randperm(min(n, 30_000), dtype=dt, device=d, generator=g),
                 ("int64", "int32", "float32"), ("aten::randperm",)),
    "normal_": (lambda d, dt, g, n: torch.empty(n, dtype=dt, device=d).normal_(2.0, 3.0, generator=g),
                FLOATING, ("aten::normal_",)),
    "uniform_": (lambda d, dt, g, n: torch.empty(n, dtype=dt, device=d).uniform_(-2.0, 5.0, generator=g),
                 FLOATING, ("aten::uniform_",)),
}


def _draw(ctx: CaseContext, fn: str, dtype: torch.dtype, g: torch.Generator | None = None, n: int = 4096) -> torch.Tensor:
    """A draw on the device, brought to CPU; not_applicable when CPU has no kernel for the dtype."""
    cpu_reference(ctx, lambda: DRAWS[fn][0](torch.device("cpu"), dtype, None, 8), f"{fn} in {dtype}")
    out = DRAWS[fn][0](ctx.device, dtype, g, n)
    expect(out.device.type == ctx.device_type, f"{fn} result is not on the device", got=str(out.device))
    return out.cpu()


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a, b)


def _register(family: str, body: Callable[[CaseContext, torch.dtype, str], None], oracle: str) -> None:
    for fn, (_, dtypes, ops) in DRAWS.items():
        def run(ctx: CaseContext, dtype: torch.dtype, _fn: str = fn) -> None:
            body(ctx, dtype, _fn)

        SUITE.family(f"{family}/{fn}", qualname=f"{family}_{fn}",
                     level=3, dtypes=dtypes, ops=ops, requires=REQUIRES, oracle=oracle)(run)


def _manual_seed(ctx: CaseContext, dtype: torch.dtype, fn: str) -> None:
    seed = 1234 + ctx.seed
    torch.manual_seed(seed)
    a = _draw(ctx, fn, dtype)
    b = _draw(ctx, fn, dtype)
    expect(not _same(a, b), "two consecutive draws are identical")
    torch.manual_seed(seed)
    expect(_same(_draw(ctx, fn, dtype), a), "torch.manual_seed did not make the draw reproducible")
    expect(_same(_draw(ctx, fn, dtype), b), "the second draw after reseeding differs")
    torch.manual_seed(seed + 1)
    expect(not _same(_draw(ctx, fn, dtype), a), "a different seed gives the same draw")
    torch.manual_seed(ctx.seed)


def _generator(ctx: CaseContext, dtype: torch.dtype, fn: str) -> None:
    g = torch.Generator(device=ctx.device)
    expect(g.device.type == ctx.device_type, "torch.Generator(device=...) is on the wrong device", got=str(g.device))
    g.manual_seed(99 + ctx.seed)
    a = _draw(ctx, fn, dtype, g)
    state = g.get_state()
    b = _draw(ctx, fn, dtype, g)
    expect(not _same(a, b), "two consecutive draws from one generator are identical")
    g.manual_seed(99 + ctx.seed)
    torch.manual_seed(7)
    _draw(ctx, fn, dtype)  # the default generator must not disturb g
    expect(_same(_draw(ctx, fn, dtype, g), a), "reseeding the generator did not reproduce the draw")
    g.set_state(state)
    expect(_same(_draw(ctx, fn, dtype, g), b), "set_state(get_state()) did not replay the stream")
    other = torch.Generator(device=ctx.device)
    other.manual_seed(100 + ctx.seed)
    expect(not _same(_draw(ctx, fn, dtype, other), a), "generators with different seeds give the same draw")


def _uniform_moments(x: torch.Tensor, dtype: torch.dtype, lo: float, hi: float) -> None:
    w = hi - lo
    expect_moments(x, dtype, (lo + hi) / 2, w * w / 12, w**4 / 80, max(abs(lo), abs(hi)))
    if dtype in (torch.float32, torch.float64):
        expect_stat(ks_check(x, uniform_cdf(lo, hi), ALPHA), "distribution")


def _distribution(ctx: CaseContext, dtype: torch.dtype, fn: str) -> None:
    """Draws from the device's default generator, seeded by torch.manual_seed: a backend without
    device generator objects still has its distributions tested (`generator/*` tests the objects)."""
    torch.manual_seed(2024 + ctx.seed)
    try:
        _check_distribution(ctx, dtype, fn)
    finally:
        torch.manual_seed(ctx.seed)


def _check_distribution(ctx: CaseContext, dtype: torch.dtype, fn: str) -> None:
    x = _draw(ctx, fn, dtype, n=N)
    want = torch.int64 if fn == "multinomial" else dtype  # multinomial returns indices
    expect(x.dtype == want, f"{fn} returned the wrong dtype", got=str(x.dtype), expected=str(want))
    xf = x.to(torch.float64)
    if fn == "rand":
        expect(bool(((xf >= 0) & (xf < 1)).all()), "rand must lie in [0, 1)", min=float(xf.min()), max=float(xf.max()))
        _uniform_moments(xf, dtype, 0.0, 1.0)
    elif fn == "uniform_":
        expect(bool(((xf >= -2) & (xf <= 5)).all()), "uniform_(-2, 5) out of range", min=float(xf.min()), max=float(xf.max()))
        _uniform_moments(xf, dtype, -2.0, 5.0)
    elif fn in ("randn", "normal_"):
        mean, std = (0.0, 1.0) if fn == "randn" else (2.0, 3.0)
        expect(bool(torch.isfinite(xf).all()), f"{fn} produced non-finite values")
        expect_moments(xf, dtype, mean, std**2, 3 * std**4, abs(mean) + 3 * std)
        if dtype in (torch.float32, torch.float64):
            expect_stat(ks_check(xf, normal_cdf(mean, std), ALPHA), "distribution")
    elif fn == "randint":
        expect(bool(((xf >= 2) & (xf < 12) & (xf == xf.round())).all()), "randint(2, 12) out of range or not integral",
               min=float(xf.min()), max=float(xf.max()))
        expect_stat(chi_square_check(torch.bincount(x.long() - 2, minlength=10), torch.ones(10), ALPHA), "distribution")
    elif fn == "bernoulli":
        expect(bool(((xf == 0) | (xf == 1)).all()), "bernoulli values must be 0 or 1")
        expect_moments(xf, dtype, 0.3, 0.21, 0.3 * 0.7 * (0.7**3 + 0.3**3), 0.0)
        p = torch.tensor([0.0, 1.0] * 64, dtype=dtype, device=ctx.device)
        expect(_same(torch.bernoulli(p).cpu(), p.cpu()), "bernoulli with p = 0 or 1 must be exact")
    elif fn == "multinomial":
        _multinomial(ctx, dtype, x)
    elif fn == "randperm":
        randperm_is_permutation(ctx, dtype)


def _multinomial(ctx: CaseContext, dtype: torch.dtype, x: torch.Tensor) -> None:
    counts = torch.bincount(x, minlength=len(PROBS))
    expect(int(counts[-1]) == 0, "multinomial drew a zero-probability category", counts=counts.tolist())
    expect_stat(chi_square_check(counts[:-1], torch.tensor(PROBS[:-1]), ALPHA), "distribution")
    probs = torch.tensor([PROBS] * 64, dtype=dtype, device=ctx.device)
    rows = torch.multinomial(probs, 4, replacement=False).cpu()
    expect(all(sorted(r) == [0, 1, 2, 3] for r in rows.tolist()),
           "multinomial without replacement repeated an index or drew a zero-probability one", first=rows[0].tolist())


_register("manual_seed", _manual_seed, "property:reproducible")
_register("generator", _generator, "property:reproducible")
_register("distribution", _distribution, STAT_ORACLE)
