"""`run --repeat N`: one case run N times in the process that runs it, its outcomes made one.

Each repeat is the same `run_one` call: the same case, so the same inputs (a case seeds its own
samples: cases/opinfo/samples.py, cases/helpers.py). Between repeats, what a previous run could
leave behind and TorchCTS can reset is reset (`fresh_state`): the global and device generators
reseeded, dynamo's compiled code and caches dropped (when a case imported dynamo), the young garbage
generations collected (a full collection costs about a second once the OpInfo database is imported:
a --repeat 10 run spent most of its time there), the device synchronised and its caching allocator
emptied. What no engine can reset from Python stays: the backend's own caches (compiled kernels,
autotuning tables) and the driver's state, which is where a fault that shows once in k runs usually
lives. A fresh process per repeat would cost an import of torch and the backend each.

The repeats stop early at an outcome that is no verdict (not applicable, not claimed, pending: the
same every time) or that pytest raised (an in-process timeout, Ctrl-C): that one is the case's
outcome, as without --repeat. A crash ends the process in whichever repeat it happens, and the case
is recorded `crashed` from the worker's log (engine/isolation.py), never hidden by the repeats
that passed.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

from torchcts.engine.one_case import run_one
from torchcts.model.case import Case
from torchcts.results.reports.repeats import combine
from torchcts.workers.outcome import FAILED, PASSED, CaseOutcome, CaseState

SEED = 0  # the generators' seed between repeats (each case seeds what its inputs need itself)


def run_one_repeated(case: Case, state: CaseState, corpus: str | None) -> CaseOutcome:
    """`run_one`, N times under --repeat: the runner the engine hands the workers (workers/case_process.py)."""
    device = None
    if state.spec.repeat > 1:
        try:
            device = state.context_parts()[0]
        except Exception:  # noqa: BLE001 - the case reports the backend's import error itself
            device = None
    return run_repeated(lambda: run_one(case, state, corpus), state.spec.repeat, device)


def run_repeated(run_once: Callable[[], CaseOutcome], repeat: int, device: Any = None) -> CaseOutcome:
    """`run_once` up to `repeat` times, `fresh_state` between; the case's one outcome (results/reports/repeats.py:
    combine): passed, failed (every repeat: rate 0/N) or flaky (a pytest failure, with its rate)."""
    first = run_once()
    if repeat <= 1 or not _verdict(first):
        return first
    outcomes = [first]
    for _ in range(repeat - 1):
        fresh_state(device)
        outcome = run_once()
        if not _verdict(outcome):
            return outcome
        outcomes.append(outcome)
    record = combine([o.record for o in outcomes])
    if all(o.kind == PASSED for o in outcomes):
        return CaseOutcome(record)
    failing = next(o for o in outcomes if o.kind == FAILED)  # its exception: pytest's traceback and --pdb
    return CaseOutcome(record, FAILED, record.message or failing.message, failing.error)


def _verdict(outcome: CaseOutcome) -> bool:
    """A repeat that decided passed, failed or error (not a skip, not pytest's own exception)."""
    return outcome.record.status is not None and (
        outcome.kind == PASSED or (outcome.kind == FAILED and isinstance(outcome.error, Exception)))


def fresh_state(device: Any = None) -> None:
    """What a run of a case leaves behind that TorchCTS can reset, reset (see the module docstring)."""
    import torch

    torch.manual_seed(SEED)  # the CPU generator and every device generator the backend registered
    if "torch._dynamo" in sys.modules:  # only when a case compiled: importing dynamo costs seconds
        sys.modules["torch._dynamo"].reset()
    gc.collect(1)  # cycles a case just made (a full collection: ~1 s per repeat, see above)
    if device is None:
        return
    module = getattr(torch, str(getattr(device, "type", device)), None)
    for name in ("synchronize", "empty_cache"):
        fn = getattr(module, name, None)
        if callable(fn):
            try:
                fn()
            except Exception:  # noqa: BLE001, S110 - a backend without them: the next repeat runs regardless
                pass
