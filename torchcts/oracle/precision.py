"""The precision of one case against the higher-precision truth: the record's `precision` object
and the constants of the judgement (docs/oracles.md, "Truth beyond CPU").

Kept free of torch, like oracle/mismatch.py: the run controller reads these objects from
cases.jsonl to build report.html's precision profile and must never import torch. The tensor
side (ulps, the per-element judgement) is oracle/truth.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

# -- the judgement's constants (oracle/truth.py: judge_leaf) -------------------------------------
# A device element inside the CPU tolerance still fails when it is farther from the truth than
# max(WORSE_FACTOR * CPU's error, WORSE_FLOOR_ULPS): 8x is three bits worse than CPU's own kernel;
# 32 ulps is above the ulp bounds vendors document for correctly implemented (not fast-math)
# single-precision pointwise functions (CUDA's: 1-4 ulps for most, 9 at most away from their
# zeros, where the sensitivity takes over), so a kernel within a documented bound does not fail.
WORSE_FACTOR = 8.0
WORSE_FLOOR_ULPS = 32.0
# ... and than COND_FACTOR x the sample's sensitivity: how far the truth moves when each floating
# input in turn is moved by one eps of its dtype (the summed |f(.., x (1 + eps), ..) - f(..)|, in
# ulps of the result). A correct composite kernel (PyTorch's decompositions: a + v * t1 * t2 in
# two roundings) loses about that much where its terms cancel; 8x is its rounding count with room.
# Without a sensitivity the rule is off.
COND_FACTOR = 8.0
# ... unless CPU is itself more than this far from the truth at that element: an ill-conditioned
# sample (a zero of the function, cancellation), where ulps of the result measure the sample, not
# the kernel. Such elements are judged by the tolerance alone.
CPU_ILL_ULPS = 16.0
# An element outside the CPU tolerance passes when the device is no farther from the truth than
# CPU is (factor 1): a device more accurate than CPU never fails.
RESCUE_FACTOR = 1.0
# The "much worse" rule applies to pointwise ops only (tolerance category `elementwise`): in a
# reduction, contraction or composite op an element's error depends on the summation order and
# the conditioning of the whole input, which ulps of one result cannot separate from the kernel.
STRICT_CATEGORIES = frozenset({"elementwise"})


@dataclass
class Precision:
    """Worst errors of one case's floating outputs over its samples (None: nothing measured).

    Ulps are of the output's own dtype at the truth's magnitude (oracle/truth.py: ulp); relative
    errors are |x - truth| / |truth| over elements whose truth is finite and non-zero. Elements
    where a value is non-finite and the truth is not (or the reverse) are counted apart, never
    folded into a maximum."""

    truth: str | None = None  # "float64" / "complex128": the truth's dtype; None when no sample had one
    no_truth: str | None = None  # why (the first reason) a sample had no truth
    samples: int = 0  # samples measured against the truth
    max_ulp_vs_cpu: float | None = None  # worst |device - CPU| in ulps (also without a truth)
    device_ulp_vs_truth: float | None = None  # worst |device - truth| in ulps
    cpu_ulp_vs_truth: float | None = None  # worst |CPU - truth| in ulps
    device_rel_vs_truth: float | None = None  # worst relative error of the device
    cpu_rel_vs_truth: float | None = None  # worst relative error of CPU
    ulp_over_cpu: float | None = None  # worst element's device ulps minus CPU's (> 0: the device is less accurate there)
    device_off_scale: int = 0  # elements non-finite on the device where the truth is finite (or the reverse)
    cpu_off_scale: int = 0  # the same for CPU
    rescued: int = 0  # elements outside the CPU tolerance that passed because the device is closer to the truth
    worse: int = 0  # elements inside the tolerance that failed as much less accurate than CPU
    # Samples whose result equals CPU's, element for element: the truth cannot change their verdict
    # and the device is exactly as far from it as CPU, so it was not computed (oracle/truth.py: identical).
    identical: int = 0

    def merge(self, other: Precision) -> Precision:
        """The worst of both (a case's samples, or outputs)."""
        out = Precision(truth=self.truth or other.truth, no_truth=self.no_truth or other.no_truth)
        for name in _MAXED:
            setattr(out, name, _worst(getattr(self, name), getattr(other, name)))
        for name in _COUNTS:
            setattr(out, name, getattr(self, name) + getattr(other, name))
        return out

    def to_json(self) -> dict[str, Any]:
        """The record's `precision` object: the fields set, numbers finite and rounded to 4 digits."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or (f.name in _COUNTS and value == 0 and f.name != "samples"):
                continue
            out[f.name] = float(f"{value:.4g}") if isinstance(value, float) else value
        return out

    @classmethod
    def from_json(cls, data: Any) -> Precision:
        """A record's `precision` object, each field checked (untrusted: a wrong type reads as unset)."""
        out = cls()
        if not isinstance(data, dict):
            return out
        for name in ("truth", "no_truth"):
            if isinstance(data.get(name), str):
                setattr(out, name, data[name][:200])
        for name in _MAXED:
            value = data.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                setattr(out, name, float(value))
        for name in _COUNTS:
            value = data.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                setattr(out, name, value)
        return out


_MAXED = ("max_ulp_vs_cpu", "device_ulp_vs_truth", "cpu_ulp_vs_truth", "device_rel_vs_truth", "cpu_rel_vs_truth",
          "ulp_over_cpu")
_COUNTS = ("samples", "device_off_scale", "cpu_off_scale", "rescued", "worse", "identical")


def _worst(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)
