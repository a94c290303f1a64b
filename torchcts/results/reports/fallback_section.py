"""CPU-fallback provenance in the reports: which passes rest on the backend's CPU fallback, and the
fallback ops ranked by the cases they carry (issue 48 item 4).

A pass whose case ran an op on the backend's boxed CPU fallback (cases/fallback.py fills each
record's `fallback`) proves the CPU kernel, not the backend's: the engineer implementing the
backend wants those passes told apart, and the fallback ops that carry the most cases first (what
to implement next). Torch-free, from the records alone: the scorecard, summary.md, report.html and
`coverage report RUN` all read it here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from torchcts.model.record import CaseRecord
from torchcts.model.status import EXECUTED, FAILURES
from torchcts.results.reports.quoting import html_text as _e
from torchcts.results.reports.quoting import md_code


def fallback_names(rec: CaseRecord) -> list[str]:
    """The record's fallback overloads; [] when none or not a list of names (a crafted record)."""
    names = rec.fallback
    if isinstance(names, list):
        return [n for n in names if isinstance(n, str)]
    return []


@dataclass
class FallbackOp:
    """One fallback overload and the executed cases that ran it: all, passed, failing."""

    op: str
    cases: int = 0
    passed: int = 0
    failing: int = 0

    def to_json(self) -> dict[str, object]:
        return {"op": self.op, "cases": self.cases, "passed": self.passed, "failing": self.failing}


@dataclass
class FallbackSummary:
    passes: int = 0  # passed records
    passes_on_fallback: list[str] = field(default_factory=list)  # ids of passes that ran a fallback op
    cases_on_fallback: int = 0  # executed records (any status) that ran a fallback op
    ops: list[FallbackOp] = field(default_factory=list)  # most cases first

    def to_json(self) -> dict[str, object]:
        return {"passes": self.passes, "passes_on_fallback": len(self.passes_on_fallback),
                "cases_on_fallback": self.cases_on_fallback, "ops": [o.to_json() for o in self.ops]}


def summarize(records: list[CaseRecord]) -> FallbackSummary:
    out = FallbackSummary()
    ops: dict[str, FallbackOp] = {}
    for r in records:
        if r.status not in EXECUTED:
            continue
        passed = r.status == "passed"
        out.passes += passed
        names = fallback_names(r)
        if not names:
            continue
        out.cases_on_fallback += 1
        if passed:
            out.passes_on_fallback.append(r.id)
        for name in names:
            op = ops.setdefault(name, FallbackOp(name))
            op.cases += 1
            op.passed += passed
            op.failing += r.status in FAILURES
    out.ops = sorted(ops.values(), key=lambda o: (-o.cases, o.op))
    return out


def headline(s: FallbackSummary) -> str | None:
    """One line, or None when no case ran an op on a fallback."""
    if not s.cases_on_fallback:
        return None
    return (f"CPU fallback: {len(s.passes_on_fallback)} of {s.passes} passes ran at least one op on the backend's "
            f"CPU fallback ({len(s.ops)} fallback ops, {s.cases_on_fallback} executed cases in all): those passes "
            "prove the CPU kernel, not the backend's")


def scorecard_lines(records: list[CaseRecord], top: int = 5) -> list[str]:
    s = summarize(records)
    head = headline(s)
    if head is None:
        return []
    ranked = ", ".join(f"{o.op} {o.cases}" for o in s.ops[:top])
    more = f", ... ({len(s.ops) - top} more in summary.md)" if len(s.ops) > top else ""
    return [head, f"  implement next (fallback ops by cases they carry): {ranked}{more}"]


def ops_table(ops: Iterable[Mapping[str, Any]]) -> list[str]:
    """The markdown table of fallback ops (`FallbackOp.to_json` rows): summary.md's and `coverage
    report`'s, which reads them back from the run's coverage summary."""
    return ["| op | cases | passed | failing |", "| --- | ---: | ---: | ---: |",
            *(f"| {md_code(str(o.get('op')))} | {o.get('cases')} | {o.get('passed')} | {o.get('failing')} |" for o in ops)]


def markdown_lines(records: list[CaseRecord], top: int = 30, listed: int = 50) -> list[str]:
    s = summarize(records)
    head = headline(s)
    if head is None:
        return []
    lines = ["## CPU fallback", "", head + ".", "", "Fallback ops by the cases they carry (implement the top ones first):",
             "", *ops_table([o.to_json() for o in s.ops[:top]])]
    if len(s.ops) > top:
        lines.append(f"| ... {len(s.ops) - top} more (report.html lists all) | | | |")
    lines += ["", f"Passes resting on the fallback ({len(s.passes_on_fallback)}):", ""]
    lines += [f"- {md_code(i)}" for i in s.passes_on_fallback[:listed]]
    if len(s.passes_on_fallback) > listed:
        lines.append(f"- ... and {len(s.passes_on_fallback) - listed} more (report.html lists all)")
    return [*lines, ""]


def render_html(records: list[CaseRecord]) -> str:
    s = summarize(records)
    head = headline(s)
    if head is None:
        return ""
    rows = "".join(f"<tr><td><code>{_e(o.op)}</code></td><td class='num'>{o.cases}</td>"
                   f"<td class='num'>{o.passed}</td><td class='num'>{o.failing}</td></tr>" for o in s.ops)
    on_fallback = set(s.passes_on_fallback)
    by_id = {r.id: fallback_names(r) for r in records if r.id in on_fallback}
    passes = "".join(f"<li><code>{_e(i)}</code>: {_e(', '.join(by_id.get(i, [])))}</li>" for i in s.passes_on_fallback)
    return (f"<p>{_e(head)}.</p>"
            "<table id='fallback-ops'><thead><tr><th>fallback op</th><th>cases</th><th>passed</th><th>failing</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>"
            f"<details><summary>passes resting on the fallback ({len(s.passes_on_fallback)})</summary>"
            f"<ul id='fallback-passes'>{passes}</ul></details>")
