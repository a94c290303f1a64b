"""One case run to its record and pytest outcome, in whichever process runs it.

A worker runs a case itself, or, once its run has crashed, in a forked child of its own
(workers/case_process.py, which is handed `run_one`): the same function runs in both, and its
result (workers/outcome.py: `CaseOutcome`) is a typed record with its own serialiser, since it
crosses from the child to the worker.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path

from torchcts import compat
from torchcts.cases.model import Case, NotApplicable, NotClaimed, Pending
from torchcts.engine.probe import CaseProbe, release_memory
from torchcts.errors import first_line
from torchcts.oracle.mismatch import OracleMismatch
from torchcts.results.records import CaseRecord
from torchcts.results.statuses import Status
from torchcts.workers.outcome import FAILED, PASSED, SKIPPED, CaseOutcome, CaseState


def run_one(case: Case, state: CaseState, corpus: str | None) -> CaseOutcome:
    """Run `case` on the run's device; its record filled with the verdict and the evidence."""
    from torchcts.cases.context import CaseContext
    from torchcts.engine.runner import run_case

    device, manifest = state.context_parts()
    sel = state.spec.selection
    ctx = CaseContext(device=device, manifest=manifest, max_samples=sel.max_samples, sample=sel.sample,
                      validation=state.spec.validation, explore=state.spec.explore,
                      corpus=Path(corpus) if corpus else None, run_dir=state.run_dir)
    record = CaseRecord.from_case(case)
    outcome = CaseOutcome(record)
    probe = CaseProbe(state.worker)
    warmed = sum(compat.WARMUP_S.values())
    start = time.perf_counter()
    try:
        with compat.watch_fallbacks() as fallbacks:
            run_case(case, ctx)
    except NotApplicable as exc:  # Pending and NotClaimed are ones: no verdict, shown apart (results/statuses.py)
        record.status = (Status.PENDING if isinstance(exc, Pending) else Status.NOT_CLAIMED
                         if isinstance(exc, NotClaimed) else Status.NOT_APPLICABLE)
        record.message = str(exc)
        outcome.kind, outcome.message = SKIPPED, f"{record.status.replace('_', ' ')}: {exc}"
    except OracleMismatch as exc:
        record.status, record.message, record.mismatch = Status.FAILED, str(exc), exc.mismatch.to_json()
        outcome.kind, outcome.message, outcome.error = FAILED, record.message, exc
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the backend's own exception, of any type: the case's error
        record.status = Status.ERROR
        record.message = f"{type(exc).__name__}: {first_line(exc, 500)}"
        record.exception = type(exc).__name__
        record.traceback = _tail(traceback.format_exc(), 30)
        outcome.kind, outcome.message, outcome.error = FAILED, record.message, exc
    except BaseException as exc:  # noqa: BLE001 - pytest's own (an in-process timeout's Failed, Ctrl-C):
        outcome.kind, outcome.error = FAILED, exc  # raised as they came, the record filled (its sample)
    finally:
        warmup = sum(compat.WARMUP_S.values()) - warmed  # the worker's one-time cost, paid in this case
        record.duration_s = round(time.perf_counter() - start - warmup, 6)
        record.warmup_s = round(warmup, 3) if warmup > 0 else None
        probe.fill(record)  # engine/probe.py: when, where, memory
        # Compatibility fallbacks behind this result: the backend setup's and the case's own.
        record.compat_fallbacks = sorted(state.setup_fallbacks | fallbacks) or None
        if outcome.kind == PASSED:
            record.status = Status.PASSED
        # What the case built for its record (cases/verdict.py): its notes, what reached the device,
        # the oracle's precision, exactness and weakness, the helper op a failure names.
        record.take(ctx.verdict, outcome.error)
        rss = release_memory()  # the process's resident set after the case, freed heap returned
        if rss is not None:
            record.rss_mb = round(rss, 1)
    return outcome


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])
