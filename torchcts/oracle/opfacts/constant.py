"""Constant results (kinds `constant`, `zero_gradient`): the op facts oracle/weak.py reads.

A constant or zero reference is all a factory or a fill can have, so such a comparison is no
weakness of the sample; neither is a zero gradient of a step function. Facts of OpInfo names hold
for the aten spelling too (`aten::zero_`); the aten-only packets of the generated and surface suites
say so in their condition.
"""

from __future__ import annotations

from torchcts.oracle.opfacts.model import ALWAYS, Fact, When

SOURCE = "the op's definition (PyTorch's documentation of the op)"

# Predicates of floating values: on integer and bool inputs their answer is the same everywhere.
FLOAT_PREDICATES = frozenset({"isnan", "isinf", "isposinf", "isneginf", "isfinite"})

_UNSIGNED = frozenset({"bool", "uint8", "uint16", "uint32", "uint64"})


def _integral(dtype: str) -> bool:
    return not dtype.startswith(("complex", "float", "bfloat"))


def _real(dtype: str) -> bool:
    return not dtype.startswith("complex")


def _facts(kind: str, reason: str, names: str, when: When = ALWAYS) -> tuple[Fact, ...]:
    return (Fact(kind, tuple(names.split()), reason, SOURCE, when=when),)


FACTS: tuple[Fact, ...] = (
    *_facts("constant", "a factory or fill: its result is constant by definition",
            "zeros ones full zeros_like ones_like full_like new_zeros new_ones new_full zero_ fill scalar_tensor"),
    *_facts("constant", "the subgradient at zero is defined as 0: OpInfo's variant samples only there",
            "linalg.norm.subgradients_at_zero"),
    *_facts("constant", "a factory or fill of the generated and surface suites: constant by definition",
            "zero _efficientzerotensor _new_zeros_with_same_feature_meta _foreach_zero", When(spelling="aten")),
    *_facts("constant", "a predicate of floating values: on integer and bool inputs every element answers alike",
            " ".join(sorted(FLOAT_PREDICATES)), When(dtypes=_integral)),
    *_facts("constant", "every real number is real: isreal of a real dtype is all True", "isreal", When(dtypes=_real)),
    *_facts("constant", "the sign bit and the angle of a non-negative real are False and 0", "signbit angle",
            When(dtypes=_UNSIGNED)),
    *_facts("constant", "-x ln x is 0 at 0 and 1: entr of bools is all zeros", "special.entr",
            When(dtypes=frozenset({"bool"}))),
    *_facts("zero_gradient", "a step function (rounding, sign): its gradient is zero wherever it is defined",
            "round floor ceil trunc fix sign sgn div.trunc_rounding div.floor_rounding"),
    *_facts("zero_gradient", "the output ignores the input's values (a fill): zero gradient", "zero_ fill"),
    *_facts("zero_gradient", "the angle of a real number is 0 or pi whatever its magnitude: zero gradient", "angle"),
)
