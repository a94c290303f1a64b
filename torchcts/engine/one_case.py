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
from torchcts.engine.probe import CaseProbe, release_memory
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.results.records.decide import decide
from torchcts.workers.isolation import sample_noter
from torchcts.workers.outcome import FAILED, SKIPPED, CaseOutcome, CaseState


def run_one(case: Case, state: CaseState, corpus: str | None) -> CaseOutcome:
    """Run `case` on the run's device; its record filled with the verdict and the evidence."""
    from torchcts.cases.context import CaseContext
    from torchcts.engine.runner import run_case

    device, manifest = state.context_parts()
    sel = state.spec.selection
    ctx = CaseContext(device=device, manifest=manifest, max_samples=sel.max_samples, sample=sel.sample,
                      validation=state.spec.validation, explore=state.spec.explore,
                      corpus=Path(corpus) if corpus else None, run_dir=state.run_dir)
    if state.work_dir is not None:  # an isolated worker: a crash's record names the sample it died in
        ctx.on_sample = sample_noter(state.work_dir, state.worker, case.id)
    record = CaseRecord.from_case(case)
    outcome = CaseOutcome(record)
    probe = CaseProbe(state.worker)
    warmed = sum(compat.WARMUP_S.values())
    start = time.perf_counter()
    raised: BaseException | None = None
    formatted: str | None = None
    fallbacks: set[str] = set()
    try:
        with compat.watch_fallbacks() as fallbacks:
            run_case(case, ctx)
    except BaseException as exc:  # noqa: BLE001 - every outcome, pytest's own too, is decided below
        raised, formatted = exc, traceback.format_exc()
    # the status and what pytest is told, decided once (results/records/decide.py)
    decision = decide(raised, formatted)
    decision.apply(record)
    if decision.status is not None and decision.status.info.told == SKIPPED:
        outcome.kind, outcome.message = SKIPPED, decision.said
    elif raised is not None:  # a failure, and pytest's own exceptions (Ctrl-C), raised as they came
        outcome.kind, outcome.message, outcome.error = FAILED, decision.said, raised
    del raised  # a skip's exception (its frames, its tensors) is not kept past its decision
    warmup = sum(compat.WARMUP_S.values()) - warmed  # the worker's one-time cost, paid in this case
    record.duration_s = round(time.perf_counter() - start - warmup, 6)
    record.warmup_s = round(warmup, 3) if warmup > 0 else None
    probe.fill(record)  # engine/probe.py: when, where, memory
    # Compatibility fallbacks behind this result: the backend setup's and the case's own.
    record.compat_fallbacks = sorted(state.setup_fallbacks | fallbacks) or None
    # What the case built for its record (cases/verdict.py): its notes, what reached the device,
    # the oracle's precision, exactness and weakness, the helper op a failure names.
    ctx.verdict.write_to(record, outcome.error)
    rss = release_memory()  # the process's resident set after the case, freed heap returned
    if rss is not None:
        record.rss_mb = round(rss, 1)
    return outcome
