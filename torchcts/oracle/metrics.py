"""The elementwise tolerance rule and the error metrics of a difference, in torch alone.

Two places judge and measure a difference: the oracle's comparison (compare.py: the record's
"max abs error") and every standalone repro script, which cannot import TorchCTS. The script gets
this module's source as it is (results/repro.py: `source`), so the two never disagree: before, the
script measured a NaN on the device against a finite CPU value as "max abs error nan" where the
record said inf (pytorch_ocl's sigmoid of int32 into a float32 out=). Hence: no import but torch,
no `from __future__`, nothing at module level but definitions.
"""

import torch


def widened(t: torch.Tensor) -> torch.Tensor:
    """A comparable tensor in float64 (complex128 for complex ones): differences are exact there."""
    return t.to(torch.complex128 if t.dtype.is_complex else torch.float64)


def outside_tolerance(a64: torch.Tensor, e64: torch.Tensor, atol: float, rtol: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(|a - e| with equal NaNs and equal infinities at 0, the mask of elements outside
    atol + rtol * |e|) of two widened tensors: the one elementwise tolerance rule."""
    both_nan = torch.isnan(a64) & torch.isnan(e64)
    diff = (a64 - e64).abs()
    diff = torch.where(both_nan, torch.zeros_like(diff, dtype=diff.dtype), diff)
    same_inf = (a64 == e64)
    diff = torch.where(same_inf, torch.zeros_like(diff), diff)
    # An infinite difference never fits (inf <= atol + rtol*inf would say it does).
    bad = ~(same_inf | both_nan | (torch.isfinite(diff) & (diff <= atol + rtol * e64.abs())))
    return diff, bad


def error_maxima(diff: torch.Tensor, bad: torch.Tensor, e64: torch.Tensor) -> tuple[float, float | None]:
    """(max abs error over every element, max rel error over the elements in `bad`): a NaN or infinite
    difference (a NaN against a number) counts as inf; the relative error only over elements whose
    expected value is not 0, None when every one expects 0 (dividing by a tiny floor gave 1e308)."""
    real = diff.real if diff.is_complex() else diff
    finite = torch.where(torch.isfinite(real), real, torch.full_like(real, float("inf")))
    scale = e64.abs().real if e64.is_complex() else e64.abs()
    rated = bad & (scale > 0)
    rel = finite[rated] / scale[rated]
    return (float(finite.max()) if finite.numel() else 0.0), (float(rel.max()) if rel.numel() else None)
