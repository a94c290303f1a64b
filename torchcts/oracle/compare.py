"""Comparison of device results with the CPU reference, with metrics a kernel engineer can act on.

torch.testing.assert_close decides pass/fail; on failure we compute the structured metrics
(max abs/rel error, mismatch count, first mismatch) that go into the case record.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

import torch

from torchcts.oracle import metrics
from torchcts.oracle.allowed import AllowedLookup
from torchcts.oracle.metrics import widened
from torchcts.oracle.mismatch import Mismatch, OracleMismatch
from torchcts.oracle.tolerances import Tolerance

__all__ = ["Mismatch", "OracleMismatch", "TolSpec", "assert_matches", "find_mismatch", "finite_only",
           "resolve_tolerance"]

# One tolerance for everything, or one per expected tensor dtype (an op may return int indices
# beside float values, or promote integer inputs to float outputs).
TolSpec = Tolerance | Callable[[torch.dtype], Tolerance]


# Inside finite_only(): an element where CPU's answer is a NaN or an infinity is not compared (None:
# every element is; True: also where the device's answer is one).
_FINITE_ONLY: ContextVar[bool | None] = ContextVar("finite_only", default=None)


@contextlib.contextmanager
def finite_only(device_too: bool = False) -> Iterator[None]:
    """Compare only the elements where CPU's answer is finite: a backend that does not claim IEEE 754
    owes nothing where CPU's answer is a NaN or an infinity, but every element CPU answers with a
    finite value is still judged, a NaN or an infinity of the device's there included. `device_too`:
    not where the device's answer is a NaN or an infinity either (an overflow of its float32
    accumulation, which CPU's float64 one avoids: cases/explore/run.py `_within_range`)."""
    token = _FINITE_ONLY.set(device_too)
    try:
        yield
    finally:
        _FINITE_ONLY.reset(token)


def compared_parts(a: torch.Tensor, e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """`a` and `e` as finite_only() compares them (0 on both sides where `e`, with `device_too` also
    `a`, is not finite; floating and complex only), and the mask of the elements kept (None: all)."""
    device_too = _FINITE_ONLY.get()
    if device_too is None or not (e.is_floating_point() or e.is_complex()) or a.shape != e.shape:
        return a, e, None
    keep = torch.isfinite(e)
    if device_too and (a.is_floating_point() or a.is_complex()):
        keep &= torch.isfinite(a)
    if bool(keep.all()):
        return a, e, None
    return torch.where(keep, a, torch.zeros_like(a)), torch.where(keep, e, torch.zeros_like(e)), keep


def resolve_tolerance(tol: TolSpec, dtype: torch.dtype) -> Tolerance:
    return tol if isinstance(tol, Tolerance) else tol(dtype)


def _scalar(v: torch.Tensor) -> Any:
    item = v.item()
    return [item.real, item.imag] if isinstance(item, complex) else item


def comparable(t: torch.Tensor) -> torch.Tensor:
    """A dense CPU tensor in a dtype CPU comparison kernels support (chalf, bcomplex32 and float8
    widened: every complex dtype narrower than complex64, so a release's new one is compared too)."""
    t = t.detach().to("cpu").resolve_conj().resolve_neg()
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.dtype.is_complex and t.dtype.itemsize < torch.complex64.itemsize:
        return t.to(torch.complex64)
    if t.dtype.is_floating_point and t.dtype.itemsize == 1:
        return t.to(torch.float32)
    return t


def layout(t: torch.Tensor) -> str:
    """dtype, shape and (strided) strides and storage offset: `float32[5, 7] strides [1, 5]`."""
    text = f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}"
    if t.layout != torch.strided:
        return f"{text} {str(t.layout).removeprefix('torch.')}"
    text += f" strides {list(t.stride())}"
    return text + (f" offset {t.storage_offset()}" if t.storage_offset() else "")


def _layouts(actual: torch.Tensor, expected: torch.Tensor) -> dict[str, str]:
    return {"actual_layout": layout(actual), "expected_layout": layout(expected)}


def outside_tolerance(a64: torch.Tensor, e64: torch.Tensor, tol: Tolerance) -> tuple[torch.Tensor, torch.Tensor]:
    """metrics.outside_tolerance with a Tolerance: the one elementwise rule."""
    return metrics.outside_tolerance(a64, e64, tol.atol, tol.rtol)


def _zero_signs_differ(a: torch.Tensor, e: torch.Tensor) -> torch.Tensor | None:
    """Where both values are zero but their signs differ (each component of a complex), None for
    non-floating tensors: the one difference `==` cannot see, and an exact result must not have."""
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        return None
    ar, er = (torch.view_as_real(a), torch.view_as_real(e)) if a.dtype.is_complex else (a, e)
    differ = (ar == 0) & (er == 0) & (torch.signbit(ar) != torch.signbit(er))
    return differ.any(-1) if a.dtype.is_complex else differ


def tensor_mismatch(actual: torch.Tensor, expected: torch.Tensor, tol: TolSpec, path: str = "",
                    allowed: AllowedLookup | None = None) -> Mismatch | None:
    """None when equal within tolerance (NaN equal to NaN), else the metrics of the difference.

    Shape and dtype mismatches, and value mismatches where the strides differ too, carry both
    layouts (dtype, shape, strides). The relative error is taken over the differing elements whose
    expected value is not 0; None when every one expects 0 (dividing by a tiny floor gave 1e308).
    `allowed` (oracle/allowed.py) may accept another shape or dtype at this path: an empty
    alternative has nothing to compare, one of CPU's shape is compared in CPU's dtype."""
    tol = resolve_tolerance(tol, expected.dtype)
    if allowed is not None and (actual.shape != expected.shape or actual.dtype != expected.dtype):
        if allowed(path, actual, expected) is not None:
            if actual.numel() == 0:
                return None
            if actual.shape == expected.shape:
                actual = actual.to(expected.dtype)
    if actual.shape != expected.shape:
        return Mismatch("shape mismatch", path, extra={"actual": list(actual.shape), "expected": list(expected.shape),
                                                         **_layouts(actual, expected)})
    if actual.dtype != expected.dtype:
        return Mismatch("dtype mismatch", path, extra={"actual": str(actual.dtype), "expected": str(expected.dtype),
                                                         **_layouts(actual, expected)})
    a = comparable(actual)
    e = comparable(expected)
    a, e, _ = compared_parts(a, e)
    zero_sign = _zero_signs_differ(a, e) if tol.exact and tol.signed_zero else None
    if zero_sign is None or not bool(zero_sign.any()):
        if torch.equal(a, e):  # the common case, ten times cheaper than assert_close
            return None
        try:
            torch.testing.assert_close(
                a, e, atol=tol.atol, rtol=tol.rtol, equal_nan=True, check_device=False, check_stride=False
            )
            return None
        except AssertionError:
            pass
    a64, e64 = widened(a), widened(e)
    diff, bad = outside_tolerance(a64, e64, tol)
    what = "values differ"
    if zero_sign is not None:
        what = "values differ" if bool((bad & ~zero_sign).any()) else "sign of zero differs"
        bad = bad | zero_sign
    max_abs, max_rel = metrics.error_maxima(diff, bad, e64)
    idx = bad.nonzero()
    first = idx[0].tolist() if idx.shape[0] else None  # [] for a 0-d tensor
    extra: dict[str, Any] = {}
    if actual.layout == expected.layout == torch.strided and actual.stride() != expected.stride():
        extra.update(_layouts(actual, expected))
    if max_rel is None and bad.any():  # every differing element expects 0: no relative error
        scale = e64.abs().real if e64.is_complex() else e64.abs()
        finite_scale = scale[torch.isfinite(scale)]
        extra["max_abs_expected"] = float(finite_scale.max()) if finite_scale.numel() else 0.0
    if tol.exact and (a.dtype.is_floating_point or a.dtype.is_complex):
        extra["compared"] = "exact"  # bit for bit (oracle/exactness.py), not within a float tolerance
    return Mismatch(
        what,
        path,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        extra=extra,
        mismatched=int(bad.sum()),
        total=a.numel(),
        first_index=first,
        first_actual=_scalar(a[tuple(first)]) if first is not None else None,
        first_expected=_scalar(e[tuple(first)]) if first is not None else None,
        atol=tol.atol,
        rtol=tol.rtol,
    )


def find_mismatch(actual: Any, expected: Any, tol: TolSpec, path: str = "",
                  allowed: AllowedLookup | None = None) -> Mismatch | None:
    """Walk tensors, tuples, lists, dicts and scalars; return the first mismatch (`allowed`: the
    allowed answers of this comparison's outputs, oracle/allowed.py)."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return Mismatch(f"expected a tensor, got {type(actual).__name__}", path)
        return tensor_mismatch(actual, expected, tol, path, allowed)
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            return Mismatch("dict keys differ", path,
                            first_actual=_shown(sorted(actual, key=repr) if isinstance(actual, dict) else actual),
                            first_expected=_shown(sorted(expected, key=repr)))
        for k in expected:
            m = find_mismatch(actual[k], expected[k], tol, f"{path}[{k!r}]", allowed)
            if m:
                return m
        return None
    if isinstance(expected, Sequence) and not isinstance(expected, (str, bytes)):
        if not isinstance(actual, Sequence) or len(actual) != len(expected):
            got = f"{type(actual).__name__} of length {len(actual)}" if isinstance(actual, Sequence) else type(actual).__name__
            return Mismatch(f"expected a sequence of length {len(expected)}, got a {got}", path,
                            first_actual=_shown(actual), first_expected=_shown(expected))
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            m = find_mismatch(a, e, tol, f"{path}[{i}]", allowed)
            if m:
                return m
        return None
    if isinstance(expected, (bool, int, float, complex)) and not isinstance(actual, torch.Tensor):
        if isinstance(expected, bool) or isinstance(expected, int) and isinstance(actual, int):
            return None if actual == expected else Mismatch("values differ", path, first_actual=actual, first_expected=expected)
        wide = torch.complex128 if isinstance(actual, complex) or isinstance(expected, complex) else torch.float64
        return tensor_mismatch(torch.tensor(actual, dtype=wide), torch.tensor(expected, dtype=wide), tol, path)
    if isinstance(actual, torch.Tensor):
        return Mismatch(f"expected {type(expected).__name__}, got a tensor", path)
    return None if actual == expected else Mismatch("values differ", path, first_actual=repr(actual),
                                                    first_expected=repr(expected))


def _shown(value: Any, limit: int = 200) -> str:
    """A value as a mismatch shows it (both sides, so what differs is read, not guessed): a shape
    `(2, 3)`, a short list; tensors as dtype and shape, never their data."""
    if isinstance(value, torch.Tensor):
        return f"tensor {str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_shown(v, limit) for v in value[:16]) + (", ..." if len(value) > 16 else "")
        text = f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def max_abs_error(actual: Any, expected: Any) -> float | None:
    """Largest |actual - expected| over matching floating tensors (None when there are none):
    recorded for passing cases so `compare` can show precision drift."""
    if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor):
        if not (expected.is_floating_point() or expected.is_complex()) or actual.shape != expected.shape:
            return None
        if expected.numel() == 0:
            return 0.0
        a, e = comparable(actual), comparable(expected)  # dense CPU tensors, any layout
        if a.dtype == e.dtype and torch.equal(a, e):  # the common case, without a float64 copy of both
            return 0.0
        wide = torch.complex128 if expected.is_complex() else torch.float64
        diff = (a.to(wide) - e.to(wide)).abs()
        diff = diff[torch.isfinite(diff)]
        return float(diff.max()) if diff.numel() else 0.0
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        errs = [e for e in map(max_abs_error, actual, expected) if e is not None]
        return max(errs) if errs else None
    return None


def assert_matches(actual: Any, expected: Any, tol: TolSpec, allowed: AllowedLookup | None = None,
                   path: str = "") -> None:
    """Raise OracleMismatch if actual differs from expected beyond tol (and the allowed answers;
    `path`: where they sit in a larger output, for the mismatch's location)."""
    m = find_mismatch(actual, expected, tol, path, allowed=allowed)
    if m is not None:
        raise OracleMismatch(m)
