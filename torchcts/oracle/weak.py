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

from torchcts.oracle.opfacts import FACTS
from torchcts.oracle.opfacts.constant import FLOAT_PREDICATES
from torchcts.oracle.tolerances import Tolerance

__all__ = ["BELOW_ATOL", "CONSTANT", "EMPTY", "FLOAT_PREDICATES", "NAN", "REASONS", "ZEROS", "constant_by_definition",
           "constant_overload", "tensor_weakness", "weakness"]

# The reasons, as records carry them (CaseRecord.weak).
EMPTY = "empty"
ZEROS = "all zeros"
NAN = "all NaN"
CONSTANT = "constant"
BELOW_ATOL = "below the absolute tolerance"
REASONS = (EMPTY, ZEROS, NAN, CONSTANT, BELOW_ATOL)

def constant_overload(name: str) -> bool:
    """An aten overload (`aten::_foreach_zero_.default`, `new_full.out`) whose result is constant by
    definition (op facts of kind `constant`): its constant reference is no weakness of the inputs."""
    return FACTS.has("constant", name, aten=True)


def constant_by_definition(name: str, dtype: str | None, backward: bool = False, variant: str = "") -> bool:
    """The OpInfo's result (or gradient, `backward`) is the same everywhere whatever the backend does
    right (op facts of kinds `constant`, `zero_gradient`): a constant reference there is no weakness
    of the sample."""
    return FACTS.has("zero_gradient" if backward else "constant", name, variant, dtype=dtype)


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
