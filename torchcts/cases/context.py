"""What a running case sees: the device under test, the claims, tolerances, and the oracle helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torchcts.cases.observe import unobserved
from torchcts.cases.verdict import Verdict
from torchcts.model.case import Case, NotApplicable
from torchcts.model.manifest import Manifest
from torchcts.oracle.allowed import AllowedLookup, Alternative
from torchcts.oracle.compare import OracleMismatch, assert_matches, find_mismatch, max_abs_error
from torchcts.oracle.exactness import Exact
from torchcts.oracle.precision import STRICT_CATEGORIES, Precision
from torchcts.oracle.tolerances import Tolerance, tolerance_for
from torchcts.oracle.truth import Truth, identical, judge
from torchcts.oracle.weak import weakness


def dtype_of(name: str) -> torch.dtype:
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise NotApplicable(f"this PyTorch build has no dtype {name}")
    return dt


# PyTorch fixes these dtypes for indices, counts and masks whatever the values' dtype: a claim of the
# values' dtype covers them (CaseContext.claims_value_dtype).
INDEX_DTYPES = (torch.int64, torch.int32, torch.bool)
# What names one sample in a record's `info`: what a crash in that sample's call is recorded with.
SAMPLE_KEYS = ("sample_index", "sample", "recipe", "repro")


@dataclass
class CaseContext:
    """Handed to every case function as its first argument."""

    device: torch.device
    manifest: Manifest
    case: Case | None = None
    # The run's sample selection (--max-samples or the manifest's max_samples; --sample N).
    max_samples: int | None = None
    sample: int | None = None
    validation: bool = False  # a --validation run (repro commands say --validation)
    # Explored samples per explore case (--explore, else the level's default; cases/explore/budget.py);
    # None outside a run: the case level's default.
    explore: int | None = None
    # --corpus DIR: the counterexample corpus replayed first and merged into (cases/explore/corpus.py).
    corpus: Path | None = None
    # The run folder, where explore cases save what they find (<run>/corpus/); None outside a run.
    run_dir: Path | None = None
    # What the case body builds for its record (cases/verdict.py): the oracle's findings, the case's
    # notes, what reached the device; engine/runner.py gives each rerun its own (`Verdict.for_rerun`).
    verdict: Verdict = field(default_factory=Verdict)
    # Told the sample the case turns to (SAMPLE_KEYS of `info`) before the device sees it: a worker
    # keeps it where the record of a process that dies in the call is built (workers/isolation.py:
    # sample_noter), so a crash names its sample as a failure does. None outside an isolated run.
    on_sample: Callable[[dict[str, Any]], None] | None = None

    @property
    def info(self) -> dict[str, Any]:
        """The details the case attaches for its record (`describe`): the verdict's `info`."""
        return self.verdict.info

    @property
    def device_type(self) -> str:
        return self.device.type

    def claims(self, capability: str) -> bool:
        return self.manifest.claims(capability)

    def claims_dtype(self, dtype: str | torch.dtype) -> bool:
        name = dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")
        return self.manifest.claims_dtype(name)

    def claims_value_dtype(self, dtype: torch.dtype) -> bool:
        """Whether a tensor of this dtype met in a case (an input, a result) is within the claims: a
        claimed dtype, or one PyTorch fixes for indices, counts and masks (INDEX_DTYPES) whatever the
        values' dtype (median's indices, index_add's index, where's condition)."""
        return dtype in INDEX_DTYPES or self.claims_dtype(dtype)

    def unclaimed(self, dtypes: Iterable[torch.dtype]) -> list[str]:
        """The names of `dtypes` outside the claims (claims_value_dtype), sorted: what a case computing
        through them says when the device refuses it (opinfo, out_variants, generated)."""
        return sorted({str(d).removeprefix("torch.") for d in dtypes if not self.claims_value_dtype(d)})

    @property
    def seed(self) -> int:
        return self.manifest.seed

    def tolerance(self, category: str, dtype: torch.dtype | str) -> Tolerance:
        name = dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")
        return tolerance_for(category, name, self.manifest.tolerance_overrides)

    @unobserved()  # the comparison is TorchCTS's work, not the device's
    def assert_close(self, actual: Any, expected: Any, *, category: str = "elementwise", dtype: Any = None,
                     atol_floor: float = 0.0, truth: Truth | Callable[[], Truth] | None = None,
                     allowed: AllowedLookup | None = None, exact: Exact | None = None, constant: bool = False) -> None:
        """Compare a device result with the CPU reference; raises OracleMismatch with metrics.

        Without `dtype`, each expected tensor gets the tolerance of its own dtype. `atol_floor` raises
        the absolute tolerance to what the sample's conditioning demands (oracle/conditioning.py).
        With `truth` (the op's result on widened inputs, or why there is none; a callable computes it
        only when the result is not identical to CPU's) floating outputs are judged against it too and
        their precision is kept for the record (oracle/truth.py).
        `allowed`: the outputs' allowed answers (oracle/allowed.py); a rule that accepts one is named
        in the record (`allowed_answers`).
        `exact` (oracle/exactness.py) compares the outputs it covers bit for bit instead. A pass is
        judged for weakness (oracle/weak.py), the case's `weak` verdict, unless `constant`: the result is
        constant by definition (a factory, a fill), so a constant or zero reference is all it can be.
        Where the manifest does not claim `ieee754`, CPU's NaN and infinities demand nothing (`_within_ieee754`)."""
        if not self.claims("ieee754"):
            expected = self._within_ieee754(actual, expected)
        first = dtype if dtype is not None else _first_dtype(expected) or torch.float32

        def tol_of(dt: Any) -> Tolerance:
            tol = self.tolerance(category, dt)
            return Tolerance(max(tol.atol, atol_floor), tol.rtol) if atol_floor > tol.atol and not tol.exact else tol

        def seen(tol: Tolerance) -> Tolerance:
            self.verdict.compared(tol.exact)
            return tol

        def spec(output: int | None) -> Tolerance | Callable[[torch.dtype], Tolerance]:
            if exact is not None and (exact.outputs is None or output in exact.outputs):
                return exact.tolerance()
            return tol_of(dtype) if dtype is not None else tol_of

        def counted(tols: Tolerance | Callable[[torch.dtype], Tolerance]) -> Callable[[torch.dtype], Tolerance]:
            return lambda dt: seen(tols(dt) if callable(tols) else tols)

        tol = exact.tolerance() if exact is not None and exact.covers(0) else tol_of(first)
        self.info.setdefault("tolerance", {"category": category, "atol": tol.atol, "rtol": tol.rtol,
                                           **({"exact": True} if tol.exact and exact is not None else {})})
        lookup = self._recording(allowed)
        if truth is not None and exact is None:  # an exact result is never rescued by a truth
            self._judge_by_truth(actual, expected, truth, counted(spec(None)), lookup, category)
            self._weigh(expected, spec(None), constant)
        else:
            split = exact is not None and exact.outputs is not None
            for a, e, i in _outputs(actual, expected) if split else [(actual, expected, None)]:
                tols = spec(i)
                path = f"[{i}]" if i is not None and isinstance(expected, (list, tuple)) else ""
                assert_matches(a, e, counted(tols), lookup, path=path)
                self._weigh(e, tols, constant)
        err = max_abs_error(actual, expected)
        if err is not None:  # passing precision, so `compare` sees drift before it fails
            self.info["max_abs_error"] = max(err, self.info.get("max_abs_error", 0.0))

    def _within_ieee754(self, actual: Any, expected: Any) -> Any:
        """`expected` with each NaN or infinity replaced by the device's value there: a backend that does
        not claim IEEE 754 semantics owes no answer where CPU's is one (pytorch_ocl: bool / bool gives
        1.0 where CPU gives inf); counted in `info["not_ieee754"]`. Finite answers are still demanded."""
        leaves, spec = pytree.tree_flatten(expected)
        got, got_spec = pytree.tree_flatten(actual)
        if spec != got_spec:
            return expected

        def take(a: Any, e: Any) -> Any:
            if not (isinstance(a, torch.Tensor) and isinstance(e, torch.Tensor)) or a.shape != e.shape \
                    or e.layout != torch.strided or not (e.is_floating_point() or e.is_complex()):
                return e
            with unobserved():
                unsure = ~torch.isfinite(e)
                if not bool(unsure.any()):
                    return e
                self.info["not_ieee754"] = self.info.get("not_ieee754", 0) + int(unsure.sum())
                return torch.where(unsure, a.detach().to("cpu", e.dtype), e)

        return pytree.tree_unflatten([take(a, e) for a, e in zip(got, leaves, strict=True)], spec)

    @contextmanager
    def helper_op(self, op: str) -> Iterator[None]:
        """Around a device op the case needs but does not test (a write that checks aliasing, a
        check that the device still computes): a failure inside is reported against `op`, so a gap
        in that op is not counted against the op under test. Inputs are prepared on CPU instead
        wherever the case allows (cases/helpers.py: `sample`, then `.to(device)`)."""
        try:
            yield
        except NotApplicable:
            raise
        except Exception as exc:
            self.verdict.helper_failures.append((exc, op))
            raise

    def _recording(self, allowed: AllowedLookup | None) -> AllowedLookup | None:
        if allowed is None:
            return None

        def lookup(path: str, actual: torch.Tensor, expected: torch.Tensor) -> Alternative | None:
            alt = allowed(path, actual, expected)
            if alt is not None:
                self.note_allowed(alt.rule)
            return alt

        return lookup

    def note_allowed(self, rule: str) -> None:
        """Name an allowed-answer rule (oracle/allowed.py) that accepted part of this case's result."""
        used = self.info.setdefault("allowed_answers", [])
        if rule not in used:
            used.append(rule)

    def _judge_by_truth(self, actual: Any, expected: Any, truth: Truth | Callable[[], Truth], spec: Any,
                        lookup: AllowedLookup | None, category: str) -> None:
        """The truth's judgement (oracle/truth.py), its precision kept for the record; an output layout
        PyTorch allows (oracle/allowed.py) has nothing to judge by the truth. A result identical to
        CPU's is judged by the tolerance alone: the truth could change no verdict, so it is not computed."""
        if identical(actual, expected):
            assert_matches(actual, expected, spec, lookup)
            self.verdict.keep_precision(Precision(max_ulp_vs_cpu=0.0, identical=1))
            return
        try:
            truth = truth() if callable(truth) else truth
            mismatch, precision = judge(actual, expected, truth, spec, strict=category in STRICT_CATEGORIES)
        except Exception as exc:  # noqa: BLE001 - never a verdict from TorchCTS's own measuring
            assert_matches(actual, expected, spec, lookup)
            mismatch, precision = None, Precision(no_truth=f"measuring against the truth raised {type(exc).__name__}")
        self.verdict.keep_precision(precision)
        if mismatch is not None and lookup is not None and mismatch.what in ("shape mismatch", "dtype mismatch") \
                and find_mismatch(actual, expected, spec, allowed=lookup) is None:
            mismatch = None
        if mismatch is not None:
            raise OracleMismatch(mismatch)

    def _weigh(self, expected: Any, tols: Any, constant: bool) -> None:
        """A passing comparison's strength (oracle/weak.py), unless the result is constant by definition."""
        judged, reason = weakness(expected, tols)
        if judged and not constant:
            self.verdict.weighed(reason)

    def not_applicable(self, reason: str) -> None:
        raise NotApplicable(reason)

    def describe(self, **details: Any) -> None:
        """Attach what a person needs to understand a failure (sample shapes, args...)."""
        self.info.update(details)
        if self.on_sample is not None and "sample" in details:
            self.on_sample({k: self.info[k] for k in SAMPLE_KEYS if k in self.info})


def _outputs(actual: Any, expected: Any) -> list[tuple[Any, Any, int | None]]:
    """(actual, expected, index) per top-level output; one pair, index 0, for a single tensor; the
    whole pair, index None, when the structures differ (the comparison reports that)."""
    if isinstance(expected, torch.Tensor):
        return [(actual, expected, 0)]
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)) and len(actual) == len(expected):
        return [(a, e, i) for i, (a, e) in enumerate(zip(actual, expected, strict=True))]
    return [(actual, expected, None)]


def _first_dtype(obj: Any) -> torch.dtype | None:
    if isinstance(obj, torch.Tensor):
        return obj.dtype
    if isinstance(obj, (list, tuple)):
        for o in obj:
            d = _first_dtype(o)
            if d is not None:
                return d
    if isinstance(obj, dict):
        return _first_dtype(list(obj.values()))
    return None
