"""The end-of-run scorecard printed on the terminal (also by `torchcts report`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import TextIO

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import ORDER
from torchcts.results.records import rundir
from torchcts.results.reports.failure import details
from torchcts.results.reports.fallback_section import scorecard_lines as fallback_lines
from torchcts.results.reports.quoting import TerminalOut, one_field
from torchcts.results.reports.repeat_rate import pass_rate
from torchcts.results.reports.repeats import flaky_under_repeat
from torchcts.results.reports.strength import weak_lines
from torchcts.results.reports.summary import by, failures, filtered_note, ordered, warmup_line
from torchcts.results.reports.summary import slowest as slowest_records
from torchcts.results.triage.crash_frames import stopped_by_budget


def by_capability(records: list[CaseRecord]) -> dict[str, dict[str, int]]:
    """Status counts per required capability (a case needing several counts under each)."""
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        for req in r.requires or ():
            for cap in str(req).split("|"):
                groups[cap][(r.status or "error")] += 1
    return {k: dict(v) for k, v in sorted(groups.items())}


def decided_before_run(records: list[CaseRecord]) -> dict[str, int]:
    """not_claimed/not_applicable counts of the cases selection decided (engine/selection.py): they
    are never pytest items, so pytest's summary line cannot count them. A case that ran and found
    itself not applicable carries the probe's `started_at` (engine/probe.py); these do not."""
    counts: Counter[str] = Counter(str(r.status) for r in records
                                   if r.status in ("not_claimed", "not_applicable") and r.started_at is None)
    return {k: counts[k] for k in ("not_claimed", "not_applicable") if counts[k]}


def _counts(g: dict[str, int]) -> str:
    return " ".join(f"{s}={g[s]}" for s in ORDER if g.get(s))


def _section(out: TextIO, title: str, groups: dict[str, dict[str, int]]) -> None:
    if not groups:
        return
    print(f"by {title}:", file=out)
    width = max(len(k) for k in groups)
    for k, g in groups.items():
        print(one_field(f"  {k:<{width}}  {_counts(g)}"), file=out)


def print_scorecard(
    run_dir: Path, run: Run, out: TextIO, first: int = 10, slowest: int = 5,
    regressions: str | None = None, records: list[CaseRecord] | None = None,
    live_paths: dict[str, str] | None = None,
) -> None:
    """`records`: the run's final records when the caller has read them already (finalize).
    `live_paths` (scrubbed -> as given) restores, on the terminal of the run itself, the paths the
    run folder keeps scrubbed, so each printed repro line runs as printed."""
    out = TerminalOut(out, restore=live_paths)  # records come from files anyone can craft: no escape sequences reach the terminal
    if records is None:
        records = rundir.final_records(run_dir)
    t = ordered(run.totals or {})
    print("", file=out)
    print("=" * 20 + " TorchCTS scorecard " + "=" * 20, file=out)
    label = " (validation: not backend evidence)" if run.validation else ""
    print(one_field(f"device {run.device_type} gate {run.gate}{label}; run {run.status}"),
          file=out)
    note = filtered_note(run, t)
    print("totals: " + ", ".join(f"{k} {v}" for k, v in t.items() if k != "filtered") + (f"; {note}" if note else ""),
          file=out)
    before = decided_before_run(records)
    if before:
        print("  of these, decided before the run from the claims and the build (not in pytest's counts): "
              + ", ".join(f"{k} {v}" for k, v in before.items()), file=out)
    for key in ("level", "suite", "dtype"):
        _section(out, key, by(records, key))
    _section(out, "capability", by_capability(records))
    for line in weak_lines(records):  # passes that prove nothing (oracle/weak.py), per suite
        print(one_field(line), file=out)
    for line in fallback_lines(records):  # passes resting on the backend's CPU fallback, ops to implement next
        print(one_field(line), file=out)
    if run.unreadable_records:
        print(f"{run.unreadable_records} unreadable records in cases.jsonl (not in the totals): "
              + "; ".join(run.record_problems or [])[:300], file=out)
    if run.internal_errors:  # `run` exits 3 for them; `report` restates them as a failure (exit 1)
        print(f"{run.internal_errors} records say TorchCTS failed around their case (internal errors of the run "
              "that wrote them): the run is not clean", file=out)
    if run.plan_missing:
        print("plan.jsonl is missing: the run cannot be shown complete"
              + (f" ({run.missing_records} planned cases have no record)" if run.missing_records else ""),
              file=out)
    if t.get("not_run"):
        budget = sum(1 for r in records if stopped_by_budget(r))
        if t["not_run"] > budget:
            print(f"{t['not_run'] - budget} planned cases have no result (not_run): the run was interrupted or "
                  "stopped early", file=out)
        if budget:
            print(f"{budget} cases not run (not_run): the crash budget stopped their op family after repeated "
                  "crashes with one signature; --no-crash-budget runs them", file=out)
    fails = failures(records)
    if fails:
        print(f"first failures ({len(fails)} in all):", file=out)
    for r in fails[:first]:
        # each printed line one line whatever the record holds (docs/security.md)
        print(one_field(f"  {r.status.upper():8} {r.id}: {str(r.message or '')[:400]}"), file=out)
        for line in details(r):
            print(one_field(f"           {line[:300]}"), file=out)
        for key, label in (("repro", "repro"), ("repro_script", "script")):
            if getattr(r, key):
                print(one_field(f"           {label}: {getattr(r, key)}"), file=out)
    if len(fails) > first:
        print(f"  ... and {len(fails) - first} more (see summary.md / report.html)", file=out)
    flaky = flaky_under_repeat(records)
    if flaky:  # results/reports/repeats.py: each a failure of the run, lowest pass rate first
        print(one_field(f"flaky under --repeat ({len(flaky)}): " + ", ".join(
            f"{r.id} {pass_rate(r)}" for r in flaky[:first])), file=out)
    slow = slowest_records(records, slowest)
    if slow:
        print(one_field("slowest: " + ", ".join(f"{r.id} {float(r.duration_s):.2f}s" for r in slow)), file=out)
    warmup = warmup_line(records)
    if warmup:
        print(one_field(warmup), file=out)
    if regressions:
        print(regressions, file=out)
    from torchcts.results.ledger.apply import gate_failures, ledger_lines

    for line in ledger_lines(run):
        print(one_field(line), file=out)
    if run.strict_expectations and gate_failures(run):
        print(one_field("strict expectations: the run fails on " + "; ".join(gate_failures(run))), file=out)
    print(f"results: {_shown(run_dir)} (report.html, summary.md, junit.xml, cases.jsonl)", file=out)


def _shown(run_dir: Path) -> str:
    """The run folder as a short path: relative to the working folder when it lies inside it (an
    absolute path outside it is the one the user gave with --results-dir)."""
    try:
        return str(Path(run_dir).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(run_dir)
