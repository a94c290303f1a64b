"""Where a case record is completed and how it rides on pytest's report.

A record is judged once, by the process that builds it: a worker for the cases it runs
(`CaseItem`), the controller for the crash records xdist hands it (`pytest_handlecrashitem`);
with `-n 0` that is the one process. Judging adds the repro line, then the ledger (or `flaky` on
a rerun: results/ledger/annotate.py), and pytest's report is made to agree with the result
(`align_report`) before anything counts it. A worker must judge its own cases: xdist's worker
stops its queue on its own `-x`/`--maxfail` count (xdist/remote.py: `session.shouldfail`), so an
expected failure must already be xfailed there; the controller counts the shipped, aligned report.

The record travels as an attribute of the `TestReport` (`RECORD_ATTR`), never in
`user_properties` (which `--junitxml` writes out as properties): `serializable` and
`from_serializable` are called from the plugin's `pytest_report_to_serializable` /
`pytest_report_from_serializable`, the hooks xdist uses to ship a report worker -> controller.
"""

from __future__ import annotations

from typing import Any, Protocol

import pytest

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import NO_REPRO, Status
from torchcts.results.ledger.annotate import RecordAnnotator
from torchcts.results.ledger.note import LedgerNote

RECORD_ATTR = "torchcts_record"


class _RunState(Protocol):  # engine/plugin.py: RunState, as the judge uses it
    run: Run  # run.json typed
    run_dir: Any

    def repro(self, record: CaseRecord) -> str: ...
    def plan(self) -> dict[str, Any]: ...


class RecordJudge:
    """One per process: completes each record this process builds (repro line, ledger or flaky,
    op name, attempt, repro script). Built at configure time, so a rerun session reads the
    previous attempts' records before this session appends any."""

    def __init__(self, state: _RunState, attempt: int = 1) -> None:
        self.state = state
        self.annotate = RecordAnnotator(state.run, state.run_dir, attempt, state.plan)

    def __call__(self, record: CaseRecord) -> CaseRecord:
        if record.status not in NO_REPRO:
            record.repro = self.state.repro(record)
            if record.info_dict.get("repro"):  # the case's own line: the same, with the manifest
                record.info["repro"] = record.repro  # type: ignore[index]
        return self.annotate(record)


def align_report(report: pytest.TestReport, record: CaseRecord, strict: bool) -> None:
    """pytest's outcome agrees with the record's status after the ledger: an expected failure is
    pytest's xfailed (not in "N failed", not in FAILURES, not counted by -x/--maxfail), an expected
    failure that passed is XPASS (a failure under --strict-expectations, as pytest's strict xfail)."""
    note = LedgerNote.from_json(record.expectation) or LedgerNote(entry=None)
    reason = f"expectations[{note.entry}]: {note.reason or ''}".strip()
    if record.status == Status.XFAILED:
        report.outcome = "skipped"
        report.wasxfail = reason  # type: ignore[attr-defined]
    elif record.status == Status.XPASSED and strict:
        report.outcome = "failed"
        report.longrepr = f"[XPASS(strict)] {reason}: passed, remove the entry from the ledger"
        if hasattr(report, "wasxfail"):
            del report.wasxfail
    elif record.status == Status.XPASSED:
        report.outcome = "passed"
        report.wasxfail = reason  # type: ignore[attr-defined]


def attach(report: pytest.TestReport, record: CaseRecord) -> None:
    setattr(report, RECORD_ATTR, record)


def detach(report: Any) -> None:
    """Drop the record from a report once it is written: pytest's terminal reporter keeps every
    report until the session ends, and a level-8 run's records held there cost hundreds of MB in
    the controller (and the garbage collector's time walking them)."""
    if hasattr(report, RECORD_ATTR):
        delattr(report, RECORD_ATTR)


def record_of(report: Any) -> CaseRecord | None:
    """The record a report carries (built here, or shipped by a worker), None for other reports."""
    record = getattr(report, RECORD_ATTR, None)
    return record if isinstance(record, CaseRecord) else None


def serializable(report: Any, data: Any) -> None:
    """pytest copied the report's attributes into `data`: the record goes as one JSON text
    (`CaseRecord.to_text`), so execnet never meets what a case put in it (an int64 past 32 bits,
    which its serializer refuses). If the report still cannot be sent, the case's record says that
    TorchCTS failed to send it (`unsendable`), and the run goes on."""
    if not isinstance(data, dict):
        return
    record = record_of(report)
    if record is not None:
        data[RECORD_ATTR] = record.to_text()
    problem = unsendable(data)
    if problem is not None:
        sent = (record or CaseRecord(id=str(data.get("nodeid", "?")).split("::", 1)[-1])).internal(
            "sending its report to the controller", problem)
        data.update(outcome="failed", longrepr=sent.message, sections=[], user_properties=[])
        data[RECORD_ATTR] = sent.to_text()


def unsendable(data: dict[str, Any]) -> Exception | None:
    """Why execnet (pytest-xdist's channel) cannot send `data`, or None."""
    try:
        import execnet
    except ImportError:  # no xdist: nothing is sent
        return None
    try:
        execnet.dumps(data)
    except Exception as exc:  # noqa: BLE001 - execnet's DumpError, struct.error, RecursionError...
        return exc
    return None


def from_serializable(report: Any) -> None:
    """A report rebuilt from a worker's data: its record typed again (`CaseRecord.from_text`)."""
    raw = getattr(report, RECORD_ATTR, None)
    if isinstance(raw, str):
        setattr(report, RECORD_ATTR, CaseRecord.from_text(raw, str(getattr(report, "nodeid", "?")).split("::", 1)[-1]))
