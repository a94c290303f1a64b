"""The record of one fact about an op, its condition, and the one name resolver (docs/oracles.md, "Op facts").

A fact names the ops it is about by selectors in the spellings the suites use: an OpInfo name
(`linalg.norm`), an OpInfo variant's full name (`div.floor_rounding`), or an aten packet
(`gather`; an overload `all.dims_out`). `keys` turns any name a caller holds into the selectors it
answers to, most specific first, so every table is asked the same way: an OpInfo (name, variant),
`aten::abs_.default` and `new_full.out` all resolve here and nowhere else. The condition is
DecorateInfo's idea (dtypes, a predicate of the sample) plus the kind of case and the spelling the
op was asked by, for the few facts true of one spelling only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A set of dtype names (`float32`), or a predicate of one.
Dtypes = frozenset[str] | Callable[[str], bool]


def _has(dtypes: Dtypes, dtype: str) -> bool:
    return dtype in dtypes if isinstance(dtypes, frozenset) else dtypes(dtype)


@dataclass(frozen=True)
class When:
    """Where a fact holds; every field left at its default holds everywhere."""

    # The fact holds only for these input dtypes (an unknown dtype: not).
    dtypes: Dtypes | None = None
    # The fact does not hold for these input dtypes (an unknown dtype: it holds).
    not_dtypes: Dtypes | None = None
    # Case kinds (`explore`, `special_values`, ...) it holds for; None: every kind.
    case_kinds: frozenset[str] | None = None
    # "aten": only when the op is asked by an aten name (the generated and surface suites).
    spelling: str | None = None
    # A predicate of the sample, as DecorateInfo's active_if; asked only when a sample is given.
    sample: Callable[[Any], bool] | None = None

    def holds(self, dtype: str | None, case_kind: str | None, aten: bool, sample: Any) -> bool:
        if self.dtypes is not None and (dtype is None or not _has(self.dtypes, dtype)):
            return False
        if self.not_dtypes is not None and dtype is not None and _has(self.not_dtypes, dtype):
            return False
        if self.case_kinds is not None and case_kind not in self.case_kinds:
            return False
        if self.spelling == "aten" and not aten:
            return False
        return self.sample is None or sample is None or bool(self.sample(sample))


ALWAYS = When()


@dataclass(frozen=True)
class Fact:
    """One fact: which ops, what kind (opfacts.KINDS), its value, where it holds, why, and the source."""

    kind: str
    ops: tuple[str, ...]
    reason: str
    source: str
    # The fact's datum (an Exact, a message, switch points, ...); None says "not" for a more
    # specific selector than another fact of the kind (round.decimals_3 is not exact as round is).
    value: Any = True
    when: When = ALWAYS


def keys(name: str, variant: str = "", aten: bool = False) -> tuple[str, ...]:
    """The selectors an op answers to, most specific first: an OpInfo's `name.variant` then `name`;
    an aten name (`aten::abs_.default`, or any name with `aten=True`: `new_full.out`) its
    `packet.overload`, packet, and the packet of the in-place form's functional op (`abs`)."""
    if "::" not in name and not aten:
        return (f"{name}.{variant}", name) if variant else (name,)
    base, _, overload = name.split("::", 1)[-1].partition(".")
    found = [f"{base}.{overload}"] if overload else []
    found.append(base)
    if base.endswith("_") and not base.endswith("__"):
        found.append(base[:-1])
    return tuple(found)


def is_aten(name: str, aten: bool = False) -> bool:
    """Whether `keys` reads this name as an aten name."""
    return aten or "::" in name
