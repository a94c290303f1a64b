"""Weak comparisons: a passing comparison whose reference could not tell a right result from a wrong one.

A reference of zeros is matched by a backend that returns zeros; a constant one by a kernel that
broadcasts one element; one below the tolerance's absolute floor by noise of that scale. Such a
pass proves nothing, so it is flagged (docs/oracles.md, "Weak comparisons"): `weakness` names why
one reference is weak, and a case is weak when every tensor it compared was (cases/context.py),
since one discriminating comparison is evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.oracle.tolerances import Tolerance

# The reasons, as records carry them (CaseRecord.weak).
EMPTY = "empty"
ZEROS = "all zeros"
NAN = "all NaN"
CONSTANT = "constant"
BELOW_ATOL = "below the absolute tolerance"
REASONS = (EMPTY, ZEROS, NAN, CONSTANT, BELOW_ATOL)

# OpInfo names whose result is constant by definition (factories, fills): a constant or zero
# reference is all they can have, so their comparisons are not judged.
CONSTANT_BY_DEFINITION = frozenset({
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros", "new_ones", "new_full", "zero_",
    "fill", "scalar_tensor", "linalg.norm.subgradients_at_zero",
})
# Predicates of floating values: on integer and bool inputs their answer is the same everywhere.
FLOAT_PREDICATES = frozenset({"isnan", "isinf", "isposinf", "isneginf", "isfinite"})
# OpInfo names whose result is the same everywhere for the dtypes named: signbit and angle of
# non-negative reals (False, 0), entr of bools (-x ln x is 0 at 0 and 1).
CONSTANT_FOR_DTYPES = {
    "signbit": frozenset({"bool", "uint8", "uint16", "uint32", "uint64"}),
    "angle": frozenset({"bool", "uint8", "uint16", "uint32", "uint64"}),
    "special.entr": frozenset({"bool"}),
}
# Ops whose gradient is zero wherever it is defined (step functions; outputs that ignore the input's
# values; the angle and sign of real numbers). Names, or `name.variant`.
ZERO_GRADIENT = frozenset({"round", "floor", "ceil", "trunc", "fix", "sign", "sgn", "angle", "zero_", "fill",
                           "div.trunc_rounding", "div.floor_rounding"})


# Aten packets (`aten::zero_`, `aten::new_full.out`: name without namespace, overload and trailing `_`)
# whose result is constant by definition: the factories and fills of the generated and surface suites.
CONSTANT_ATEN = CONSTANT_BY_DEFINITION | {
    "zero", "_efficientzerotensor", "_new_zeros_with_same_feature_meta", "_foreach_zero",
}


def constant_overload(name: str) -> bool:
    """An aten overload (`aten::_foreach_zero_.default`, `new_full.out`) whose result is constant by
    definition: its constant reference is no weakness of the inputs."""
    base = name.split("::", 1)[-1].split(".", 1)[0]
    if base.endswith("_") and not base.endswith("__"):
        base = base[:-1]
    return base in CONSTANT_ATEN


def constant_by_definition(name: str, dtype: str | None, backward: bool = False, variant: str = "") -> bool:
    """The OpInfo's result (or gradient, `backward`) is the same everywhere whatever the backend does
    right: a constant reference there is no weakness of the sample."""
    names = {name, f"{name}.{variant}"} if variant else {name}
    if backward:
        return bool(names & ZERO_GRADIENT)
    real = dtype is not None and not dtype.startswith("complex")
    integral = real and not dtype.startswith(("float", "bfloat"))  # type: ignore[union-attr]
    return (bool(names & CONSTANT_BY_DEFINITION) or (name in FLOAT_PREDICATES and integral) or (name == "isreal" and real)
            or dtype in CONSTANT_FOR_DTYPES.get(name, ()))


def tensor_weakness(expected: torch.Tensor, tol: Tolerance) -> str | None:
    """Why this reference cannot distinguish a correct result (a REASONS entry), None when it can.

    Every dtype: empty; one value everywhere (zeros, NaN, or another constant: bool all True or
    all False too), or a single element that is 0 or NaN. Floating tensors compared within a
    tolerance also: every value finite and within atol of 0, so zeros or noise of that scale pass."""
    if expected.numel() == 0:
        return EMPTY
    e = expected.detach().to("cpu")
    if e.layout != torch.strided:
        e = e.to_dense()
    if e.dtype == torch.complex32 or (e.dtype.is_floating_point and e.dtype.itemsize == 1):
        e = e.to(torch.complex64 if e.dtype.is_complex else torch.float32)
    flat = e.resolve_conj().resolve_neg().reshape(-1)
    floating = flat.dtype.is_floating_point or flat.dtype.is_complex
    first = flat[0].item()  # a Python number: comparing the tensor with it needs no indexing tensor
    if floating and first != first:  # NaN first: weak only if every element is NaN
        return NAN if bool(flat.isnan().all()) else None
    if bool((flat == first).all()):
        if not first:
            return ZEROS
        return CONSTANT if flat.numel() > 1 else None
    # The largest magnitude within atol: every value is finite and near 0 (a NaN or inf makes it fail).
    if floating and not tol.exact and float(flat.abs().max()) <= tol.atol:
        return BELOW_ATOL
    return None


def weakness(expected: Any, tol: Tolerance | Callable[[torch.dtype], Tolerance]) -> tuple[bool, str | None]:
    """(judged, reason) over every tensor in `expected`: judged is False when it holds no tensor;
    reason is None when at least one tensor can distinguish, else the first tensor's reason."""
    reasons = [tensor_weakness(t, tol if isinstance(tol, Tolerance) else tol(t.dtype)) for t in _tensors(expected)]
    if not reasons:
        return False, None
    return True, None if any(r is None for r in reasons) else reasons[0]


def _tensors(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v)]
    return []
