"""Totals and the Markdown summary, rebuilt from records alone (also for a killed run)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import FAILURES, ORDER, STATUSES
from torchcts.results.reports.failure import cite_url, details
from torchcts.results.reports.quoting import md_code, md_text, one_line
from torchcts.results.reports.repeats import markdown_lines as flaky_markdown
from torchcts.results.reports.skips import render_markdown as skip_summary
from torchcts.results.reports.strength import render_markdown as strength_markdown
from torchcts.results.triage.crash_frames import stopped_by_budget


def totals(records: Iterable[CaseRecord]) -> dict[str, int]:
    return ordered(Counter((r.status or "error") for r in records))


def ordered(counts: dict[str, int]) -> dict[str, int]:
    """Status counts in the one order every report uses (statuses.ORDER): run.json's keys come back
    sorted by name, so `merge` and `report` would otherwise print them in another order than `run`."""
    return {s: counts[s] for s in ORDER if counts.get(s)}


def filtered_note(run: Run, counts: dict[str, int]) -> str | None:
    """The run's one "filtered" count, with where it comes from: the cases the selection options
    left out (run.json's `filtered`, never recorded) and the planned cases pytest's -k/-m/--lf
    deselected (recorded `filtered`). Two bare "filtered" numbers on one line read as a contradiction."""
    options, pytest_k = int(run.filtered or 0), int(counts.get("filtered", 0))
    if not (options or pytest_k):
        return None
    both = bool(options and pytest_k)
    parts = ([f"{f'{options} ' if both else ''}outside the selection: other levels, suites, ops, dtypes"] if options
             else []) + ([f"{f'{pytest_k} ' if both else ''}deselected by pytest's -k/-m/--lf"] if pytest_k else [])
    return f"filtered {options + pytest_k} ({'; '.join(parts)})"


def by(records: list[CaseRecord], key: str) -> dict[str, dict[str, int]]:
    """Status counts grouped by a record field (suite, level, dtype, ...)."""
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        groups[str(getattr(r, key))][(r.status or "error")] += 1
    return {k: dict(v) for k, v in sorted(groups.items())}


def failures(records: list[CaseRecord]) -> list[CaseRecord]:
    return [r for r in records if r.status in FAILURES]


def not_run(records: list[CaseRecord]) -> list[CaseRecord]:
    """Planned cases without a result (results/records/finalize.py adds them), listed so none vanish."""
    return [r for r in records if r.status == "not_run"]


NOT_RUN_NOTE = STATUSES["not_run"].description.capitalize()


def slowest(records: list[CaseRecord], n: int) -> list[CaseRecord]:
    """The `n` records that took longest (for the scorecard and report.html)."""
    return sorted((r for r in records if r.duration_s), key=lambda r: -float(r.duration_s))[:n]


def warmup_line(records: list[CaseRecord]) -> str | None:
    """Each worker's one-time warm-up (records' warmup_s, engine/one_case.py), said apart from the
    case times: "slowest" would otherwise name each worker's first OpInfo case."""
    per: dict[str, float] = defaultdict(float)
    for r in records:
        if isinstance(r.warmup_s, (int, float)) and r.warmup_s > 0:
            per[str(r.worker or "?")] += float(r.warmup_s)
    if not per:
        return None
    return ("worker warm-up (the OpInfo database import, not in the case times): "
            + ", ".join(f"{w} {t:.2f}s" for w, t in sorted(per.items())))


def render_markdown(run: Run, records: list[CaseRecord], first_failures: int = 20) -> str:
    t = totals(records)
    lines = [
        f"# TorchCTS run {md_text(run.name or '')}",
        "",
        f"- device: {md_code(run.device_type)} (gate {md_code(run.device.gate if run.device else None)})"
        f"{' — validation, not backend evidence' if run.validation else ''}",
        f"- torch {md_text((run.torch or {}).get('torch'))}, torchcts {md_text(run.torchcts)}",
        *([f"- **outside the validated range**: {md_text(run.torch_drift)}"] if run.torch_drift else []),
        f"- status: {md_text(run.status)}" + (f"; {md_text(note)}" if (note := filtered_note(run, t)) else ""),
        *([f"- **{md_text(run.unreadable_records)} unreadable records** in cases.jsonl, not in the totals: "
           + md_text("; ".join(run.record_problems or []))] if run.unreadable_records else []),
        *([f"- **plan.jsonl is missing**: the run cannot be shown complete ({md_text(run.missing_records or 0)} "
           "planned cases have no record)"] if run.plan_missing else []),
        *([f"- compatibility fallbacks (see run.json): {md_text(', '.join(map(str, run.compat_fallbacks)))}"]
          if run.compat_fallbacks else []),
        "",
        "| status | cases |",
        "| --- | ---: |",
        *[f"| {k} | {v} |" for k, v in t.items() if k != "filtered"],
        "",
        *skip_summary(records),
    ]
    for key in ("level", "suite", "dtype"):
        groups = by(records, key)
        statuses = [s for s in ORDER if any(s in g for g in groups.values())]
        lines += [f"## By {key}", "", f"| {key} | " + " | ".join(statuses) + " |",
                  "| --- |" + " ---: |" * len(statuses)]
        lines += [f"| {md_text(k)} | " + " | ".join(str(g.get(s, 0)) for s in statuses) + " |" for k, g in groups.items()]
        lines.append("")
    lines += strength_markdown(records)
    fails = failures(records)
    if fails:
        lines += ["## First failures", ""]
        for r in fails[:first_failures]:
            lines.append(f"- **{md_text(r.status)}** {md_code(r.id)}: {md_text(str(r.message or '')[:400])}")
            lines += [f"  - {md_text(line)}" for line in details(r, cite=False)]
            if r.cite:  # a field case: the real report it replays (an unsafe URL stays text)
                url = cite_url(r)
                lines.append(f"  - replays the report: <{url}>" if url else f"  - replays the report: {md_code(r.cite)}")
            if r.repro:
                lines.append(f"  - repro: {md_code(r.repro)}")
            if r.repro_script:
                lines.append(f"  - standalone script: {md_code(r.repro_script)}")
        lines.append("")
    lines += flaky_markdown(records)  # results/reports/repeats.py: flaky under --repeat, with pass rates
    missing = not_run(records)
    if missing:
        lines += [f"## Not run ({len(missing)})", "", f"{NOT_RUN_NOTE}:", ""]
        lines += [f"- {md_code(r.id)}" + (f": {md_text(str(r.message))}" if stopped_by_budget(r) else "")
                  for r in missing[:first_failures]]
        if len(missing) > first_failures:
            lines.append(f"- ... and {len(missing) - first_failures} more (junit.xml lists every case)")
        lines.append("")
    from torchcts.results.ledger.apply import ledger_lines
    from torchcts.results.reports.capabilities import markdown_lines as capability_lines
    from torchcts.results.reports.fallback_section import markdown_lines as fallback_markdown
    from torchcts.results.triage.clusters import render_markdown as triage_markdown

    lines += triage_markdown(records)
    lines += fallback_markdown(records)
    lines += capability_lines(run, records)
    ledger = ledger_lines(run)
    if ledger:
        lines += ["## Expectations ledger", "", *[f"    {one_line(line)}" for line in ledger], ""]
    return "\n".join(lines)
