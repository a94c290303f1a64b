"""The failures of report.html, grouped by triage cluster (results/triage/clusters.py, the same clusters as
summary.md and `torchcts report --triage`), each failure with what a person needs to act on it:
its sample, expected vs actual, error metrics against the tolerance, the repro command (with a copy
button) and its standalone repro script (linked when `torchcts repro` wrote it into the run folder).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from torchcts.model.record import CaseRecord
from torchcts.oracle.mismatch import Mismatch
from torchcts.results.reports.failure import cite_url, details, rel_error_text
from torchcts.results.reports.quoting import html_text as _e  # None reads as ''
from torchcts.results.triage.clusters import Cluster, clusters, top_counts

COLORS = {
    "passed": "#2e7d32", "xfailed": "#6a8f3a", "xpassed": "#c77c02", "failed": "#c62828", "error": "#ad1457",
    "crashed": "#6a1b9a", "timeout": "#4527a0", "flaky": "#ef6c00", "not_claimed": "#78909c",
    "filtered": "#90a4ae", "not_applicable": "#9e9e9e", "pending": "#8d6e63", "not_run": "#5d4037",
}
OPEN_CLUSTERS = 5  # the largest clusters start expanded, the rest collapsed


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else _e(v)


def copyable(text: str, what: str) -> str:
    """A command shown as code with a button that copies it (the page's script handles the click)."""
    if not text:
        return ""
    return (f"<div class='cmd'><code class='repro'>{_e(text)}</code>"
            f"<button type='button' class='copy' data-copy='{_e(text)}' title='copy the {_e(what)}'>copy</button></div>")


def _expected_actual(m: Mismatch | None) -> str:
    if m is None or (m.first_expected is None and m.first_actual is None):
        return ""
    where = f" at {_e(m.first_index)}" if m.first_index is not None else ""
    # the order of the record's message (oracle/mismatch.py: "got X, expected Y"): side by side,
    # two orders make a reader swap the numbers
    return (f"<div class='ea'>first difference{where}: got <code>{_e(m.first_actual)}</code>, "
            f"expected <code>{_e(m.first_expected)}</code></div>")


def _metrics(r: CaseRecord) -> str:
    m = Mismatch.from_json(r.mismatch)
    info = r.info if isinstance(r.info, dict) else {}
    tol = info.get("tolerance") if isinstance(info.get("tolerance"), dict) else {}
    atol = m.atol if m is not None and m.atol is not None else tol.get("atol")
    rtol = m.rtol if m is not None and m.rtol is not None else tol.get("rtol")
    rows = []
    if m is not None and m.max_abs_error is not None:
        rows.append(f"max abs <b>{_fmt(m.max_abs_error)}</b> · max rel <b>{_e(rel_error_text(m))}</b>")
    if m is not None and m.total:
        rows.append(f"{_e(m.mismatched if m.mismatched is not None else '?')} of {_e(m.total)} elements differ")
    if atol is not None or rtol is not None:
        category = f" ({_e(tol['category'])})" if tol.get("category") else ""
        rows.append(f"tolerance: atol {_fmt(atol)} · rtol {_fmt(rtol)}{category}")
    how = r.signal or (f"exit {r.exit_code}" if r.exit_code is not None and r.status == "crashed" else "")
    if how:
        rows.append(f"signal {_e(how)}")
    return "".join(f"<div>{row}</div>" for row in rows) + _expected_actual(m)


def _repro(r: CaseRecord, scripts: Collection[str]) -> str:
    out = copyable(str(r.repro or ""), "repro command")
    if r.id in scripts:
        from torchcts.results.repro.script import SCRIPT, safe_name

        href = f"repro/{safe_name(r.id)}/{SCRIPT}"
        out += f"<div class='script'>script: <a href='{_e(href)}'>{_e(href)}</a></div>"
    elif r.repro_script:
        out += "<div class='script'>write a standalone script:</div>" + copyable(str(r.repro_script), "script command")
    return out


def _cite(r: CaseRecord) -> str:
    """A field case's report, linked (text when the record's URL is not safe to link)."""
    if not r.cite:
        return ""
    url = cite_url(r)
    shown = f"<a class='cite' href='{_e(url)}' rel='noopener noreferrer'>{_e(url)}</a>" if url else _e(r.cite)
    return f"<div class='ctx'>replays the report {shown}</div>"


def failure_row(r: CaseRecord, scripts: Collection[str]) -> str:
    status = str(r.status or "")
    detail = r.output_tail or r.traceback or ""
    context = "".join(f"<div class='ctx'>{_e(line)}</div>" for line in details(r, cite=False)) + _cite(r)
    output = f"<details><summary>output</summary><pre>{_e(detail)}</pre></details>" if detail else ""
    seconds = f"<div class='ctx'>{_fmt(r.duration_s)} s</div>" if r.duration_s is not None else ""
    return (f"<tr data-status='{_e(status)}'><td style='color:{COLORS.get(status, '#000')}'><b>{_e(status)}</b></td>"
            f"<td class='case'><code>{_e(r.id)}</code>{context}{seconds}"
            f"<div class='msg'>{_e(str(r.message or '')[:600])}</div>{output}</td>"
            f"<td class='metrics'>{_metrics(r)}</td><td class='repro-cell'>{_repro(r, scripts)}</td></tr>")


def cluster_block(index: int, c: Cluster, scripts: Collection[str]) -> str:
    shared = (f"<div class='shared'>shared by all {c.count}: <b>{_e(', '.join(c.shared))}</b></div>"
              if c.shared else "")
    dtypes = f"; dtypes: {_e(top_counts(c.dtypes))}" if c.dtypes else ""
    rows = "".join(failure_row(r, scripts) for r in c.records)
    return (f"<details class='cluster' data-bucket='{_e(c.bucket)}'{' open' if index < OPEN_CLUSTERS else ''}>"
            f"<summary><span class='count'>{c.count}</span> {_e(c.title)} <span class='shown'></span></summary>"
            f"<div class='ctx'>ops: {_e(top_counts(c.ops))}{dtypes}</div>{shared}"
            f"<table class='failures'><thead><tr><th>status</th><th>case, sample and message</th>"
            f"<th>error against tolerance</th><th>reproduce</th></tr></thead><tbody>{rows}</tbody></table></details>")


def failures_section(records: list[CaseRecord], scripts: Collection[str]) -> str:
    """The filter controls and one block per cluster, largest first ('' without failures)."""
    found = clusters(records)
    if not found:
        return "<p id='no-failures'>No failures.</p>"
    statuses = sorted({str(r.status) for c in found for r in c.records})
    options = "".join(f"<option value='{_e(s)}'>{_e(s)}</option>" for s in statuses)
    return ("<div class='controls'><input id='q' placeholder='filter: case id, op, message, argument...'>"
            f"<select id='st'><option value=''>all statuses</option>{options}</select><span id='shown'></span></div>"
            f"<div id='clusters'>{''.join(cluster_block(i, c, scripts) for i, c in enumerate(found))}</div>")
