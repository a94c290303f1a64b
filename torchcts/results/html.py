"""report.html: one self-contained page (inline CSS and JS, no network) built from case records."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from torchcts.results.coverage_section import render_coverage_section
from torchcts.results.failure import details, rel_error_text
from torchcts.results.quoting import html_text
from torchcts.results.statuses import EXECUTED, FAILURES, ORDER, PASSING
from torchcts.results.summary import NOT_RUN_NOTE, by, failures, not_run, slowest, totals

COLORS = {
    "passed": "#2e7d32", "xfailed": "#6a8f3a", "xpassed": "#c77c02", "failed": "#c62828", "error": "#ad1457",
    "crashed": "#6a1b9a", "timeout": "#4527a0", "flaky": "#ef6c00", "not_claimed": "#78909c",
    "filtered": "#90a4ae", "not_applicable": "#9e9e9e", "pending": "#8d6e63", "not_run": "#5d4037",
}

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.meta{color:#555;font-size:13px} .meta code{background:#eee;padding:1px 4px;border-radius:3px}
.badges{display:flex;flex-wrap:wrap;gap:8px;margin-top:12px}
.badge{color:#fff;border-radius:6px;padding:8px 12px;font-size:14px;min-width:90px}
.badge b{display:block;font-size:22px}
table{border-collapse:collapse;font-size:13px;background:#fff}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0;position:sticky;top:0}
td.num{text-align:right} td.cell{text-align:center;min-width:70px;color:#111}
td.empty{background:#f4f4f4;color:#999}
.msg{min-width:300px;max-width:560px;white-space:pre-wrap;word-break:break-word}
.ctx{color:#555;font-size:12px;margin-top:4px}
code.repro{font-size:12px;white-space:pre-wrap;word-break:break-all;display:block;min-width:220px}
.controls{margin:8px 0;display:flex;gap:8px;align-items:center}
.controls input{padding:4px 8px;width:320px}
.validation{background:#fff3cd;border:1px solid #e0c36b;padding:6px 10px;border-radius:4px;display:inline-block}
details pre{white-space:pre-wrap;font-size:12px;max-width:700px}
"""

JS = """
function applyFilter(){
  var q=document.getElementById('q').value.toLowerCase();
  var st=document.getElementById('st').value;
  var rows=document.querySelectorAll('#failures tbody tr'); var shown=0;
  rows.forEach(function(r){
    var ok=(!q||r.textContent.toLowerCase().indexOf(q)>=0)&&(!st||r.dataset.status===st);
    r.style.display=ok?'':'none'; if(ok)shown++;
  });
  document.getElementById('shown').textContent=shown+' of '+rows.length+' shown';
}
document.addEventListener('DOMContentLoaded',applyFilter);
"""


def _e(value: Any) -> str:
    return html_text("" if value is None else value)


def _rate_color(rate: float) -> str:
    """Red (0%) through amber to green (100%)."""
    return f"hsl({int(120 * rate)},65%,{72 - 10 * rate:.0f}%)"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return _e(v)


def _pass_counts(counts: dict[str, int]) -> tuple[int, int]:
    """(cases that pass, cases that ran) of a group's status counts."""
    return sum(counts.get(s, 0) for s in PASSING), sum(counts.get(s, 0) for s in EXECUTED)


def _matrix(records: list[dict[str, Any]], row_key: str = "suite") -> str:
    cells: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in records:
        cells[(str(r.get(row_key)), str(r.get("dtype") or "-"))][r.get("status", "error")] += 1
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})
    out = [f"<table id='matrix'><thead><tr><th>{_e(row_key)} / dtype</th>"]
    out += [f"<th>{_e(c)}</th>" for c in cols]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append(f"<tr><th>{_e(row)}</th>")
        for col in cols:
            counts = cells.get((row, col), Counter())
            ok, executed = _pass_counts(counts)
            title = ", ".join(f"{s} {n}" for s, n in sorted(counts.items()))
            if not executed:
                label = "" if not counts else "not run"
                out.append(f"<td class='cell empty' title='{_e(title)}'>{label}</td>")
                continue
            rate = ok / executed
            out.append(f"<td class='cell' style='background:{_rate_color(rate)}' title='{_e(title)}'>"
                       f"{ok}/{executed}<br><small>{100 * rate:.0f}%</small></td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _status_table(records: list[dict[str, Any]], key: str) -> str:
    groups = by(records, key)
    statuses = [s for s in ORDER if any(s in g for g in groups.values())]
    out = [f"<table id='by-{_e(key)}'><thead><tr><th>{_e(key)}</th>"]
    out += [f"<th>{_e(s)}</th>" for s in statuses] + ["<th>pass rate</th></tr></thead><tbody>"]
    for k, g in sorted(groups.items(), key=lambda kv: (len(kv[0]), kv[0])):
        ok, executed = _pass_counts(g)
        rate = f"{100 * ok / executed:.0f}%" if executed else "-"
        out.append(f"<tr><th>{_e(k)}</th>" + "".join(f"<td class='num'>{g.get(s, 0)}</td>" for s in statuses)
                   + f"<td class='num'>{rate}</td></tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _failure_rows(fails: list[dict[str, Any]]) -> str:
    out = []
    for r in fails:
        m = r.get("mismatch") or {}
        how = r.get("signal") or (f"exit {r['exit_code']}" if "exit_code" in r and r.get("status") == "crashed" else "")
        detail = r.get("output_tail") or r.get("traceback") or ""
        more = "".join(f"<div class='ctx'>{_e(line)}</div>" for line in details(r))
        more += f"<details><summary>output</summary><pre>{_e(detail)}</pre></details>" if detail else ""
        out.append(
            f"<tr data-status='{_e(r.get('status'))}'><td style='color:{COLORS.get(r.get('status', ''), '#000')}'>"
            f"<b>{_e(r.get('status'))}</b></td><td><code>{_e(r['id'])}</code></td><td>{_e(r.get('suite'))}</td>"
            f"<td>{_e(r.get('dtype'))}</td><td class='msg'>{_e(r.get('message', ''))}{more}</td>"
            f"<td class='num'>{_fmt(m.get('max_abs_error'))}</td><td class='num'>{_e(rel_error_text(m))}</td>"
            f"<td class='num'>{_e(m.get('mismatched', ''))}{'/' + _e(m['total']) if m.get('total') else ''}</td>"
            f"<td>{_e(how)}</td><td class='num'>{_fmt(r.get('duration_s'))}</td>"
            f"<td><code class='repro'>{_e(r.get('repro', ''))}</code></td></tr>"
        )
    return "".join(out)


def _not_run(records: list[dict[str, Any]], limit: int = 200) -> str:
    """Planned cases without a result (a killed or interrupted run), listed so none vanish."""
    ids = [r["id"] for r in not_run(records)]
    if not ids:
        return ""
    more = f"<li>... and {len(ids) - limit} more (junit.xml lists every case)</li>" if len(ids) > limit else ""
    return (f"<h2>Not run ({len(ids)})</h2><p>{_e(NOT_RUN_NOTE)}.</p>"
            f"<ul id='not-run'>" + "".join(f"<li><code>{_e(i)}</code></li>" for i in ids[:limit]) + more + "</ul>")


def render_html(run: dict[str, Any], records: list[dict[str, Any]]) -> str:
    t = totals(records)
    fails = failures(records)
    dev = run.get("device", {})
    torch_v = (run.get("torch") or {}).get("torch", "")
    badges = "".join(
        f"<div class='badge' style='background:{COLORS.get(s, '#555')}'><b>{n}</b>{_e(s)}</div>" for s, n in t.items()
    )
    if run.get("filtered"):
        badges += f"<div class='badge' style='background:{COLORS['filtered']}'><b>{run['filtered']}</b>filtered</div>"
    validation = ("<p class='validation'>Validation run: checks the harness on CPU; never backend evidence.</p>"
                  if run.get("validation") else "")
    if run.get("unreadable_records"):
        validation += (f"<p class='validation' id='unreadable'>{_e(run['unreadable_records'])} unreadable records in "
                       f"cases.jsonl, not in the totals: {_e('; '.join(run.get('record_problems') or []))}</p>")
    options = "".join(f"<option value='{_e(s)}'>{_e(s)}</option>" for s in FAILURES if t.get(s))
    slow = slowest(records, 10)
    slow_rows = "".join(f"<tr><td><code>{_e(r['id'])}</code></td><td>{_e(r.get('status'))}</td>"
                        f"<td class='num'>{float(r['duration_s']):.3f}</td></tr>" for r in slow)
    data = json.dumps({"name": run.get("name"), "status": run.get("status"), "totals": t})
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>TorchCTS {_e(run.get('name'))}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{CSS}</style><script>{JS}</script></head><body>
<h1>TorchCTS report — device <code>{_e(dev.get('type'))}</code></h1>
<div class="meta">run <code>{_e(run.get('name'))}</code> · gate <code>{_e(run.get('gate'))}</code> ·
torch {_e(torch_v)} · torchcts {_e(run.get('torchcts'))} · {_e(run.get('status'))} ·
{_e(run.get('started'))} → {_e(run.get('ended'))} · manifest {_e((run.get('manifest_hash') or '')[:12])}</div>
{validation}
<div class="badges" id="totals">{badges}</div>
<h2>Pass rate by suite and dtype</h2>{_matrix(records)}
<h2>By level</h2>{_status_table(records, "level")}
<h2>Failures ({len(fails)})</h2>
<div class="controls"><input id="q" placeholder="filter: case id, op, message..." oninput="applyFilter()">
<select id="st" onchange="applyFilter()"><option value="">all statuses</option>{options}</select>
<span id="shown"></span></div>
<table id="failures"><thead><tr><th>status</th><th>case</th><th>suite</th><th>dtype</th><th>message</th>
<th>max abs err</th><th>max rel err</th><th>mismatched</th><th>signal</th><th>s</th><th>repro</th></tr></thead>
<tbody>{_failure_rows(fails)}</tbody></table>
{_not_run(records)}
{render_coverage_section(run, records)}
<h2>Slowest cases</h2><table id="slowest"><thead><tr><th>case</th><th>status</th><th>s</th></tr></thead>
<tbody>{slow_rows}</tbody></table>
<script type="application/json" id="torchcts-data">{_e(data)}</script>
</body></html>
"""
