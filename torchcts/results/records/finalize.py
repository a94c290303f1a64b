"""Closing a run folder: totals, the ledger report and the artifacts, all from the records.

Called at the end of `torchcts run`, by `torchcts report` for any run (also a killed one), and by
`torchcts merge` for the joined shards.
"""

from __future__ import annotations

from pathlib import Path

from torchcts.compat import describe_fallbacks
from torchcts.errors import UsageError
from torchcts.model.record import CaseRecord, skip_record
from torchcts.model.run import Run
from torchcts.model.status import EXECUTED
from torchcts.results.ledger.apply import crash_rule, report_for_run, run_device
from torchcts.results.records import rundir
from torchcts.results.records.artifacts import write_artifacts
from torchcts.results.records.plan import PLAN, iter_plan
from torchcts.results.reports.summary import totals
from torchcts.results.repro.commands import offered_commands


def not_run_records(run_dir: Path, recorded: set[str], problems: list[str]) -> list[CaseRecord]:
    """A `not_run` record for every planned case without a record: a killed run's reports list
    them instead of showing only what finished."""
    if not (run_dir / PLAN).is_file():
        return []
    missing = []
    try:
        for case in iter_plan(run_dir):  # streamed: only the cases without a record are held
            if case.id not in recorded:
                missing.append(skip_record(case, "not_run", "planned, but no result was recorded (the run was "
                                           "interrupted, killed or stopped early)"))
    except UsageError as exc:
        problems.append(str(exc))
        return []
    return missing


def finalize(run_dir: Path, status: str, manifest_arg: str | None = None) -> tuple[Run, list[CaseRecord]]:
    """Totals and artifacts from the records; run.json marked complete or interrupted.

    Returns (run.json, the final records) so the scorecard and the comparison with the previous run
    reuse the records read here instead of parsing cases.jsonl again. `manifest_arg`: the run's own
    `--manifest` as typed (run.json keeps it scrubbed), for the commands the reports offer."""
    run = rundir.read_run(run_dir)
    unreadable: list[str] = []
    # read line by line, the last record of a case superseding (reruns, crashes): one record per case held
    records = rundir.last_per_case(rundir.iter_records(run_dir, unreadable))
    missing = not_run_records(run_dir, {r.id for r in records}, unreadable)
    if status in ("complete", "incomplete"):  # pytest ended; with planned cases lacking a result, never "complete"
        status = "incomplete" if missing else "complete"
    records += missing
    device = run_device(run)
    records = [offered_commands(crash_rule(r, device), run, run_dir, manifest_arg) for r in records]  # issue 31
    if not (run_dir / PLAN).is_file():  # every run writes its plan first: without it, nothing shows the run whole
        status = "interrupted"
        executed = sum(1 for r in records if r.status in EXECUTED)
        run.plan_missing = True
        run.missing_records = max(0, (run.planned or 0) - executed)
    else:
        run.unset("plan_missing", "missing_records")
    run.status, run.ended, run.totals = status, run.ended or rundir.utc_now(), totals(records)
    run.unreadable_records = len(unreadable)  # never silently dropped: every report shows them
    run.internal_errors = sum(1 for r in records if r.internal_error)  # exit 3 (ledger.verdict_exit)
    run.record_problems = unreadable[:20]
    run.compat_fallbacks = describe_fallbacks(
        {*(run.compat_fallbacks or {}), *(n for r in records for n in _names(r.compat_fallbacks))})
    run.ledger = report_for_run(run, records)
    rundir.write_run(run_dir, run)
    write_artifacts(run_dir, run, records)
    return run, records


def _names(value: object) -> list[str]:
    """A record's `compat_fallbacks` (kept as read, so possibly crafted): its names, nothing else."""
    return [n for n in value if isinstance(n, str)] if isinstance(value, list) else []
