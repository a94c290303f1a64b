"""Applying the expectations ledger to case records, and the ledger's end-of-run report.

Pure functions of (entries, records, today), so a run, `torchcts report` and the tests agree.

Rules (docs/ledger.md):
- a failing case matched by an entry with the same signature becomes `xfailed`, carrying the
  entry's reason, tracker and index;
- one with a different signature stays failing, with a note naming the entry and both signatures;
- a passing case matched by an entry becomes `xpassed` and is listed for removal;
- an expired entry still applies (the failure is still known) but is reported; an entry matching
  no selected case is reported (so is an entry shadowed by earlier ones: it never decides). Under \
`--strict-expectations` expired and unmatched entries,
  xpassed and flaky cases fail the run.
The first entry that matches a case decides; later ones are not consulted for it.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from torchcts.errors import ExitCode
from torchcts.manifest.expectations import is_expired
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import CRASH_LIKE, EXECUTED, FAILURES, FORGIVABLE, Status
from torchcts.results.ledger.match import LedgerMatcher
from torchcts.results.ledger.note import LedgerNote
from torchcts.results.reports.wording import plural
from torchcts.results.triage.signatures import entry_signature, signature_matches, signature_of

# The device type a rule is decided on: `MPS`, ` mps:0 `, `mps\u200b` are all `mps` (run.json's is
# normalised when read, model/run.py; a flag's or a record's here).
from torchcts.untrusted import device_type

FAILING = FORGIVABLE  # what an entry can turn into xfailed
APPLIED = EXECUTED  # records of cases that ran carry the ledger note of the entry naming them
CRASHES = CRASH_LIKE
# Devices whose crashes are never forgiven (SPEC: MPS crash isolation is subprocess isolation only):
# no ledger entry turns a crash into xfailed, a crash that passes on rerun stays a crash, and a
# `known_crash` entry is invalid there.
NO_CRASH_FORGIVENESS = ("mps",)


def forgives_crashes(device: str | None) -> bool:
    return device_type(device) not in NO_CRASH_FORGIVENESS


# What a dead worker's or child's record says of its death (workers/isolation.py: _death_record).
_DIED = re.compile(r"\bdied \((?:SIG[A-Z0-9]+|exit code -?\d+|unknown cause)\)")
_TIMED_OUT = re.compile(r"\bexceeded the [0-9.eE+-]+ s timeout\b")


def crash_evidence(record: CaseRecord) -> str | None:
    """`crashed` or `timeout` when the record's own evidence says the case died (a signal, an exit
    code, the death or timeout message, in the record or its first failure), whatever status label
    it carries; None when nothing says so. A label (`original_status: "failed"`) can be edited, the
    evidence beside it is what the MPS rule believes."""
    first = record.first_failure if isinstance(record.first_failure, dict) else {}
    note = LedgerNote.from_json(record.expectation)
    labels = (note.original_status if note is not None else None, first.get("status"))
    messages = " ".join(str(m) for m in (record.message, first.get("message")) if m)
    if "timeout" in labels or record.timeout_s is not None or _TIMED_OUT.search(messages):
        return "timeout"
    if "crashed" in labels or record.signal or (record.exit_code not in (None, 0)) or _DIED.search(messages):
        return "crashed"
    return None


def crash_rule(record: CaseRecord, device: str | None) -> CaseRecord:
    """The record with the crash rule re-applied (`torchcts report` rebuilds a verdict from records
    anyone can edit): on a device that never forgives a crash, an xfailed crash or a crash that
    passed on a rerun (flaky) is the crash again, decided from the record's evidence (`crash_evidence`)."""
    if forgives_crashes(device) or record.status not in (Status.XFAILED, Status.FLAKY):
        return record
    was = crash_evidence(record)
    if was is None:
        return record
    device = device_type(device)
    message = f"{was} on {device}, which never forgives a crash (the record said {record.status}): {record.message or ''}"
    return record.copy(status=Status(was), message=message[:600])


def run_device(run: Run) -> str | None:
    """The device whose crash rule applies (none for a validation run, which is no backend's)."""
    return None if run.validation else run.device_type


def invalid_entries(entries: list[dict[str, Any]], device: str | None) -> list[dict[str, Any]]:
    """Entries this device refuses: `known_crash` on a device that never forgives a crash."""
    if forgives_crashes(device):
        return []
    return [{"entry": i, "match": e.get("match"),
             "reason": f"known_crash is invalid on {device}: a crash always fails the run there"}
            for i, e in enumerate(entries) if e.get("status") == "known_crash"]


def _expected_signature(entry: dict[str, Any]) -> str | None:
    return entry_signature(entry.get("signature"))


def _signature_ok(entry: dict[str, Any], record: CaseRecord) -> bool:
    pattern = _expected_signature(entry)
    if pattern is None and entry.get("status") == "known_crash":
        return record.status in CRASH_LIKE
    return signature_matches(pattern, record)


def _note(entry: dict[str, Any], index: int, today: _dt.date) -> LedgerNote:
    return LedgerNote(entry=index, status=entry.get("status"), reason=entry.get("reason"), tracker=entry.get("tracker"),
                      expires=entry.get("expires"), expired=is_expired(entry, today))


def compile_entries(entries: list[dict[str, Any]]) -> LedgerMatcher:
    return LedgerMatcher(entries)


def apply(record: CaseRecord, entries: list[dict[str, Any]], today: _dt.date,
          matcher: LedgerMatcher | None = None, device: str | None = None) -> CaseRecord:
    """The record as the ledger sees it (a new record); failing records also get their `signature`.

    `matcher` (compile_entries(entries)) saves compiling the entries for every record. On a device
    that never forgives crashes (`device`), a crash or timeout stays failing whatever the entry.
    """
    status = record.status
    out = record.copy(signature=signature_of(record)) if status in FAILING else record.copy()
    if not entries or status not in (*FAILING, Status.PASSED):
        return out
    index = (matcher or compile_entries(entries)).first(out.selector_view())
    if index is None:
        return out
    entry = entries[index]
    note = _note(entry, index, today)
    if status == Status.PASSED:
        out.status = Status.XPASSED
        note.note = f"passed: remove expectations[{index}] from the ledger"
    elif status in CRASHES and not forgives_crashes(device):
        note.note = (f"expectations[{index}] cannot forgive a {status} case on {device}: "
                        "crash isolation there is subprocess isolation only, so it still fails")
    elif _signature_ok(entry, out):
        out.status = Status.XFAILED
        note.original_status = str(status)
    else:
        expected = _expected_signature(entry) or "crash or timeout"
        note.note = (f"expectations[{index}] expects signature '{expected}' but the case failed with "
                        f"'{out.signature}': a different failure, so it still fails")
    out.expectation = note.to_json()
    return out


def known_crash_ids(entries: list[dict[str, Any]], cases: list[dict[str, Any]]) -> set[str]:
    """Ids of the cases (Case.to_json() mappings) a `known_crash` entry decides: the engine must run them isolated."""
    matcher = compile_entries(entries)
    out = set()
    for case in cases:
        index = matcher.first(case)
        if index is not None and entries[index].get("status") == "known_crash":
            out.add(str(case["id"]))
    return out


def ledger_report(entries: list[dict[str, Any]], records: list[CaseRecord], today: _dt.date,
                  device: str | None = None, outside: list[int] | None = None) -> dict[str, Any]:
    """Expired and unmatched entries, xpassed cases and signature changes, for run.json and reports.

    `records` are the final records of the run (one per case); an entry is unmatched when it names
    none of them and is not one of `outside`, the entries that name only cases the selection left
    out (a focused run does not judge them: counted, never listed as unmatched).
    """
    hit = [False] * len(entries)
    matcher = compile_entries(entries)
    xpassed, changed, xfailed = [], [], 0
    for r in records:
        note = LedgerNote.from_json(r.expectation)
        if note is not None and not note.names_entry_of(entries):
            note = None  # one naming no entry of this ledger (an edited record)
        if note is not None and note.entry is not None:
            hit[note.entry] = True
        elif entries and r.status not in APPLIED:  # applied records carry their note
            index = matcher.first(r.selector_view())  # the entry that decides (a shadowed entry stays unmatched)
            if index is not None:
                hit[index] = True
        if note is None:
            continue
        if r.status == Status.XPASSED:
            xpassed.append({"id": r.id, "entry": note.entry})
        elif r.status == Status.XFAILED:
            xfailed += 1
        elif note.note:
            changed.append({"id": r.id, "entry": note.entry, "signature": r.signature})
    expired = [
        {"entry": i, "match": e.get("match"), "expires": e.get("expires"), "tracker": e.get("tracker")}
        for i, e in enumerate(entries) if is_expired(e, today)
    ]
    skipped = {i for i in outside or () if 0 <= i < len(entries) and not hit[i]}
    unmatched = [{"entry": i, "match": e.get("match")} for i, e in enumerate(entries) if not hit[i] and i not in skipped]
    return {
        "entries": len(entries),
        "outside_selection": len(skipped),
        "date": today.isoformat(),
        "xfailed": xfailed,
        "xpassed": xpassed,
        "signature_changed": changed,
        "expired": expired,
        "unmatched": unmatched,
        "invalid": invalid_entries(entries, device),
    }


def run_date(run: Run) -> _dt.date:
    """The date a run's ledger is judged at: its start (so `report` later agrees with the run)."""
    started = run.started or ""
    try:
        return _dt.date.fromisoformat(started[:10])
    except ValueError:
        return _dt.datetime.now(_dt.timezone.utc).date()


class RunLedger:
    """A run's ledger, compiled once (entries, matcher, judging date, device): called per record by
    the process that builds the record (results/ledger/annotate.py, engine/plugin.py)."""

    def __init__(self, run: Run) -> None:
        self.entries = run.entries
        self.matcher = compile_entries(self.entries)
        self.today = run_date(run)
        self.device = run_device(run)

    def __call__(self, record: CaseRecord) -> CaseRecord:
        return apply(record, self.entries, self.today, self.matcher, self.device)


def report_for_run(run: Run, records: list[CaseRecord]) -> dict[str, Any]:
    return ledger_report(run.entries, records, run_date(run), run_device(run), run.expectations_outside_selection)


def gate_failures(run: Run) -> list[str]:
    """Why the run fails (empty: exit 0). Flaky fails a strict run, and a run with --repeat (a case that
    failed some of its repeats: results/reports/repeats.py); otherwise it is a rerun's pass, which does not."""
    strict = bool(run.strict_expectations)
    totals = run.totals or {}
    flaky_fails = strict or (isinstance(run.repeat, int) and run.repeat > 1)
    reasons = [f"{totals[s]} {s}" for s in FAILURES if totals.get(s) and (flaky_fails or s != "flaky")]
    if totals.get("not_run"):  # planned cases without a result: never a clean run
        reasons.append(f"{totals['not_run']} not_run")
    if run.unreadable_records:
        reasons.append(f"{run.unreadable_records} unreadable records")
    if run.internal_errors:  # TorchCTS failed around these cases (exit 3: verdict_exit)
        reasons.append(f"{run.internal_errors} TorchCTS internal errors")
    if run.plan_missing:  # no plan: the run cannot be shown complete (records may have been cut)
        missing = run.missing_records
        reasons.append("plan.jsonl is missing" + (f" ({missing} planned cases have no record)" if missing else ""))
    invalid = (run.ledger or {}).get("invalid")
    if invalid:
        reasons.append(f"{len(invalid)} ledger entries invalid on this device")
    if strict:
        ledger = run.ledger or {}
        if totals.get("xpassed"):
            reasons.append(f"{totals['xpassed']} xpassed (strict expectations)")
        for key in ("expired", "unmatched"):
            if ledger.get(key):
                reasons.append(f"{len(ledger[key])} {key} ledger entries (strict expectations)")
    return reasons


def verdict_exit(run: Run, restated: bool = False) -> int:
    """The exit status of the verdict a finished run states (`run`, `report`, `merge`): 3 when
    TorchCTS itself failed around a case (records with `internal_error`), alone or in a full run,
    1 for any other gate failure, 0 clean. `restated` (report, merge: the verdict read back from
    records anyone can edit): records saying TorchCTS failed are a failure of the run (exit 1, the
    scorecard names them), never this command's own failure (exit 3 is kept for that)."""
    if run.internal_errors and not restated:
        return ExitCode.INTERNAL
    return ExitCode.FAILURES if gate_failures(run) else ExitCode.OK


def ledger_lines(run: Run) -> list[str]:
    """Plain-text lines for the scorecard and `report`."""
    ledger = run.ledger or {}
    if not ledger.get("entries"):
        return []
    outside = f" ({ledger['outside_selection']} for cases outside this selection)" if ledger.get("outside_selection") else ""
    lines = [f"expectations: {plural(ledger['entries'], 'entry', 'entries')}{outside}, {ledger.get('xfailed', 0)} xfailed, "
             f"{len(ledger.get('xpassed', []))} xpassed, {len(ledger.get('expired', []))} expired, "
             f"{len(ledger.get('unmatched', []))} unmatched"]
    for x in ledger.get("xpassed", []):
        lines.append(f"  XPASSED  {x['id']}: remove expectations[{x['entry']}]")
    for x in ledger.get("expired", []):
        lines.append(f"  EXPIRED  expectations[{x['entry']}] {x['match']!r} expired {x['expires']}"
                     + (f" ({x['tracker']})" if x.get("tracker") else ""))
    for x in ledger.get("invalid", []):
        lines.append(f"  INVALID  expectations[{x['entry']}] {x['match']!r}: {x['reason']}")
    for x in ledger.get("unmatched", []):
        lines.append(f"  UNMATCHED expectations[{x['entry']}] {x['match']!r} matches no selected case")
    for x in ledger.get("signature_changed", []):
        lines.append(f"  CHANGED  {x['id']}: expectations[{x['entry']}] expects another signature; got {x['signature']}")
    return lines
