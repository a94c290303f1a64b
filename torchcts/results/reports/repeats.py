"""`run --repeat N`: one record from a case's N runs, its pass rate, and how reports show it.

A backend bug that shows once in k runs (a race, a stale cache, an uninitialised workspace) passes a
single run most of the time; engineers repeat a case hundreds of times by hand to see it
(intel/torch-xpu-ops#3644). Under `--repeat N` each case runs N times in its process
(engine/repeat.py) and `combine` makes the one record reports read: every run passed, `passed`;
every run failed, the first failure (rate 0/N); some of each, `flaky` with the first failure as
evidence. The rate is two typed fields of the record (`repeats`, `repeat_passes`), so a report
read back from cases.jsonl shows it. A crash or a timeout in any repeat ends the process or the
item: that case is recorded `crashed`/`timeout` as without --repeat (engine/isolation.py), never
hidden by the repeats that passed. In a run with --repeat, `flaky` fails the run
(results/ledger/apply.py: gate_failures).
"""

from __future__ import annotations

from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.results.reports.failure import repeat_line
from torchcts.results.reports.quoting import html_text, md_code, md_text
from torchcts.results.reports.repeat_rate import flaky_in_repeats, pass_rate, repeated
from torchcts.results.triage.signatures import signature_of

_FIRST_FAILURE = ("status", "message", "signature", "mismatch", "exception")


def combine(runs: list[CaseRecord]) -> CaseRecord:
    """The record of a case from the records of its repeats (each with a verdict: passed, failed or
    error), in order. Its duration is the sum of the repeats' (what the case cost the run)."""
    n = len(runs)
    passes = sum(1 for r in runs if r.status == Status.PASSED)
    failing = [i for i, r in enumerate(runs, 1) if r.status != Status.PASSED]
    total = round(sum(float(r.duration_s or 0.0) for r in runs), 6)
    if not failing:
        return runs[0].copy(repeats=n, repeat_passes=n, duration_s=total)
    first = runs[failing[0] - 1]
    if passes == 0:
        return first.copy(repeats=n, repeat_passes=0, duration_s=total)  # its message and signature as one run's
    shown = ", ".join(map(str, failing[:10])) + (", ..." if len(failing) > 10 else "")
    evidence = {k: getattr(first, k) for k in _FIRST_FAILURE if getattr(first, k)}
    evidence["signature"] = first.signature or signature_of(first)  # triage groups flaky cases by it
    return first.copy(
        status=Status.FLAKY, repeats=n, repeat_passes=passes, duration_s=total,
        message=f"failed {n - passes} of {n} repeats ({shown}); "
                f"repeat {failing[0]}: {first.message or ''}"[:600],
        first_failure={k: v.value if isinstance(v, Status) else v for k, v in evidence.items()},
    )


def flaky_under_repeat(records: list[CaseRecord]) -> list[CaseRecord]:
    """The cases that failed some repeats and passed others, lowest pass rate first."""
    found = [r for r in records if flaky_in_repeats(r)]
    return sorted(found, key=lambda r: (_fraction(r), r.id))


def _fraction(record: CaseRecord) -> float:
    passes, n = repeated(record) or (0, 1)
    return passes / n


def markdown_lines(records: list[CaseRecord], limit: int = 50) -> list[str]:
    """summary.md's section: each flaky case with its pass rate."""
    flaky = flaky_under_repeat(records)
    if not flaky:
        return []
    lines = [f"## Flaky under --repeat ({len(flaky)})", "",
             "Cases that failed some repeats and passed others: a failure of the run.", ""]
    lines += [f"- {md_code(r.id)}: {md_text(repeat_line(r))}" for r in flaky[:limit]]
    if len(flaky) > limit:
        lines.append(f"- ... and {len(flaky) - limit} more (cases.jsonl: repeats, repeat_passes)")
    return [*lines, ""]


def render_html(records: list[CaseRecord], limit: int = 200) -> str:
    """report.html's section: a table of the flaky cases and their pass rates ('' when none)."""
    flaky = flaky_under_repeat(records)
    if not flaky:
        return ""
    rows = "".join(f"<tr><td><code>{html_text(r.id)}</code></td><td class='num'>{pass_rate(r)}</td></tr>"
                   for r in flaky[:limit])
    more = f"<p>... and {len(flaky) - limit} more (cases.jsonl)</p>" if len(flaky) > limit else ""
    return (f"<p>{len(flaky)} cases failed some repeats and passed others: each is a failure of the run.</p>"
            f"<table id='flaky-repeats'><thead><tr><th>case</th><th>passed / repeats</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{more}")
