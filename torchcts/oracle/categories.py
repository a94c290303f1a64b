"""Which tolerance category and which oracle an OpInfo entry gets, from its metadata.

The category comes from what the OpInfo says about itself: its class (ReductionOpInfo,
UnaryUfuncInfo, SpectralFuncInfo...), its namespace (`linalg.`, `fft.`, `special.`), the module
that defines its sample generator (PyTorch keeps linalg/special/fft generators apart), and exact
aten names for the contraction families (matmul, conv), never substrings of op names.

The oracle is `cpu` unless the op's output cannot be compared with the CPU's: random ops (a
curated registry, checked against OpInfo's `wrapper_set_seed` use by a unit test), factories of
uninitialised memory and ops flagged `has_nondeterministic_output` get property oracles (read
through compat: the field is new in 2.13).
"""

from __future__ import annotations

from typing import Any

from torchcts.compat import opinfo_nondeterministic_output
from torchcts.oracle.conditioning import GROUPINGS

# Exact aten names of contraction ops: their rounding grows with the reduced dimension.
MATMUL_ATEN = frozenset({
    "mm", "bmm", "addmm", "addmv", "addbmm", "baddbmm", "addr", "matmul", "mv", "dot", "vdot", "inner",
    "tensordot", "einsum", "linear", "bilinear", "chain_matmul", "__rmatmul__", "cdist", "kron",
    "_addmm_activation", "outer", "linalg_multi_dot", "linalg_vecdot",
})
CONV_ATEN = frozenset({
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution",
})
FAMILY_NAMESPACES = ("linalg", "fft", "special")


# OpInfo names of the normalisation ops, whose tolerance also follows the sample's conditioning:
# the ops oracle/conditioning.py knows how to group (one list, GROUPINGS).
NORMALIZATION_OPS = frozenset(GROUPINGS)

# Ops whose values depend on the random generator. Kept as one list because OpInfo has no flag for
# it; tests/test_opinfo_categories.py checks it covers every op wrapped in `wrapper_set_seed`.
RANDOM_OPS = frozenset({
    "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal", "uniform",
    "rand_like", "randint", "randint_like", "randn", "randn_like",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout", "nn.functional.rrelu",
    "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
    "nn.functional.scaled_dot_product_attention", "nn.functional.multi_head_attention_forward",
    "svd_lowrank", "pca_lowrank",
})
# Factories whose values are whatever the allocator left behind.
UNINITIALIZED_OPS = frozenset({"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"})
# (name, variant) pairs that use wrapper_set_seed but are deterministic.
SEEDED_BUT_DETERMINISTIC = frozenset({("item", ""), ("nn.functional.feature_alpha_dropout", "without_train")})


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
    if aten in MATMUL_ATEN or op.name in MATMUL_ATEN:
        return "matmul"
    if aten in CONV_ATEN:
        return "conv"
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
    return op.name in RANDOM_OPS and (op.name, op.variant_test_name) not in SEEDED_BUT_DETERMINISTIC


def oracle_for(op: Any) -> str:
    """`cpu`, or the property oracle for ops whose values cannot be compared with the CPU's."""
    if op.name in UNINITIALIZED_OPS:
        return "property:uninitialized"
    if opinfo_nondeterministic_output(op):
        return "property:nondeterministic"
    if is_random(op):
        return "property:random"
    return "cpu"


# (kind, op name) -> why the CPU cannot be the reference there. The case becomes not_applicable.
NO_CPU_REFERENCE: dict[tuple[str, str], str] = {
    ("special_values", "linalg.eigvals"): "the CPU reference (LAPACK geev) crashes the process on NaN/Inf input",
    ("special_values", "linalg.eig"): "the CPU reference (LAPACK geev) crashes the process on NaN/Inf input",
    ("explore", "linalg.pinv.singular"): ("the pseudo-inverse of these rank-deficient samples is discontinuous: "
                                          "a last-bit difference in the SVD moves the rank cut-off, and two CPU runs "
                                          "of one explored input differed (complex128)"),
    ("explore", "linalg.lstsq"): ("least squares of explored (rank-deficient) inputs are not unique: one explored "
                                  "input failed and then passed twice on the clean sim (float32, float64)"),
}
