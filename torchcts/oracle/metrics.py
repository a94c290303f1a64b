"""The elementwise tolerance rule and the error metrics of a difference, in torch alone.

Two places judge and measure a difference: the oracle's comparison (compare.py: the record's
"max abs error") and every standalone repro script, which cannot import TorchCTS. The script gets
this module's source as it is (results/repro/script.py: `source`), so the two never disagree: before, the
script measured a NaN on the device against a finite CPU value as "max abs error nan" where the
record said inf (pytorch_ocl's sigmoid of int32 into a float32 out=). Hence: no import but torch,
no `from __future__`, nothing at module level but definitions, and annotations quoted: a script
may run on a Python older than TorchCTS needs (3.9, with torch 2.7).
"""
# ruff: noqa: UP037

import torch


def widened(t: torch.Tensor) -> torch.Tensor:
    """A comparable tensor in float64 (complex128 for complex ones): differences are exact there."""
    return t.to(torch.complex128 if t.dtype.is_complex else torch.float64)


def outside_tolerance(a64: torch.Tensor, e64: torch.Tensor, atol: float, rtol: float) -> "tuple[torch.Tensor, torch.Tensor]":
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


def error_maxima(diff: torch.Tensor, bad: torch.Tensor, e64: torch.Tensor) -> "tuple[float, float | None]":
    """(max abs error over every element, max rel error over the elements in `bad`): a NaN or infinite
    difference (a NaN against a number) counts as inf; the relative error only over elements whose
    expected value is not 0, None when every one expects 0 (dividing by a tiny floor gave 1e308)."""
    real = diff.real if diff.is_complex() else diff
    finite = torch.where(torch.isfinite(real), real, torch.full_like(real, float("inf")))
    scale = e64.abs().real if e64.is_complex() else e64.abs()
    rated = bad & (scale > 0)
    rel = finite[rated] / scale[rated]
    return (float(finite.max()) if finite.numel() else 0.0), (float(rel.max()) if rel.numel() else None)


# The truth's measure (oracle/truth.py judges by it; the script's "Truth beyond CPU" check too).

def real_dtype(dtype: torch.dtype) -> torch.dtype:
    """A complex dtype's component dtype; any other dtype itself."""
    return {torch.complex32: torch.float16, torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)


def ulp(truth: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` at each |truth| (float64): eps * 2**floor(log2 |t|) for normal
    magnitudes, smallest_normal * eps (the subnormal spacing) below them and at 0. Non-finite
    magnitudes get a NaN spacing: `ulps` treats them apart. Complex dtypes: the spacing of the
    component dtype at the modulus."""
    info = torch.finfo(real_dtype(dtype))
    mag = truth.abs().to(torch.float64)
    _, exponent = torch.frexp(mag)  # mag = m * 2**e with m in [0.5, 1): floor(log2 mag) = e - 1
    spacing = torch.ldexp(torch.full_like(mag, info.eps), exponent - 1)
    spacing = torch.where(mag < info.smallest_normal, torch.full_like(mag, info.smallest_normal * info.eps), spacing)
    return torch.where(torch.isfinite(mag), spacing, torch.full_like(mag, float("nan")))


def representable(truth: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The truth rounded to `dtype` and widened back: infinite where it overflows `dtype`."""
    if truth.is_complex():
        real = real_dtype(dtype)
        return torch.complex(truth.real.to(real).double(), truth.imag.to(real).double())
    return truth.to(dtype).double()


def ulps(value: torch.Tensor, truth: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """|value - truth| in ulps of `dtype` (both widened). Where the truth is not finite in `dtype`
    (NaN, infinite, or overflowing it): 0 if the value is that same non-finite number (NaN for NaN),
    else inf; where the truth is finite and the value is not, inf (off scale)."""
    rounded = representable(truth, dtype)
    same = (value == rounded) | (torch.isnan(value) & torch.isnan(rounded))
    diff = (value - truth).abs()
    diff = diff.real if diff.is_complex() else diff
    inf = torch.full_like(diff, float("inf"))
    return torch.where(~torch.isfinite(rounded), torch.where(same, torch.zeros_like(diff), inf),
                       torch.where(torch.isfinite(value), diff / ulp(truth, dtype), inf))
