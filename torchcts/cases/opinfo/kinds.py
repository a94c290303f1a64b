"""The OpInfo suite's kinds of case, one registry: build.py asks it which cases an (op, dtype) gets, at
which level, needing which claims, run by which runner; run.py which function runs one; explore which
kinds' checks an explored sample goes through. A new kind is one entry here (issue 52 item 3).

Light on purpose (no import of the runners): the case list is built without running anything, and
each kind names the function that runs it as "module:function", resolved when a case runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

RUNNER = "torchcts.cases.opinfo.run:run"


@dataclass(frozen=True)
class Slot:
    """One (OpInfo, dtype) the suite files cases under, with what its kinds are decided by."""

    op: Any
    dtype: str
    backward_dtypes: frozenset[str]
    errors_in: str | None  # the dtype the dtype-less errors case is filed under
    agree: bool  # the op has a second form to run (build.py: agrees)
    explore: bool  # its values can be explored (build.py: explores)
    explorable_dtype: bool  # the value generators know the dtype (schema.DTYPES)

    @property
    def floating(self) -> bool:
        dt = getattr(torch, self.dtype)
        return bool(dt.is_floating_point or dt.is_complex)


def has_variant(variant: Any) -> bool:
    return variant is not None and callable(variant)


def op_key(op: Any) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


@dataclass(frozen=True)
class Kind:
    """One kind of case. `applies`: whether the slot gets one; `unsupported`: why the one it gets is
    not_applicable (None: it runs); `runs`: the function run.py calls with (ctx, op, dtype), None where
    the kind's `runner` is its own module's; `explored`: explore checks its samples through this kind."""

    name: str
    level: int
    requires: tuple[str, ...]
    applies: Callable[[Slot], bool]
    runs: str | None = None
    runner: str = RUNNER
    unsupported: Callable[[Slot], str | None] = lambda slot: None
    explored: bool = False

    def unclaimed(self, claims: Callable[[str], bool]) -> bool:
        """Whether a requirement ("a|b": either) is not claimed."""
        return any(not any(claims(c) for c in req.split("|")) for req in self.requires)


def _no_cpu_backward(slot: Slot) -> str | None:
    return None if slot.dtype in slot.backward_dtypes else f"{op_key(slot.op)} has no CPU backward for {slot.dtype}"


_RUN = "torchcts.cases.opinfo.run:"
# In case order: an (op, dtype)'s cases are filed in this order. Families (linalg/fft/special) are
# level 5 throughout (build.py: FAMILY_LEVEL).
KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("forward", 2, ("inference",), lambda s: True, _RUN + "run_forward", explored=True),
    Kind("method", 3, ("inference",), lambda s: has_variant(s.op.method_variant), _RUN + "run_method"),
    Kind("inplace", 3, ("inference",), lambda s: has_variant(s.op.inplace_variant), _RUN + "run_inplace", explored=True),
    Kind("out", 3, ("inference",), lambda s: bool(s.op.supports_out), _RUN + "run_out", explored=True),
    Kind("errors", 3, ("inference",), lambda s: s.op.error_inputs_func is not None and s.dtype == s.errors_in,
         _RUN + "run_errors"),
    Kind("backward", 4, ("autograd|training",), lambda s: bool(s.op.supports_autograd) and s.floating,
         _RUN + "run_backward", unsupported=_no_cpu_backward, explored=True),
    Kind("noncontiguous", 5, ("inference",), lambda s: True, _RUN + "run_noncontiguous"),
    Kind("special_values", 5, ("inference", "ieee754"), lambda s: s.floating, _RUN + "run_special"),
    # the op's forms (method, in-place, out=, decomposition) against its functional form, on the device
    # alone: bit for bit where one kernel serves both (cases/opinfo/agree.py)
    Kind("agree", 3, ("inference",), lambda s: s.agree, runner="torchcts.cases.opinfo.agree:run"),
    # argument switch points x value classes, shrunk and kept in a corpus (cases/explore/, docs/exploration.md)
    Kind("explore", 2, ("inference",), lambda s: s.explore and s.explorable_dtype,
         runner="torchcts.cases.explore.run:run"),
)}


def runs(kind: str) -> str:
    """The "module:function" that runs one case of `kind` (run.py's dispatch); a kind this suite's
    runner does not run is our bug, never a quiet not_applicable."""
    found = KINDS.get(kind)
    if found is None or found.runs is None:
        raise ValueError(f"unknown opinfo case kind {kind!r} for {RUNNER}: cases/opinfo/kinds.py: KINDS")
    return found.runs
