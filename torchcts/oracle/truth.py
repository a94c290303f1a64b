"""Truth beyond CPU: errors in ulps against a higher-precision result, and the judgement that uses
them (docs/oracles.md, "Truth beyond CPU").

CPU is an oracle with its own rounding. Given the op's result on float64 (complex128) copies of
the sample's inputs, the truth, this module measures how far the device and CPU each are from it
and judges the device by both: within the CPU tolerance, or no farther from the truth than CPU
(a device more accurate than CPU never fails); and, for pointwise ops, never much farther from
the truth than CPU even inside the tolerance. The constants live in oracle/precision.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torchcts.oracle.compare import (
    Mismatch,
    TolSpec,
    comparable,
    compared_parts,
    find_mismatch,
    outside_tolerance,
    resolve_tolerance,
    tensor_mismatch,
    widened,
)
from torchcts.oracle.metrics import real_dtype, representable, ulp, ulps
from torchcts.oracle.precision import (
    COND_FACTOR,
    CPU_ILL_ULPS,
    RESCUE_FACTOR,
    WORSE_FACTOR,
    WORSE_FLOOR_ULPS,
    Precision,
)

__all__ = ["Errors", "Truth", "errors", "identical", "judge", "judge_leaf", "truth_dtype", "ulp"]

# The dtype the truth is computed in, per output dtype. float64 and complex128 have none here:
# torch has nothing wider on CPU (docs/oracles.md says what that leaves out).
_WIDER = {torch.float16: torch.float64, torch.bfloat16: torch.float64, torch.float32: torch.float64,
          torch.complex32: torch.complex128, torch.complex64: torch.complex128}


@dataclass(frozen=True)
class Truth:
    """The op's result on the widened sample (`value`), or why there is none (`missing`)."""

    value: Any = None
    missing: str | None = None
    # The result's sensitivity to its inputs' rounding, shaped like `value` (floating leaves: the
    # summed |f(.., x (1 + eps), ..) - f(..)| over the floating inputs x); None: not measured.
    sensitivity: Any = None
    # Measures the sensitivity when first needed (`sensitive`): it runs the op once more per
    # floating input, and only an element that may fail as "much less accurate" needs it.
    measure: Callable[[], Any] | None = field(default=None, compare=False)
    # Measures the spread when first needed (`spread`): how far the truth moves when the inputs'
    # elements move by one eps each, with mixed signs (cases/opinfo/truth.py: spread), which shows
    # the cancellation that moving each input as a whole cannot; asked only for an element outside
    # the tolerance that no other rule rescues.
    measure_spread: Callable[[], Any] | None = field(default=None, compare=False)

    @functools.cached_property
    def sensitive(self) -> Any:
        """The sensitivity, measured once on first use (None: not measurable)."""
        if self.sensitivity is not None or self.measure is None:
            return self.sensitivity
        try:
            return self.measure()
        except Exception:  # noqa: BLE001 - a moved input the op rejects: no sensitivity (the rule is off)
            return None

    @functools.cached_property
    def spread(self) -> Any:
        """The spread, measured once on first use (None: not measurable)."""
        if self.measure_spread is None:
            return None
        try:
            return self.measure_spread()
        except Exception:  # noqa: BLE001 - a moved input the op rejects: no spread (no rescue by it)
            return None


def truth_dtype(dtype: torch.dtype) -> torch.dtype | None:
    """The truth's dtype for results of `dtype`; None when there is no wider one."""
    return _WIDER.get(dtype)


@dataclass
class Errors:
    """Per-element errors of one value tensor against the truth (float64 tensors, truth's shape)."""

    ulps: torch.Tensor  # |x - t| / ulp(t); 0 where x equals a non-finite truth; inf: off scale
    rel: torch.Tensor  # |x - t| / |t| where t is finite and non-zero, else NaN (not rated)

    @property
    def off_scale(self) -> torch.Tensor:
        return torch.isinf(self.ulps)


def errors(value: torch.Tensor, truth: torch.Tensor, dtype: torch.dtype) -> Errors:
    """How far `value` (widened) is from `truth` (widened) in ulps of `dtype`, and relatively.

    Where the truth is not finite in `dtype` (NaN, infinite, or overflowing it) the error is 0 if
    the value is that same non-finite number (NaN for NaN), else infinite; where the truth is
    finite and the value is not, infinite. Infinite errors are counted apart (off scale)."""
    special = ~torch.isfinite(representable(truth, dtype))
    diff = (value - truth).abs()
    mag = truth.abs()
    rated = ~special & torch.isfinite(value) & (mag > 0)
    rel = torch.where(rated, diff / torch.where(rated, mag, torch.ones_like(mag)), torch.full_like(diff, float("nan")))
    return Errors(ulps(value, truth, dtype), rel)


def _max(t: torch.Tensor) -> float | None:
    t = t[torch.isfinite(t)]
    return float(t.max()) if t.numel() else None


Sensitivity = torch.Tensor | Callable[[], torch.Tensor | None] | None


def judge_leaf(actual: torch.Tensor, expected: torch.Tensor, truth: torch.Tensor | None, tol: TolSpec,
               sensitivity: Sensitivity = None, path: str = "",
               spread: Sensitivity = None) -> tuple[Mismatch | None, Precision]:
    """The verdict on one floating output and its precision (docs/oracles.md, "Truth beyond CPU").

    Without a truth: the tolerance alone, and the device's distance from CPU in ulps. With one,
    per element: outside the CPU tolerance fails unless the device is no farther from the truth
    than RESCUE_FACTOR x CPU's error (and, where CPU is off scale, within WORSE_FLOOR_ULPS);
    inside it, given the `sensitivity` (pointwise ops only), fails when the device is farther
    from the truth than max(WORSE_FACTOR x CPU's error, WORSE_FLOOR_ULPS, COND_FACTOR x the
    sensitivity) where CPU's own error is at most CPU_ILL_ULPS and the truth is a normal number of the dtype.
    A callable `sensitivity` is called only when some element is past the first two bounds.
    An element outside the tolerance also passes when the device is within COND_FACTOR x the
    `spread` of the truth: the sample is so ill-conditioned there (terms that cancel) that rounding
    its inputs alone moves the answer that far, and CPU's answer is one of many (var's gradient at
    +-FLT_MAX: CPU 0, the device 0.032, float64 itself order-dependent). Called only then."""
    tol = resolve_tolerance(tol, expected.dtype)
    dtype = expected.dtype
    a, e, kept = compared_parts(comparable(actual), comparable(expected))  # finite_only()'s elements
    a64, e64 = widened(a), widened(e)
    _, outside = outside_tolerance(a64, e64, tol)
    vs_cpu = errors(a64, e64, dtype).ulps
    precision = Precision(max_ulp_vs_cpu=_max(vs_cpu))
    if truth is None:
        return (tensor_mismatch(actual, expected, tol, path) if bool(outside.any()) else None), precision
    t64 = widened(comparable(truth))
    if kept is not None and t64.shape == kept.shape:
        t64 = torch.where(kept, t64, torch.zeros_like(t64))
    dev, cpu = errors(a64, t64, dtype), errors(e64, t64, dtype)
    # Where CPU is off scale (NaN or inf where the truth is finite), "closer than CPU" must also be close.
    rescued = (outside & torch.isfinite(dev.ulps) & (dev.ulps <= RESCUE_FACTOR * cpu.ulps)
               & (torch.isfinite(cpu.ulps) | (dev.ulps <= WORSE_FLOOR_ULPS)))
    left = outside & ~rescued
    if spread is not None and bool(left.any()):
        rescued |= left & _within_spread(a64, t64, spread, expected.shape)
    worse = torch.zeros_like(outside)
    if sensitivity is not None:
        # Subnormal truths are left to the tolerance: flushing them to zero is a hardware mode, not a kernel's accuracy.
        normal = t64.abs() >= torch.finfo(real_dtype(dtype)).smallest_normal
        worse = (~outside & normal & (dev.ulps > torch.clamp(WORSE_FACTOR * cpu.ulps, min=WORSE_FLOOR_ULPS))
                 & (cpu.ulps <= CPU_ILL_ULPS))
        sens_value = (sensitivity() if callable(sensitivity) else sensitivity) if bool(worse.any()) else None
        if isinstance(sens_value, torch.Tensor) and sens_value.shape == expected.shape:
            sens = torch.nan_to_num(widened(comparable(sens_value)).abs() / ulp(t64, dtype), nan=float("inf"))
            worse &= dev.ulps > COND_FACTOR * sens
        else:  # no sensitivity: the rule is off
            worse = torch.zeros_like(outside)
    both = torch.isfinite(dev.ulps) & torch.isfinite(cpu.ulps)
    precision = Precision(
        truth=str(t64.dtype).removeprefix("torch."), max_ulp_vs_cpu=precision.max_ulp_vs_cpu,
        device_ulp_vs_truth=_max(dev.ulps), cpu_ulp_vs_truth=_max(cpu.ulps),
        device_rel_vs_truth=_max(dev.rel), cpu_rel_vs_truth=_max(cpu.rel),
        ulp_over_cpu=_max((dev.ulps - cpu.ulps)[both]), device_off_scale=int(dev.off_scale.sum()),
        cpu_off_scale=int(cpu.off_scale.sum()), rescued=int(rescued.sum()), worse=int(worse.sum()))
    if bool((outside & ~rescued).any()):
        mismatch = tensor_mismatch(actual, expected, tol, path)
        if mismatch is not None:
            mismatch.extra["precision"] = precision.to_json()
        return mismatch, precision
    if bool(worse.any()):
        return _less_accurate(a64, e64, t64, dev, cpu, worse, tol, path, precision), precision
    return None, precision


def _within_spread(a64: torch.Tensor, t64: torch.Tensor, spread: Sensitivity, shape: torch.Size) -> torch.Tensor:
    """Where the device is within COND_FACTOR x the truth's spread of the truth (False where the
    spread is unknown, or the device or the truth is not finite)."""
    value = spread() if callable(spread) else spread
    if not isinstance(value, torch.Tensor) or value.shape != shape:
        return torch.zeros(shape, dtype=torch.bool)
    reach = COND_FACTOR * widened(comparable(value)).abs()
    return torch.isfinite(a64) & torch.isfinite(t64) & ((a64 - t64).abs() <= reach)


def _less_accurate(a64: torch.Tensor, e64: torch.Tensor, t64: torch.Tensor, dev: Errors, cpu: Errors,
                   worse: torch.Tensor, tol: Any, path: str, precision: Precision) -> Mismatch:
    """The mismatch of a device inside the tolerance but much less accurate than CPU: the metrics
    of the elements that fail (their difference from CPU, inside the tolerance), at the worst one."""
    gap = torch.where(worse, dev.ulps, torch.full_like(dev.ulps, -1.0))
    index = [int(i) for i in torch.unravel_index(gap.argmax(), gap.shape)] if gap.dim() else []
    at = tuple(index)
    diff = (a64 - e64).abs()[worse]
    scale = e64.abs()[worse]
    rel = diff[scale > 0] / scale[scale > 0]
    dev_ulps, cpu_ulps, true = float(dev.ulps[at]), float(cpu.ulps[at]), _scalar(t64[at])
    what = (f"much less accurate than CPU against the {precision.truth} truth (worst element {dev_ulps:.3g} ulps "
            f"from it where CPU is {cpu_ulps:.3g}, truth {true}; allowed max({WORSE_FACTOR:g} x CPU, "
            f"{WORSE_FLOOR_ULPS:g} ulps, {COND_FACTOR:g} x the sample's sensitivity))")
    return Mismatch(what, path, max_abs_error=float(diff.max()), max_rel_error=float(rel.max()) if rel.numel() else None,
                    mismatched=int(worse.sum()), total=worse.numel(), first_index=index, first_actual=_scalar(a64[at]),
                    first_expected=_scalar(e64[at]), atol=tol.atol, rtol=tol.rtol,
                    extra={"truth_value": true, "device_ulps": dev_ulps, "cpu_ulps": cpu_ulps,
                           "worse_factor": WORSE_FACTOR, "worse_floor_ulps": WORSE_FLOOR_ULPS,
                           "cond_factor": COND_FACTOR, "precision": precision.to_json()})


def _scalar(v: torch.Tensor) -> Any:
    item = v.item()
    return [item.real, item.imag] if isinstance(item, complex) else item


def _measurable(a: Any, e: Any) -> bool:
    return (isinstance(e, torch.Tensor) and isinstance(a, torch.Tensor) and (e.is_floating_point() or e.is_complex())
            and a.shape == e.shape and a.dtype == e.dtype)


def judge(actual: Any, expected: Any, truth: Truth, tol: TolSpec, *, strict: bool) -> tuple[Mismatch | None, Precision]:
    """The first mismatch of a result (as find_mismatch, with the truth's judgement on floating
    outputs) and the precision of all its floating outputs. `strict`: the op is pointwise, so
    "much less accurate than CPU" applies (oracle/precision.py: STRICT_CATEGORIES)."""
    no_truth = truth.missing
    try:
        a_leaves, a_spec = pytree.tree_flatten_with_path(actual)
        e_leaves, e_spec = pytree.tree_flatten_with_path(expected)
    except Exception:  # noqa: BLE001 - a pytree node without key paths: the plain comparison
        return find_mismatch(actual, expected, tol), Precision(no_truth="the output's structure has no key paths")
    if a_spec != e_spec:  # a structural difference: find_mismatch says which
        return find_mismatch(actual, expected, tol), Precision(no_truth=no_truth)
    t_leaves: list[Any] = [None] * len(e_leaves)
    if truth.value is not None:
        flat, t_spec = pytree.tree_flatten(truth.value)
        if t_spec == e_spec:
            t_leaves = flat
        else:
            no_truth = "the op's result on float64 inputs has another structure"
    first: Mismatch | None = None
    precision = Precision(no_truth=no_truth)
    for k, ((key, a), (_, e), t) in enumerate(zip(a_leaves, e_leaves, t_leaves, strict=True)):
        path = pytree.keystr(key)
        if not _measurable(a, e):
            m = find_mismatch(a, e, tol, path)
        else:
            wide = truth_dtype(e.dtype)
            usable = isinstance(t, torch.Tensor) and t.dtype == wide and t.shape == e.shape
            if t is not None and not usable and wide is not None:
                precision.no_truth = precision.no_truth or "the op's output dtype does not follow its inputs'"
            sens = _sensitivity_leaf(truth, k, len(e_leaves)) if usable and strict else None
            m, p = judge_leaf(a, e, t if usable else None, tol, sens, path,
                              _spread_leaf(truth, k, len(e_leaves)) if usable else None)
            precision = precision.merge(p)
        first = first or m
    precision.samples = 1 if precision.truth else 0
    return first, precision


def _sensitivity_leaf(truth: Truth, k: int, count: int) -> Sensitivity:
    """The k-th leaf of the truth's sensitivity, measured only when judge_leaf asks for it."""
    if truth.sensitivity is None and truth.measure is None:
        return None
    return _leaf(lambda: truth.sensitive, k, count)


def _spread_leaf(truth: Truth, k: int, count: int) -> Sensitivity:
    """The k-th leaf of the truth's spread, measured only when judge_leaf asks for it."""
    return None if truth.measure_spread is None else _leaf(lambda: truth.spread, k, count)


def _leaf(tree: Callable[[], Any], k: int, count: int) -> Callable[[], torch.Tensor | None]:
    def leaf() -> torch.Tensor | None:
        leaves = pytree.tree_leaves(tree())
        return leaves[k] if len(leaves) == count and isinstance(leaves[k], torch.Tensor) else None

    return leaf


def identical(actual: Any, expected: Any) -> bool:
    """The device's result equals CPU's element for element (NaN where CPU has NaN; signed zeros
    equal): then the truth can change no verdict (it rescues only elements outside the tolerance
    and fails only elements farther from it than CPU), so it need not be computed."""
    try:
        a_leaves, a_spec = pytree.tree_flatten(actual)
        e_leaves, e_spec = pytree.tree_flatten(expected)
    except Exception:  # noqa: BLE001 - an output pytree cannot flatten: judge it the long way
        return False
    if a_spec != e_spec:
        return False
    for a, e in zip(a_leaves, e_leaves, strict=True):
        if isinstance(e, torch.Tensor):
            if not (isinstance(a, torch.Tensor) and a.shape == e.shape and a.dtype == e.dtype
                    and a.layout == e.layout == torch.strided):
                return False
            a, e = comparable(a), comparable(e)
            if a.is_complex():
                a, e = torch.view_as_real(a), torch.view_as_real(e)
            if not bool(((a == e) | (torch.isnan(a) & torch.isnan(e))).all()):
                return False
        elif not isinstance(a, type(e)) or not _same_scalar(a, e):
            return False
    return True


def _same_scalar(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) or (isinstance(a, float) and a != a and b != b)
    except Exception:  # noqa: BLE001 - a leaf without equality: not provably identical
        return False
