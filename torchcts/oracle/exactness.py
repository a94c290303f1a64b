"""Which results are exact by definition, so the oracle compares them bit for bit (docs/oracles.md).

A float tolerance hides a 1-ulp error in a result that has exactly one right answer: a copy, a
cast between floating dtypes (round to nearest even is defined), a selection (gather, max, sort
values), a rounding (floor, trunc). They are op facts of kind `exact` (oracle/opfacts/exact.py,
the one registry), and `EXACT` their view: op name -> `Exact` (which outputs, whether the sign of
a zero is defined, and why). The other rule needs no entry: integer and bool outputs always compare
exactly (tolerances.py: EXACT_DTYPES).

Keys are OpInfo names, `name.variant` for one OpInfo variant, and aten packet names (the generated
and surface suites compare per overload); `exactness_of` reads all three. Every entry was checked
against PyTorch's own decompositions (torchcts.sim.decomp): a decomposition of an exact op must
match the CPU kernel bit for bit, or the op is not exact and has no entry. Not exact, on purpose:
arithmetic on floats (a backend may fuse, flush subnormals or use another opmath), scans and
reductions that add (cumsum, sum, index_add, scatter_add), `round` with `decimals` (it scales).
"""

from __future__ import annotations

from torchcts.oracle.opfacts import FACTS
from torchcts.oracle.opfacts.exact import Exact

__all__ = ["EXACT", "NOT_EXACT", "Exact", "exactness_of"]

# The registry's view by selector, as the table was (tests, docs): op name -> Exact.
EXACT: dict[str, Exact] = {k: v for k, v in FACTS.selectors("exact").items() if v is not None}
# Selectors that would match a name's base but are not exact (round's decimals variants).
NOT_EXACT: frozenset[str] = frozenset(k for k, v in FACTS.selectors("exact").items() if v is None)


def exactness_of(name: str, variant: str = "", dtype: str | None = None) -> Exact | None:
    """The registry entry for an OpInfo (name, variant) or an aten name (`aten::gather.default`,
    an in-place `abs_`) with inputs of `dtype` (a name), None when the result is compared with the
    dtype's tolerance."""
    found: Exact | None = FACTS.get("exact", name, variant, dtype=dtype)
    return found
