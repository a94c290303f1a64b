"""Which tolerance category and which oracle an OpInfo entry gets, from its metadata.

The category comes from what the OpInfo says about itself: its class (ReductionOpInfo,
UnaryUfuncInfo, SpectralFuncInfo...), its namespace (`linalg.`, `fft.`, `special.`), the module
that defines its sample generator (PyTorch keeps linalg/special/fft generators apart), and exact
aten names for the contraction families (matmul, conv), never substrings of op names (op facts of
kinds `matmul_category`, `conv_category`: oracle/opfacts/reference.py).

The oracle is `cpu` unless the op's output cannot be compared with the CPU's: random ops (a
curated list of op facts, `random`, checked against OpInfo's `wrapper_set_seed` use by a unit test), factories of
uninitialised memory and ops flagged `has_nondeterministic_output` get property oracles (read
through compat: the field is new in 2.13).
"""

from __future__ import annotations

from typing import Any

from torchcts.compat import opinfo_nondeterministic_output
from torchcts.oracle.conditioning import GROUPINGS
from torchcts.oracle.opfacts import FACTS
from torchcts.oracle.opfacts.reference import SEEDED_BUT_DETERMINISTIC

__all__ = ["FAMILY_NAMESPACES", "NORMALIZATION_OPS", "RANDOM_OPS", "SEEDED_BUT_DETERMINISTIC", "is_random", "namespace",
           "oracle_for", "tolerance_category"]

FAMILY_NAMESPACES = ("linalg", "fft", "special")


# OpInfo names of the normalisation ops, whose tolerance also follows the sample's conditioning:
# the ops oracle/conditioning.py knows how to group (one list, GROUPINGS).
NORMALIZATION_OPS = frozenset(GROUPINGS)

# Views of the op facts (oracle/opfacts/reference.py), as the tables were: the random ops (OpInfo has
# no flag for them; tests/opinfo/test_opinfo_build.py checks they cover every op wrapped in
# `wrapper_set_seed`) and the (name, variant) pairs that use wrapper_set_seed but are deterministic.
RANDOM_OPS = frozenset(FACTS.selectors("random"))


def namespace(op: Any) -> str | None:
    """`linalg`, `fft` or `special` when the OpInfo lives in that namespace (level-5 families, torchcts/levels.py)."""
    if type(op).__name__ == "SpectralFuncInfo":
        return "fft"
    head = op.name.split(".", 1)[0]
    return head if head in FAMILY_NAMESPACES and "." in op.name else None


def _generator_module(op: Any) -> str:
    fn = getattr(op, "sample_inputs_func", None)
    return str(getattr(fn, "__module__", "") or "").rsplit(".", 1)[-1]


def tolerance_category(op: Any) -> str:
    """The tolerances.CATEGORIES entry for an OpInfo."""
    ns = namespace(op)
    if ns is not None:
        return ns
    cls = type(op).__name__
    aten = op.aten_name or op.name
    contraction = FACTS.get("matmul_category", aten) or FACTS.get("matmul_category", op.name) \
        or FACTS.get("conv_category", aten)
    if contraction:
        return str(contraction)
    if op.name in NORMALIZATION_OPS:
        return "normalization"
    gen = _generator_module(op)
    if gen in ("linalg", "special", "fft"):
        return gen
    if cls == "ReductionOpInfo" or gen == "_masked":
        return "reduction"
    if cls in ("UnaryUfuncInfo", "BinaryUfuncInfo", "ShapeFuncInfo", "ForeachFuncInfo"):
        return "elementwise"
    # A general OpInfo is usually a composite (norms, losses, scans, softmax): it accumulates.
    return "reduction"


def is_random(op: Any) -> bool:
    return FACTS.has("random", op.name) and not FACTS.has("seeded_deterministic", op.name, op.variant_test_name)


def oracle_for(op: Any) -> str:
    """`cpu`, or the property oracle for ops whose values cannot be compared with the CPU's."""
    if FACTS.has("uninitialized", op.name):
        return "property:uninitialized"
    if opinfo_nondeterministic_output(op):
        return "property:nondeterministic"
    if is_random(op):
        return "property:random"
    return "cpu"
