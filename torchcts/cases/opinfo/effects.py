"""What a call does besides returning (issue 39 item 2): the arguments it leaves behind, and
results that must stay what they were while later calls run.

A kernel can return the right value and still be wrong: it writes its scratch into an input, it
forgets the running statistics CPU updates, it hands out a buffer that the next call of the same
shape overwrites. The OpInfo suite's value checks (cases/opinfo/run.py: check_call) judge two more
things on every sample of its functional kinds, explored samples included:

- `check_arguments`: every tensor argument after the device's call equals CPU's same argument after
  CPU's call (within the case's tolerance): a mutation CPU makes must be made alike, one CPU does
  not make is a failure ("an argument after the call").
- `Retained`: each sample's device result is kept alive, with a CPU snapshot of what it held when
  it was checked; after the case's last sample every result must still hold it, bit for bit.
- `Retained.repeat` (the forward kind): after that, the case's first sample is called once in
  another dtype of the same shape (`INTERLEAVE`) and once more as it was; the repeated result must
  equal the first within the case's tolerance (rounding may differ where PyTorch does not promise
  determinism; a kernel or graph cached by shape alone, or state kept between calls, gives
  another value). A plain sweep never calls one shape as dtype A, B, A in a row: its cases run
  one dtype each, in order. Where the manifest claims `deterministic`, the first sample is then
  called twice more with deterministic algorithms on, and the two must agree bit for bit.

Not with a property oracle (random ops draw differently on each side). PyTorch's
`SchemaCheckMode` (torch._subclasses.schema_check_mode) checks each aten call against its schema's
`(a!)` annotations; it clones every argument of every aten op a call makes (composites included),
which costs more than the call, so the comparison with CPU's arguments stands in for it: whatever
CPU's kernel (the reference) mutates is what the schema allows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torchcts import compat
from torchcts.cases.observe import unobserved
from torchcts.cases.opinfo.samples import tensors_of, transformed
from torchcts.errors import first_line
from torchcts.oracle.compare import OracleMismatch, TolSpec, find_mismatch
from torchcts.oracle.tolerances import Tolerance


def arguments(sample: Any) -> list[torch.Tensor]:
    """The sample's tensor arguments, in order (input, positional, keyword)."""
    return tensors_of((sample.input, sample.args, sample.kwargs))


def check_arguments(device_sample: Any, cpu_sample: Any, tol: TolSpec) -> None:
    """OracleMismatch when a tensor argument after the device's call differs from CPU's after CPU's."""
    mismatch = find_mismatch(arguments(device_sample), arguments(cpu_sample), tol, "argument")
    if mismatch is not None:
        mismatch.what = f"an argument after the call differs from CPU's after CPU's call: {mismatch.what}"
        raise OracleMismatch(mismatch)


def _snapshot(out: Any) -> Any:
    return pytree.tree_map(lambda t: t.detach().cpu().clone() if isinstance(t, torch.Tensor) else t, out)


# The dtype a repeated call is interleaved with: another width of the same kind (a narrower one for
# float32 and float64, whose graphs a stale cache would most visibly reuse).
INTERLEAVE: dict[torch.dtype, torch.dtype] = {
    torch.float32: torch.float16, torch.float64: torch.float32, torch.float16: torch.float32,
    torch.bfloat16: torch.float16, torch.complex64: torch.complex128, torch.complex128: torch.complex64,
    torch.int64: torch.int32, torch.int32: torch.int64, torch.int16: torch.int32, torch.int8: torch.int16,
    torch.uint8: torch.int16,
}


def recast(sample: Any, dtype: torch.dtype) -> Any:
    """The sample with every tensor of its input's dtype in `INTERLEAVE`'s other dtype (None: none)."""
    other = INTERLEAVE.get(dtype)
    if other is None:
        return None
    return transformed(sample, lambda t: t.to(other) if isinstance(t, torch.Tensor) and t.dtype == dtype else t)


@dataclass
class Repeat:
    """How to call a kept sample again: as it was (`again`), and in another dtype first (`interleave`)."""

    again: Callable[[], Any]
    interleave: Callable[[], Any] | None
    tolerance: TolSpec
    bitwise: bool = False  # the manifest claims `deterministic`: twice more in deterministic mode, bit for bit


@dataclass
class Retained:
    """A case's device results, alive until its last sample, each with what it held when checked."""

    kept: list[tuple[dict[str, Any], Any, Any]] = field(default_factory=list)
    repeats: bool = False  # the case repeats its first sample (`repeat`)
    first: Repeat | None = None  # the first kept sample's calls, for `repeat`

    @property
    def wants_repeat(self) -> bool:
        return self.repeats and not self.kept

    def keep(self, described: dict[str, Any], actual: Any, repeat: Repeat | None = None) -> None:
        """`described`: the sample as the case describes it (its index, text), named if it fails;
        `repeat`: how to call it again, given for the first sample only (`wants_repeat`)."""
        if repeat is not None:
            self.first = repeat
        self.kept.append((described, actual, _snapshot(actual)))

    def repeat(self, describe: Callable[..., None]) -> None:
        """OracleMismatch when the first sample, called again after the case's other samples and a call
        of the same shape in another dtype, gives another result (beyond the case's tolerance)."""
        if self.first is None or not self.kept:
            return
        described, _, held = self.kept[0]
        if self.first.interleave is not None:
            try:
                self.first.interleave()
            except Exception:  # noqa: BLE001 - the op may not take that dtype: the repeat still runs
                pass
        again = self.first.again()
        with unobserved():
            mismatch = find_mismatch(_snapshot(again), held, self.first.tolerance)
        _fail_retained(mismatch, described, describe,
                       "the same call gave another result when repeated after the case's other samples and a call of "
                       "the same shape in another dtype (a kernel or graph cached by shape, or state kept between calls)")
        if self.first.bitwise:
            self._deterministic(described, describe)

    def _deterministic(self, described: dict[str, Any], describe: Callable[..., None]) -> None:
        """Under the `deterministic` claim: the first sample twice more with deterministic algorithms on
        (PyTorch's promise: `torch.use_deterministic_algorithms`), equal bit for bit. An op PyTorch
        has no deterministic implementation of raises there: said in the record, not a failure."""
        assert self.first is not None
        try:
            with compat.deterministic_fill():
                one, two = _snapshot(self.first.again()), _snapshot(self.first.again())
        except RuntimeError as exc:
            describe(deterministic_repeat=f"not checked: deterministic mode raised {type(exc).__name__}: {first_line(exc, 160)}")
            return
        with unobserved():
            mismatch = find_mismatch(two, one, Tolerance(0.0, 0.0, signed_zero=True))
        _fail_retained(mismatch, described, describe, "the same call twice with deterministic algorithms on gave "
                       "results that differ bit for bit (the manifest claims deterministic)")

    def check(self, describe: Callable[..., None]) -> None:
        """OracleMismatch, the sample described, for the first result that changed since it was checked."""
        for described, actual, held in self.kept:
            _fail_retained(find_mismatch(actual, held, Tolerance(0.0, 0.0, signed_zero=True)), described, describe,
                           "the result changed after later calls of the op (a buffer the device reused, or a write "
                           "not finished when it returned)")


def _fail_retained(mismatch: Any, described: dict[str, Any], describe: Callable[..., None], why: str) -> None:
    """OracleMismatch for a kept sample's mismatch (None: nothing). The sample is named, but not as
    `sample_index`: one sample alone does not reproduce it, so the repro line reruns the whole case
    and no one-sample script is offered."""
    if mismatch is not None:
        describe(retained_sample=described.get("sample_index"), sample=described.get("sample"))
        mismatch.what = f"{why}: {mismatch.what}"
        raise OracleMismatch(mismatch)
