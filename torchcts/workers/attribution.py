"""Crash attribution: a crash that may have landed in the wrong case is rerun, suspect by suspect.

Why: a real backend's driver can abort in a thread of its own after the op returned (PoCL: an
assertion in its queue thread), so the process dies while the *next* case runs, and that innocent
case was recorded `crashed`, with an empty output tail, while the guilty one passed (issue 48 item 5).

Which crashes: one by a signal whose dead process ran other cases before it (workers/isolation.py:
earlier_cases, from the worker's log) and whose tail shows no stack of the thread that runs cases
(`ambiguous`): no frame at all (a native thread's abort: faulthandler prints only "Fatal Python
error: Aborted") or a Python thread's stack (threading's `_bootstrap` outermost). A crash with the
case's own stack was that case's code running: it stays the case's, without a rerun. A worker that
died between cases (its next case never started) makes its last cases suspects too.

How: after the run's first pytest session (engine/execute.py), each suspect (the crashed case and
up to SUSPECTS_BEFORE cases before it in that process) runs alone in a fresh process
(engine/solo.py), which lingers after the case so deferred work lands in it. Then:
- the crashed case ran alone without crashing and an earlier case crashed alone: the crash is that
  earlier case's. The earlier case gets its crash record (signal, its stderr with the driver's text,
  what happened in the run), the innocent case its own verdict from its run alone, each saying so
  in `attribution`;
- the crashed case crashed alone too: its crash stands (and any earlier case's crash alone is
  recorded as well);
- nothing crashed alone: the crash stands, undetermined (it needs the cases in sequence): a crash is
  never turned into a pass without a culprit.
A death in TorchCTS's CPU reference (workers/isolation.py: `attribution.reference`) is a suspicion
too, earlier cases or not: CPU's own death (SIGFPE in `_scaled_dot_product_flash_attention_for_cpu` on
a zero-size dimension) dies there again alone and becomes `pending` (no reference, no verdict); one
that does not is the device's (pytorch_ocl's tanh of uint8: its deferred abort, or memory its calls
wrote, killed the process while CPU computed) and stays crashed. Past MAX_REFERENCE_DEATHS it stays
crashed; the crash budget does not count it (workers/crash_budget.py).
Records are appended (the last record of an id wins, results/records/rundir.py) and judged as any (repro,
ledger). A first attempt's session only; `--rerun-failures` runs after this.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.process import exit_fields
from torchcts.results.triage.crash_frames import died_in_reference, native_frames, python_frames, reference_death
from torchcts.workers.isolation import STDERR_HEADER, earlier_cases, read_stderr
from torchcts.workers.outcome import CaseOutcome

SUSPECTS_BEFORE = 2  # earlier cases of the dead process that are rerun alone
START_S = 120.0  # a solo process's start-up (a fresh python imports torch and the backend) on a loaded machine
MAX_PARALLEL = 2
# Suspicions settled per run: each costs up to 1 + SUSPECTS_BEFORE fresh processes (torch and the backend
# imported), so a storm of native crashes would cost more than the run. The rest keep their crash as
# recorded (a failure either way: never forgiven, only possibly misplaced), and the line says so.
MAX_SUSPICIONS = 8
# Deaths in CPU's reference settled a run, apart from the others (a correct backend's run may hold a few:
# CPU's own kernel dying on a sample; one unsettled stays crashed, a failure that is only possibly CPU's).
MAX_REFERENCE_DEATHS = 16


@dataclass
class Suspicion:
    """A crash that may belong to an earlier case of its process."""

    earlier: list[str]
    record: CaseRecord | None = None  # the crash record the run wrote for the case it landed in; None: between cases

    @property
    def landed_in(self) -> str | None:
        """The case the crash landed in (None: the worker died between cases)."""
        return self.record.id if self.record is not None else None


@dataclass
class Alone:
    """One case's run alone in a fresh process: its outcome, or how the process died."""

    case_id: str
    outcome: CaseOutcome | None = None
    died: dict[str, Any] = field(default_factory=dict)  # CaseRecord exit fields (signal, exit_code)
    stderr: str = ""
    seconds: float = 0.0
    reference: str | None = None  # the TorchCTS reference frame it died in (its whole stderr, not the tail kept)

    @property
    def crashed(self) -> bool:
        return self.outcome is None and bool(self.died)

    @property
    def status(self) -> str:
        if self.outcome is not None:
            return str(self.outcome.record.status)
        return "crashed" if self.died else "undetermined"


def ambiguous(tail: str | None) -> bool:
    """The crash's tail shows no stack of the thread that runs cases: none at all, or another thread's."""
    text = str(tail or "").split(STDERR_HEADER, 1)[0]
    if native_frames(text):
        return False
    frames = python_frames(text)
    return not frames or frames[-1] == "threading.py:_bootstrap"


def suspicion(record: CaseRecord, log: str, nodeid: str | None) -> Suspicion | None:
    """A Suspicion for a crash record (or, `nodeid` None, a worker that died between cases) when its
    process ran earlier cases (`log`: the worker's log, as the death's handler read it once) and the
    tail does not show the case's own stack."""
    reference = nodeid is not None and died_in_reference(record) is not None
    if not record.signal and not reference:  # an exit code is the process's own decision (a case's os._exit)
        return None
    if nodeid is not None and (record.status != Status.CRASHED or not (reference or ambiguous(record.output_tail))):
        return None
    earlier = [n.split("::", 1)[-1] for n in earlier_cases(log, nodeid, SUSPECTS_BEFORE)]
    if not earlier and not reference:
        return None
    return Suspicion(earlier, record if nodeid is not None else None)


def run_alone(run_dir: Path, case_ids: list[str], timeout_s: float | None, corpus: str | None,
              solo: str) -> dict[str, Alone]:
    """Each case in a fresh process of its own (`python -m SOLO`: engine/solo.py, which runs a case
    as a worker would, so the engine hands its name in), MAX_PARALLEL at a time."""
    limit = START_S + (timeout_s or 600.0)  # the case's own limit, then it is undetermined
    ids = list(dict.fromkeys(case_ids))
    with tempfile.TemporaryDirectory(prefix="torchcts-alone-") as scratch, ThreadPoolExecutor(MAX_PARALLEL) as pool:
        runs = pool.map(lambda i: _alone(run_dir, ids[i], Path(scratch) / str(i), limit, corpus, solo), range(len(ids)))
        return {alone.case_id: alone for alone in runs}


def _alone(run_dir: Path, case_id: str, base: Path, limit: float, corpus: str | None, solo: str) -> Alone:
    """One case in a fresh process, killed past `limit` seconds (then undetermined: no outcome, no death)."""
    alone, out, err = Alone(case_id), base.with_suffix(".json"), base.with_suffix(".stderr")
    cmd = [sys.executable, "-m", solo, str(run_dir), case_id, str(out), *([corpus] if corpus else [])]
    began = time.monotonic()
    with open(err, "wb") as fh:
        try:
            code: int | None = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh,
                                              timeout=limit, check=False).returncode
        except subprocess.TimeoutExpired:  # killed and reaped by subprocess.run
            code = None
    alone.seconds = round(time.monotonic() - began, 3)
    alone.stderr = read_stderr(err)
    if code not in (0, None):
        try:
            alone.reference = reference_death(err.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            alone.reference = None
    if code == 0 and out.is_file():
        try:
            alone.outcome = CaseOutcome.from_json(json.loads(out.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            alone.outcome = None
    elif code is not None:
        alone.died = exit_fields(code)
    return alone


def attribute(suspicions: list[Suspicion], alone: dict[str, Alone], plan: dict[str, Any]) -> list[CaseRecord]:
    """The records the attribution changes (unjudged): see the module's docstring."""
    out: dict[str, CaseRecord] = {}
    for s in suspicions:
        ran = {cid: alone[cid].status for cid in [*s.earlier, *([s.landed_in] if s.landed_in else [])] if cid in alone}
        culprits = [cid for cid in s.earlier if cid in alone and alone[cid].crashed]
        landed = alone.get(s.landed_in) if s.landed_in else None
        where = f"the crash that landed in {s.landed_in}" if s.landed_in else "a worker that died between cases"
        for cid in culprits:
            case = plan.get(cid)
            if case is None or cid in out:
                continue
            a = alone[cid]
            how = a.died.get("signal") or f"exit code {a.died.get('exit_code')}"
            out[cid] = CaseRecord.from_case(
                case, status=Status.CRASHED, worker="alone", **a.died,
                output_tail=f"{STDERR_HEADER}\n{a.stderr}" if a.stderr else None,
                message=(f"its process died ({how}) when this case ran alone in a fresh one, after its checks "
                         f"(deferred work: a driver thread's abort); in the run this was {where}"),
                attribution={"landed_in": s.landed_in, "belongs_to": cid, "alone": ran})
        if s.landed_in is None or s.record is None:
            continue
        settled_by_culprit = culprits and landed is not None and landed.outcome is not None  # the branch below
        if died_in_reference(s.record) and s.landed_in not in out and not settled_by_culprit:
            out[s.landed_in] = _reference_death(s.record, landed, culprits, ran)
            continue
        if landed is not None and landed.outcome is not None and culprits:
            record = landed.outcome.record.copy(worker="alone")
            note = (f"its process died in the run ({s.record.signal or s.record.exit_code}) while it ran; rerun alone "
                    f"it {record.status}: the crash belongs to {culprits[-1]}, which crashed alone (workers/attribution.py)")
            record.message = f"{record.message}; {note}" if record.message else note
            record.attribution = {"landed_in": s.landed_in, "belongs_to": culprits[-1], "alone": ran}
            out[s.landed_in] = record
        elif s.landed_in not in out:
            mine = landed is not None and landed.crashed
            record = s.record.copy()
            record.attribution = {"landed_in": s.landed_in, "belongs_to": s.landed_in if mine else None,
                                        "alone": ran}
            why = ("it crashed again alone: the crash is its own" if mine else
                   f"rerun alone, neither it nor {', '.join(s.earlier)} crashed: the crash needs them in sequence")
            record.message = f"{record.message}; {why}"
            out[s.landed_in] = record
    return list(out.values())


def _reference_death(record: CaseRecord, landed: Alone | None, culprits: list[str], ran: dict[str, str]) -> CaseRecord:
    """A death in CPU's reference, settled by the case's run alone: `pending` where it died in CPU's
    reference again, else the device's crash: an earlier case's that crashed alone, else its own."""
    record = record.copy()
    reference = died_in_reference(record)
    again = landed.reference if landed is not None and landed.died else None
    belongs = None if again else (culprits[-1] if culprits else record.id)
    if again:
        record.status = Status.PENDING
        why = f"it died in CPU's reference again alone ({again}): CPU's own death, no reference, no verdict"
    else:
        alone = landed.status if landed is not None else "not settled"
        why = (f"rerun alone it {alone}, not dying in CPU's reference: the device's crash (its deferred work, "
               f"or memory its calls wrote, killed the process while CPU computed)"
               + (f", which {belongs} crashed alone" if belongs != record.id else ""))
    record.attribution = {"reference": reference, "landed_in": record.id, "belongs_to": belongs, "alone": ran}
    record.message = f"{record.message}; {why}"
    return record


def settle(run_dir: Path, suspicions: list[Suspicion], judge: Any, plan: dict[str, Any],
           timeout_s: float | None, corpus: str | None, solo: str) -> list[CaseRecord]:
    """Run every suspect alone, then append the records the attribution changed, judged (repro,
    ledger) by `judge` (engine/judge.py: RecordJudge of the first attempt)."""
    from torchcts.results.records.rundir import RecordWriter

    def in_reference(s: Suspicion) -> bool:  # a reference death has its own cap: a correct backend's
        return s.record is not None and died_in_reference(s.record) is not None

    cpu, others = [s for s in suspicions if in_reference(s)], [s for s in suspicions if not in_reference(s)]
    left = max(len(others) - MAX_SUSPICIONS, 0) + max(len(cpu) - MAX_REFERENCE_DEATHS, 0)  # stay crashed
    suspicions = others[:MAX_SUSPICIONS] + cpu[:MAX_REFERENCE_DEATHS]
    ids = [cid for s in suspicions for cid in [*s.earlier, *([s.landed_in] if s.landed_in else [])]]
    print(f"torchcts: {len(suspicions)} crash(es) may have landed in another case than the one that caused "
          f"them: running {len(set(ids))} suspect(s) alone (workers/attribution.py)"
          + (f"; {left} more kept as recorded (at most {MAX_SUSPICIONS}, and {MAX_REFERENCE_DEATHS} deaths in CPU's "
             "reference, settled a run)" if left > 0 else ""),
          flush=True)
    records = [judge(r) for r in attribute(suspicions, run_alone(run_dir, ids, timeout_s, corpus, solo), plan)]
    writer = RecordWriter(run_dir)
    try:
        for record in records:
            writer.append(record)
    finally:
        writer.close()
    return records
