"""Level 5 accumulation at dtype limits: reductions and scans of integer, bool and half-precision
tensors whose values sit near the dtype's limits, over LENGTH (>= 10^4) elements.

OpInfo's reduction samples hold a few small values, so an accumulator of the wrong width (an int8
sum accumulated in int8, a float16 sum accumulated in float16, a bool count in uint8) never
overflows or loses precision there. Each case reduces three layouts (the whole tensor, along the
last dim of (3, LENGTH), along the first dim of (LENGTH, 3)) of one value PATTERN and compares the
result dtype and value with CPU, whose promotion (integer sums to int64) and accumulation
(float16/bfloat16 in float32) rules are the reference. Integer overflow wraps the same way in
any order (two's complement sums and products are exact modulo 2^bits), so integers compare
exactly; floats use the reduction tolerance.

Some op and pattern pairs gave a reference that proves nothing (docs/oracles.md, "Weak
comparisons"), so `strengthened` adjusts their values: integer products of values near the limits
are 0 modulo 2^bits (enough even factors), so prod and cumprod take odd values (a product of odd
numbers is odd, never 0, and still wraps); an absorbing value in every slice (a False, a 0, the
minimum) made prod, all and amin the same everywhere, so the first LENGTH values (the flat layout,
the first row) hold none; and the ones of `unit` gave cumprod ones and argmax index 0
everywhere, so a few marks (UNIT_MARKS) break them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import BOOL, INTEGRAL, CaseContext, CaseSet, run_both

SUITE = CaseSet("limits")
cases = SUITE.cases
LEVEL = 5
LENGTH = (1 << 14) + 5  # >= 10^4 and not a power of two: every block size leaves a tail
DTYPES = BOOL + INTEGRAL + ("float16", "bfloat16")
PATTERNS = ("high", "mixed", "unit")


def values(dtype: torch.dtype, pattern: str, n: int, seed: int) -> torch.Tensor:
    """n values of `dtype`: `high` near the largest value, `mixed` near either limit at random,
    `unit` ones (integers) or 1 +- 2^-7 (floats): a sum far beyond what a narrow accumulator holds."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        p = {"high": 0.95, "mixed": 0.5, "unit": 1.0}[pattern]
        return torch.rand(n, generator=g) < p
    if dtype.is_floating_point:
        top = float(torch.finfo(dtype).max)
        if pattern == "unit":
            return (1 + (torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1) / 128).to(dtype)
        mag = top * (0.5 + 0.5 * torch.rand(n, generator=g, dtype=torch.float64))
        sign = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0) if pattern == "mixed" else 1.0
        return (mag * sign).to(dtype)
    info = torch.iinfo(dtype)
    if pattern == "unit":
        return torch.ones(n, dtype=dtype)
    near_max = info.max - torch.randint(0, 4, (n,), generator=g)
    if pattern == "high":
        return near_max.to(dtype)
    near_min = info.min + torch.randint(0, 4, (n,), generator=g)
    return torch.where(torch.rand(n, generator=g) < 0.5, near_max, near_min).to(dtype)


ABSORBING = frozenset({"prod", "all", "amin"})  # one value (False, 0, the minimum) decides a slice
UNIT_MARKS = {"cumprod": 0, "argmax": 2}  # written at a few places of `unit`: cumprod turns 0, argmax finds it


def strengthened(x: torch.Tensor, op: str, pattern: str, seed: int) -> torch.Tensor:
    """x (3 * LENGTH values of `pattern`) adjusted so that `op`'s result is not one value everywhere."""
    integral = not x.dtype.is_floating_point and x.dtype != torch.bool
    if op in ("prod", "cumprod") and integral:
        x = x | 1  # odd: a wrapped product stays odd (values of `high` stay within 2 of the maximum)
    if op in ABSORBING and pattern != "unit" and not x.dtype.is_floating_point:
        x = x.clone()
        x[:LENGTH] = True if x.dtype == torch.bool else values(x.dtype, "high", LENGTH, seed + 1) | 1  # odd for prod
    marked = not x.dtype.is_floating_point and (x.dtype != torch.bool or op == "cumprod")  # argmax of bools: ties
    if op in UNIT_MARKS and pattern == "unit" and marked:
        x = x.clone()
        x[LENGTH // 3::LENGTH // 2 + 1] = UNIT_MARKS[op]  # twice per LENGTH: argmax's tie goes to the first
    return x


# name -> (call(x, dim) with dim None for the whole tensor, aten ops)
Reduce = Callable[[torch.Tensor, Any], Any]


def _reduce(name: str) -> Reduce:
    """x.name() over the whole tensor, x.name(dim) along dim."""
    return lambda x, d: getattr(x, name)() if d is None else getattr(x, name)(d)


def _scan(name: str) -> Reduce:
    """A scan has no whole-tensor form: the flattened tensor's, or along dim."""
    return lambda x, d: getattr(x.reshape(-1), name)(0) if d is None else getattr(x, name)(d)


def _logsumexp(x: torch.Tensor, d: Any) -> Any:
    return x.logsumexp(0 if d is None else d)


OPS: dict[str, tuple[Reduce, tuple[str, ...]]] = {
    name: (make(name), (f"aten::{name}",))
    for name, make in (
        ("sum", _reduce), ("nansum", _reduce), ("prod", _reduce), ("mean", _reduce), ("var", _reduce),
        ("logsumexp", lambda _: _logsumexp), ("cumsum", _scan), ("cumprod", _scan), ("amax", _reduce),
        ("amin", _reduce), ("argmax", _reduce), ("count_nonzero", _reduce), ("all", _reduce), ("any", _reduce),
    )
}


def reduce_at_limits(ctx: CaseContext, dtype: torch.dtype, op: str, pattern: str) -> None:
    fn, _ = OPS[op]
    x = strengthened(values(dtype, pattern, 3 * LENGTH, ctx.seed), op, pattern, ctx.seed)
    for layout, t, dim in (("flat", x[:LENGTH], None), ("rows", x.reshape(3, LENGTH), 1),
                           ("columns", x.reshape(LENGTH, 3), 0)):
        ctx.describe(layout=layout, shape=list(t.shape), dim=dim, pattern=pattern)
        run_both(ctx, lambda a, _d=dim: fn(a, _d), t, category="reduction")


for _op, (_fn, _ops) in OPS.items():
    SUITE.case(f"{_op}", level=LEVEL, dtypes=DTYPES, ops=_ops,
               params={p: {"op": _op, "pattern": p} for p in PATTERNS})(reduce_at_limits)
