"""Tolerance table by op category and dtype (docs/opinfo.md); integers and bool compare exactly.

A new category is one entry in CATEGORIES. Manifest `tolerance_overrides` replace single cells.
"""

from __future__ import annotations

from dataclasses import dataclass

EXACT_DTYPES = frozenset(
    {"bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"}
)


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    # An exact comparison where the sign of a zero is defined: -0.0 and 0.0 differ
    # (oracle/exactness.py). Read only when atol == rtol == 0 and the values are floating.
    signed_zero: bool = False

    @property
    def exact(self) -> bool:
        return self.atol == 0 and self.rtol == 0


# Base (atol, rtol) per float dtype, the values torch.testing.assert_close uses by default.
_BASE: dict[str, tuple[float, float]] = {
    "float16": (1e-5, 1e-3),
    "bfloat16": (1e-5, 1.6e-2),
    "float32": (1e-5, 1.3e-6),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-5, 1e-3),
    "complex64": (1e-5, 1.3e-6),
    "complex128": (1e-7, 1e-7),
    "float8_e4m3fn": (1e-2, 1.25e-1),
    "float8_e5m2": (1e-2, 2.5e-1),
    "float8_e4m3fnuz": (1e-2, 1.25e-1),
    "float8_e5m2fnuz": (1e-2, 2.5e-1),
}

# Category -> multiplier of the base tolerance. Reductions and contractions accumulate rounding
# differences with the input size, so they get more room than elementwise ops.
CATEGORIES: dict[str, float] = {
    "elementwise": 1.0,
    "reduction": 10.0,
    # layer/group/batch/instance norm: the reduction's room, and an absolute floor that follows the
    # sample's conditioning (oracle/conditioning.py: conditioned_atol).
    "normalization": 10.0,
    "matmul": 50.0,
    "conv": 50.0,
    "linalg": 100.0,
    "fft": 50.0,
    "special": 10.0,
    "backward": 50.0,
    "training": 500.0,
    "workload": 500.0,
    "compile": 50.0,
}


def tolerance_for(
    category: str, dtype: str, overrides: dict[str, dict[str, dict[str, float]]] | None = None
) -> Tolerance:
    """The tolerance of one (category, dtype) cell, after manifest overrides."""
    if category not in CATEGORIES:
        raise KeyError(f"unknown tolerance category {category!r}")
    cell = (overrides or {}).get(category, {}).get(dtype)
    if dtype in EXACT_DTYPES and not cell:
        return Tolerance(0.0, 0.0)
    atol, rtol = _BASE.get(dtype, _BASE["float32"])
    factor = CATEGORIES[category]
    tol = Tolerance(atol * factor, rtol * factor)
    if cell:
        tol = Tolerance(cell.get("atol", tol.atol), cell.get("rtol", tol.rtol))
    return tol
