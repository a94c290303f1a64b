"""report.html: the page an engineer opens first, one self-contained file (inline CSS, JS and SVG,
no network) built from run.json and the case records.

The page is a list of sections (`SECTIONS`); another report part adds its own with one call,
`add_section(Section(...))`, and its render function gets the same `ReportInput`. The failures
(results/reports/html_failures.py) and charts (results/reports/html_charts.py) live in their own modules.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from torchcts.manifest.schema import DTYPES
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import EXECUTED, ORDER
from torchcts.results.reports.capabilities import render_html as render_capabilities
from torchcts.results.reports.coverage_section import render_coverage_section
from torchcts.results.reports.fallback_section import render_html as render_fallback
from torchcts.results.reports.html_charts import error_chart, pass_counts, pass_rate_chart, rate_color
from torchcts.results.reports.html_failures import COLORS, failures_section
from torchcts.results.reports.html_precision import render_precision
from torchcts.results.reports.quoting import html_text as _e  # None reads as ''
from torchcts.results.reports.repeats import render_html as render_flaky
from torchcts.results.reports.strength import render_html as strength_section
from torchcts.results.reports.summary import NOT_RUN_NOTE, by, failures, filtered_note, not_run, slowest, totals, warmup_line
from torchcts.results.triage.clusters import op_of

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.meta{color:#555;font-size:13px} .meta code{background:#eee;padding:1px 4px;border-radius:3px}
.badges{display:flex;flex-wrap:wrap;gap:8px;margin-top:12px}
.badge{color:#fff;border-radius:6px;padding:8px 12px;font-size:14px;min-width:90px}
.badge b{display:block;font-size:22px}
.charts{display:flex;flex-wrap:wrap;gap:16px}
figure.chart{display:inline-block;margin:0;background:#fff;border:1px solid #ddd;border-radius:4px;padding:6px}
figure.chart figcaption{font-size:13px;color:#444;margin-bottom:4px;max-width:580px}
table{border-collapse:collapse;font-size:13px;background:#fff}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td.num{text-align:right} td.cell{text-align:center;min-width:70px;color:#111}
td.empty{background:#f4f4f4;color:#999}
.msg{max-width:640px;white-space:pre-wrap;word-break:break-word;margin-top:4px}
.ctx{color:#555;font-size:12px;margin-top:2px}
td.case{min-width:320px;max-width:660px} td.metrics{min-width:230px;max-width:320px;font-size:12px}
td.repro-cell{min-width:280px;max-width:460px}
.ea code{background:#f5f5f5}
.cmd{display:flex;gap:6px;align-items:flex-start;margin-bottom:4px}
code.repro{font-size:12px;white-space:pre-wrap;overflow-wrap:normal;word-break:keep-all;overflow-x:auto;display:block;flex:1}
button.copy{font-size:11px;padding:1px 6px;cursor:pointer}
.script{font-size:12px;color:#555}
details.cluster{background:#fff;border:1px solid #ddd;border-left:4px solid #c62828;border-radius:4px;
 margin:8px 0;padding:6px 10px}
details.cluster>summary{cursor:pointer;font-weight:600}
details.cluster .count{display:inline-block;min-width:28px;background:#c62828;color:#fff;border-radius:10px;
 text-align:center;padding:0 6px;margin-right:4px}
details.cluster .shown{color:#777;font-weight:normal;font-size:12px}
.shared{margin:4px 0 6px;font-size:13px}
.controls{margin:8px 0;display:flex;gap:8px;align-items:center}
.controls input{padding:4px 8px;width:320px}
.validation{background:#fff3cd;border:1px solid #e0c36b;padding:6px 10px;border-radius:4px;display:inline-block}
details pre{white-space:pre-wrap;font-size:12px;max-width:700px}
"""

JS = """
function applyFilter(){
  var q=document.getElementById('q'), st=document.getElementById('st');
  if(!q||!st){return;}
  var text=q.value.toLowerCase(), want=st.value, total=0, shown=0;
  document.querySelectorAll('details.cluster').forEach(function(c){
    var rows=c.querySelectorAll('tbody tr'), here=0, head='';
    // the cluster's own text (title, ops, shared arguments) matches each of its rows; its rows' does not
    c.querySelectorAll(':scope>summary,:scope>div').forEach(function(e){head+=e.textContent+' ';});
    head=head.toLowerCase();
    rows.forEach(function(r){
      var ok=(!text||(head+r.textContent.toLowerCase()).indexOf(text)>=0)&&(!want||r.dataset.status===want);
      r.style.display=ok?'':'none'; if(ok){here++;}
    });
    total+=rows.length; shown+=here;
    c.style.display=here?'':'none';
    c.querySelector('.shown').textContent=here<rows.length?'('+here+' shown)':'';
  });
  document.getElementById('shown').textContent=shown+' of '+total+' shown';
}
function copyText(button){
  var text=button.dataset.copy, done=function(){button.textContent='copied';
    setTimeout(function(){button.textContent='copy';},1500);};
  var fallback=function(){var area=document.createElement('textarea'); area.value=text;
    document.body.appendChild(area); area.select();
    try{document.execCommand('copy');done();}catch(e){button.textContent='select and copy';}
    document.body.removeChild(area);};
  if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(text).then(done,fallback);}
  else{fallback();}
}
document.addEventListener('DOMContentLoaded',function(){
  var q=document.getElementById('q'), st=document.getElementById('st');
  if(q){q.addEventListener('input',applyFilter);} if(st){st.addEventListener('change',applyFilter);}
  document.addEventListener('click',function(ev){
    var b=ev.target.closest?ev.target.closest('button.copy'):null; if(b){copyText(b);}
  });
  applyFilter();
  document.body.setAttribute('data-report-ready','1');
});
"""


@dataclass
class ReportInput:
    """What every section renders from: run.json, the final records, the run folder (None for a
    page rendered without one) and the failing cases whose repro script is in its repro/ folder."""
    run: Run
    records: list[CaseRecord]
    run_dir: Path | None = None
    scripts: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    render: Callable[[ReportInput], str]  # the section's HTML body; '' leaves the section out


def claimed_dtypes(run: Run) -> set[str] | None:
    """The dtypes the run's manifest claims; None when run.json names none (an older run)."""
    if run.manifest is None or "supported_dtypes" in run.missing_keys("manifest"):
        return None
    supported = run.manifest.supported_dtypes
    if not isinstance(supported, dict):
        return None
    return {str(d) for d, claimed in supported.items() if claimed}


def _dtype_order(name: str) -> tuple[int, str]:
    return (DTYPES.index(name) if name in DTYPES else len(DTYPES), name)


def _not_executed(counts: Counter[str]) -> str:
    """A cell none of whose cases ran: 'not claimed', 'n/a' or 'not run' (mixed: 'not run')."""
    kinds = set(counts)
    return {frozenset({"not_claimed"}): "not claimed", frozenset({"not_applicable"}): "n/a"}.get(frozenset(kinds), "not run")


def _matrix(report: ReportInput) -> str:
    """Suite x dtype pass rates, a column per claimed dtype (and any dtype that ran); the dtypes
    nobody claimed, whose cases are all recorded not_claimed, are counted in one line below."""
    cells: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    per_dtype: dict[str, Counter[str]] = defaultdict(Counter)
    for r in report.records:
        dtype = str(r.dtype or "-")
        cells[(str(r.suite), dtype)][(r.status or "error")] += 1
        per_dtype[dtype][(r.status or "error")] += 1
    claimed = claimed_dtypes(report.run)
    cols = sorted((d for d, counts in per_dtype.items()
                   if claimed is None or d in claimed or d == "-" or any(counts.get(s) for s in EXECUTED)),
                  key=_dtype_order)
    unclaimed = sorted((d for d in per_dtype if d not in cols), key=_dtype_order)
    out = ["<table id='matrix'><thead><tr><th>suite / dtype</th>"]
    out += [f"<th>{'no dtype' if c == '-' else _e(c)}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for row in sorted({k[0] for k in cells}):
        out.append(f"<tr><th>{_e(row)}</th>")
        for col in cols:
            counts = cells.get((row, col), Counter())
            ok, executed = pass_counts(counts)
            title = ", ".join(f"{s} {n}" for s, n in sorted(counts.items()))
            if not executed:
                label = "" if not counts else _not_executed(counts)
                out.append(f"<td class='cell empty' title='{_e(title)}'>{label}</td>")
                continue
            rate = ok / executed
            out.append(f"<td class='cell' style='background:{rate_color(rate)}' title='{_e(title)}'>"
                       f"{ok}/{executed}<br><small>{100 * rate:.0f}%</small></td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    if unclaimed:
        listed = ", ".join(f"<span title='{_e(', '.join(f'{s} {n}' for s, n in sorted(per_dtype[d].items())))}'>"
                           f"{_e(d)} ({sum(per_dtype[d].values())})</span>" for d in unclaimed)
        out.append(f"<p id='unclaimed-dtypes' class='ctx'>Dtypes the manifest does not claim, none of whose cases "
                   f"ran (cases): {listed}</p>")
    return "".join(out)


def _status_table(records: list[CaseRecord], key: str) -> str:
    groups = by(records, key)
    statuses = [s for s in ORDER if any(s in g for g in groups.values())]
    out = [f"<table id='by-{_e(key)}'><thead><tr><th>{_e(key)}</th>"]
    out += [f"<th>{_e(s)}</th>" for s in statuses] + ["<th>pass rate</th></tr></thead><tbody>"]
    for k, g in sorted(groups.items(), key=lambda kv: (len(kv[0]), kv[0])):
        ok, executed = pass_counts(g)
        rate = f"{100 * ok / executed:.0f}%" if executed else "-"
        out.append(f"<tr><th>{_e(k)}</th>" + "".join(f"<td class='num'>{g.get(s, 0)}</td>" for s in statuses)
                   + f"<td class='num'>{rate}</td></tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _overview(report: ReportInput) -> str:
    levels = dict(sorted(by(report.records, "level").items(), key=lambda kv: (len(kv[0]), kv[0])))
    charts = (pass_rate_chart("suite-chart", "pass rate per suite (of the cases that ran)", by(report.records, "suite"))
              + pass_rate_chart("level-chart", "pass rate per level", {f"level {k}": v for k, v in levels.items()}))
    return f"<div class='charts'>{charts}</div>" if charts else ""


def _failures(report: ReportInput) -> str:
    return failures_section(report.records, report.scripts)


def _errors(report: ReportInput) -> str:
    return error_chart(failures(report.records), op_of)


def _not_run(report: ReportInput, limit: int = 200) -> str:
    """Planned cases without a result (a killed or interrupted run), listed so none vanish."""
    ids = [r.id for r in not_run(report.records)]
    if not ids:
        return ""
    more = f"<li>... and {len(ids) - limit} more (junit.xml lists every case)</li>" if len(ids) > limit else ""
    return (f"<p>{len(ids)} cases: {_e(NOT_RUN_NOTE.lower())}.</p>"
            f"<ul id='not-run'>" + "".join(f"<li><code>{_e(i)}</code></li>" for i in ids[:limit]) + more + "</ul>")


def _slowest(report: ReportInput) -> str:
    rows = "".join(f"<tr><td><code>{_e(r.id)}</code></td><td>{_e(r.status)}</td>"
                   f"<td class='num'>{float(r.duration_s):.3f}</td></tr>" for r in slowest(report.records, 10))
    warmup = warmup_line(report.records)
    return (f"<table id='slowest'><thead><tr><th>case</th><th>status</th><th>s</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>" + (f"<p class='meta' id='warmup'>{_e(warmup)}</p>" if warmup else ""))


SECTIONS: list[Section] = [
    Section("overview", "Pass rate by suite and level", _overview),
    Section("failures", "Failures by root cause", _failures),
    Section("errors", "Error magnitude against tolerance", _errors),
    Section("precision", "Precision profile", lambda report: render_precision(report.records)),
    Section("matrix-section", "Pass rate by suite and claimed dtype", _matrix),
    Section("levels", "By level", lambda report: _status_table(report.records, "level")),
    Section("strength-section", "Strength of the passes: weak and exact comparisons per suite",
            lambda report: strength_section(report.records)),
    Section("flaky-section", "Flaky under --repeat", lambda report: render_flaky(report.records)),
    Section("not-run-section", "Not run", _not_run),
    Section("capabilities", "Capabilities: claimed, reported, observed",
            lambda report: render_capabilities(report.run, report.records)),
    Section("coverage", "Dispatcher coverage", lambda report: render_coverage_section(report.run, report.records)),
    Section("fallback", "CPU fallback: passes resting on it, and what to implement next",
            lambda report: render_fallback(report.records)),
    Section("slowest-section", "Slowest cases", _slowest),
]


def add_section(section: Section, before: str | None = None) -> None:
    """Add a section to every report from now on (before the section with id `before`, else last);
    a section with the same id is replaced."""
    SECTIONS[:] = [s for s in SECTIONS if s.id != section.id]
    ids = [s.id for s in SECTIONS]
    SECTIONS.insert(ids.index(before) if before in ids else len(SECTIONS), section)


def repro_scripts(run_dir: Path | None, records: list[CaseRecord]) -> set[str]:
    """Failing cases whose standalone script `torchcts repro` wrote into the run's repro/ folder."""
    if run_dir is None or not (run_dir / "repro").is_dir():
        return set()
    from torchcts.results.repro.script import SCRIPT, safe_name

    return {r.id for r in failures(records) if (run_dir / "repro" / safe_name(r.id) / SCRIPT).is_file()}


def _header(run: Run, t: dict[str, int]) -> str:
    """Title, run facts and a badge per status count `t`."""
    torch_v = (run.torch or {}).get("torch", "")
    badges = "".join(
        f"<div class='badge' style='background:{COLORS.get(s, '#555')}'><b>{n}</b>{_e(s)}</div>"
        for s, n in t.items() if s != "filtered"
    )
    # What the selection left out is context, not a result: a line under the tiles, not a tile
    # (a large grey "47037 filtered" drew the eye away from a focused run's 12 passes).
    note = filtered_note(run, t)
    left_out = f"\n<p class='meta' id='filtered'>{_e(note)}</p>" if note else ""
    notes = ("<p class='validation'>Validation run: checks the harness on CPU; never backend evidence.</p>"
             if run.validation else "")
    if run.torch_drift:
        notes += f"<p class='validation' id='torch-drift'>Outside the validated range: {_e(run.torch_drift)}</p>"
    if run.unreadable_records:
        notes += (f"<p class='validation' id='unreadable'>{_e(run.unreadable_records)} unreadable records in "
                  f"cases.jsonl, not in the totals: {_e('; '.join(run.record_problems or []))}</p>")
    return (f"<h1>TorchCTS report — device <code>{_e(run.device_type)}</code></h1>\n"
            f"<div class='meta'>run <code>{_e(run.name)}</code> · gate <code>{_e(run.gate)}</code> · "
            f"torch {_e(torch_v)} · torchcts {_e(run.torchcts)} · {_e(run.status)} · "
            f"{_e(run.started)} → {_e(run.ended)} · manifest "
            f"{_e((run.manifest_hash or '')[:12])}</div>\n{notes}\n<div class='badges' id='totals'>{badges}</div>{left_out}")


def render_html(run: Run, records: list[CaseRecord], run_dir: Path | None = None) -> str:
    report = ReportInput(run, records, run_dir, repro_scripts(run_dir, records))
    body = []
    for section in SECTIONS:
        html = section.render(report)
        if html:
            body.append(f"<section id='{_e(section.id)}'><h2>{_e(section.title)}</h2>{html}</section>")
    t = totals(records)
    data = json.dumps({"name": run.name, "status": run.status, "totals": t})
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>TorchCTS {_e(run.name)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{CSS}</style><script>{JS}</script></head><body>
{_header(run, t)}
{chr(10).join(body)}
<script type="application/json" id="torchcts-data">{_e(data)}</script>
</body></html>
"""
