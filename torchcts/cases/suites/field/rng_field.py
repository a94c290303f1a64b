"""Field cases of the random-number classes (docs/bug-classes.md R1, R2): seeding and generator
state, and sampling distributions that are right in shape and range but wrong in law.

Level 3 and claim `rng`, as the rng and random_ops suites. Each case replays its report's draw;
a statistical check's bound is wide (six standard deviations) and the seed fixed, so a correct
backend never fails by chance while the reported laws (two sorted runs, always index 0) are far
outside it.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchcts.cases.api import ALPHA, CaseContext, CaseSet, chi_square_check, compat, expect, expect_stat
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases

RNG = ("rng",)


# --- R1 seeding and generator state ------------------------------------------------------------

@SUITE.case("R1/pytorch-pytorch-84288", level=3, dtypes=("float32",), ops=("aten::randn",), requires=RNG,
            cite=GH + "pytorch/pytorch/issues/84288")
def manual_seed_randn(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch.manual_seed did not make MPS torch.randn reproducible: seed, draw, reseed, draw must
    give the same values; the draw after moves on; another seed gives other values."""
    def draw(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(seed)
        first = torch.randn(5, dtype=dtype, device=ctx.device).cpu()
        return first, torch.randn(5, dtype=dtype, device=ctx.device).cpu()

    a, a_next = draw(ctx.seed + 999)
    b, b_next = draw(ctx.seed + 999)
    expect(torch.equal(a, b) and torch.equal(a_next, b_next), "the same manual_seed gave other randn values",
           first=a.tolist(), again=b.tolist())
    expect(not torch.equal(a, a_next), "the second randn after manual_seed repeated the first", values=a.tolist())
    c, _ = draw(ctx.seed + 1000)
    expect(not torch.equal(a, c), "another manual_seed gave the same randn values", values=a.tolist())


@SUITE.case("R1/pytorch-pytorch-78009", level=3, dtypes=("float32",), ops=("aten::normal.float_float", "aten::randn"),
            requires=RNG, cite=GH + "pytorch/pytorch/issues/78009")
def normal_state_advances(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.normal(0, 1, size=(100,)) returned the same tensor on every call (the generator's
    seed was never used nor advanced; randn likewise, #78110): consecutive draws must differ."""
    torch.manual_seed(ctx.seed)
    for name, fn in (("normal", lambda: torch.normal(0.0, 1.0, size=(100,), dtype=dtype, device=ctx.device)),
                     ("randn", lambda: torch.randn(100, dtype=dtype, device=ctx.device)),
                     ("rand", lambda: torch.rand(100, dtype=dtype, device=ctx.device))):
        first, second = fn().cpu(), fn().cpu()
        expect(not torch.equal(first, second), f"two consecutive {name} draws are identical", values=first[:5].tolist())


def _rng_state_api(ctx: CaseContext) -> tuple[Any, Any]:
    """(get_rng_state, set_rng_state) of the device's default generator: torch.<device>'s, CPU's own."""
    if ctx.device_type == "cpu":
        return torch.get_rng_state, torch.set_rng_state
    module = compat.device_module(ctx.device_type)
    expect(module is not None and hasattr(module, "get_rng_state") and hasattr(module, "set_rng_state"),
           f"torch.{ctx.device_type} has no get_rng_state/set_rng_state")
    return module.get_rng_state, module.set_rng_state


@SUITE.case("R1/pytorch-pytorch-130613", level=3, dtypes=("float32",), ops=("aten::exponential_",),
            requires=(*RNG, "device_api"), cite=GH + "pytorch/pytorch/issues/130613")
def rng_state_restores(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS Generator.set_state did not restore the state get_state returned: after seeding 42 and two
    exponential_(1) draws of a 3x3 tensor, the draw after set_state repeated the first draw instead
    of the third. Seed, two draws, get_rng_state, draw, set_rng_state, draw: the two last equal, and
    so do the draws after them."""
    get_state, set_state = _rng_state_api(ctx)
    torch.manual_seed(42)

    def draw() -> torch.Tensor:
        return torch.empty(3, 3, dtype=dtype, device=ctx.device).exponential_(1).cpu()

    first, second = draw(), draw()
    state = get_state()
    third, fourth = draw(), draw()
    set_state(state)
    again, after = draw(), draw()
    expect(torch.equal(third, again), "the draw after set_rng_state differs from the draw after get_rng_state",
           after_get=third[0].tolist(), after_set=again[0].tolist(),
           repeats_first=torch.equal(again, first))
    expect(torch.equal(fourth, after), "the second draw after set_rng_state differs", expected=fourth[0].tolist(),
           got=after[0].tolist())
    expect(not torch.equal(first, second), "two consecutive exponential_ draws are identical")


# --- R2 sampling distribution wrong --------------------------------------------------------------

@SUITE.case("R2/pytorch-pytorch-104170", level=3, dtypes=("int64",), ops=("aten::randperm",), requires=RNG,
            cite=GH + "pytorch/pytorch/issues/104170")
def randperm_not_two_runs(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS randperm(100) returned two ascending runs (argsort of keys drawn from {0, 1}): a
    permutation, but with one descent where a uniform one has (n-1)/2, standard deviation
    sqrt((n+1)/12). Checked for n = 100 (the report) and 1000."""
    torch.manual_seed(ctx.seed)
    for n in (100, 1000):
        p = torch.randperm(n, dtype=dtype, device=ctx.device).cpu()
        expect(torch.equal(p.sort().values, torch.arange(n, dtype=dtype)), "randperm is not a permutation", n=n)
        descents = int((p[1:] < p[:-1]).sum())
        mean, sd = (n - 1) / 2, math.sqrt((n + 1) / 12)
        expect(abs(descents - mean) <= 6 * sd, "randperm's descents are far from a uniform permutation's",
               n=n, descents=descents, expected=mean, bound=round(6 * sd, 1))


@SUITE.case("R2/pytorch-pytorch-99802", level=3, dtypes=("float32",), ops=("aten::multinomial",), requires=RNG,
            cite=GH + "pytorch/pytorch/issues/99802")
def multinomial_not_always_zero(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.multinomial(x, 1, True) always returned [0], for x = [0.5, 0.5] and even for
    x = [0, 0.5] where index 0 has probability 0. The report's single draws, then 4000 draws of
    [0.5, 0.5] (a chi-square test) and of [0, 0.5] (never 0)."""
    torch.manual_seed(ctx.seed)
    half = torch.tensor([0.5, 0.5], dtype=dtype, device=ctx.device)
    zero_first = torch.tensor([0.0, 0.5], dtype=dtype, device=ctx.device)
    single = {int(torch.multinomial(half, 1, True).item()) for _ in range(100)}
    expect(single == {0, 1}, "100 single draws of [0.5, 0.5] did not give both indices", got=sorted(single))
    single = {int(torch.multinomial(zero_first, 1, True).item()) for _ in range(100)}
    expect(single == {1}, "single draws of [0, 0.5] gave an index of probability 0", got=sorted(single))
    draws = torch.multinomial(half, 4000, True).cpu()
    counts = torch.bincount(draws, minlength=2)
    expect(counts.numel() == 2, "multinomial returned an index outside the distribution", got=counts.tolist())
    expect_stat(chi_square_check(counts, torch.tensor([0.5, 0.5]), ALPHA), "4000 draws of [0.5, 0.5]")
    draws = torch.multinomial(zero_first, 4000, True).cpu()
    expect(bool((draws == 1).all()), "draws of [0, 0.5] gave index 0 (probability 0)", zeros=int((draws == 0).sum()))


@SUITE.case("R2/pytorch-pytorch-136623", level=3, dtypes=("float32",), ops=("aten::multinomial",), requires=RNG,
            cite=GH + "pytorch/pytorch/issues/136623")
def multinomial_stays_in_support(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS multinomial(p, 100000000, True) of the report's 10-category p (one 0.9935, the rest down to
    4.6e-8) sometimes drew index 11: rounding let two buckets match a draw and their indices were
    summed. 2,000,000 draws of the same p: every index below 10, and the frequencies of the
    categories expected at least 50 times follow p (chi-square)."""
    p = torch.tensor([4.3330236804e-04, 1.6706718498e-07, 5.6105983504e-07, 2.5240040486e-05, 5.4649823142e-05,
                      5.5108112283e-03, 9.9348586798e-01, 4.5977579077e-08, 4.8896443332e-04, 3.4132514770e-07],
                     dtype=dtype)
    torch.manual_seed(ctx.seed)
    n = 2_000_000
    draws = torch.multinomial(p.to(ctx.device), n, True).cpu()
    expect(int(draws.min()) >= 0 and int(draws.max()) < p.numel(), "multinomial drew an index outside the distribution",
           lowest=int(draws.min()), highest=int(draws.max()))
    counts = torch.bincount(draws, minlength=p.numel()).double()
    probs = p.double() / p.double().sum()
    kept = probs * n >= 50  # the chi-square approximation holds where expected counts are large
    expect_stat(chi_square_check(counts[kept], probs[kept], ALPHA), f"{n} draws of the report's distribution")
