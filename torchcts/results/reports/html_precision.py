"""report.html's precision profile: per op and dtype, the worst error against CPU and against the
float64 truth in ulps, device beside CPU, so a backend engineer sees where a kernel is less
accurate than CPU before a user does (docs/oracles.md, "Precision profile").

Built from the records' `precision` objects (read with `Precision.from_json`, which checks each
field), torch-free like every report part.
"""

from __future__ import annotations

from collections import defaultdict

from torchcts.model.record import CaseRecord
from torchcts.oracle.precision import Precision
from torchcts.results.reports.quoting import html_text as _e  # None reads as ''

MAX_ROWS = 200
# A row is highlighted when the device is this many ulps farther from the truth than CPU at some
# element: more than a rounding apart.
WORSE_ULPS = 1.0

CSS = """
table.precision tr.worse td{background:#fdecea} table.precision tr.failed td{background:#f8c9c4}
table.precision td.num{font-variant-numeric:tabular-nums}
"""


def profile(records: list[CaseRecord]) -> dict[tuple[str, str], tuple[Precision, int]]:
    """(op, dtype) -> the worst precision over its cases, and how many cases measured one."""
    rows: dict[tuple[str, str], tuple[Precision, int]] = {}
    for r in records:
        if not r.precision:
            continue
        p = Precision.from_json(r.precision)
        key = (str(r.op or (r.ops[0] if r.ops else "?")), str(r.dtype or "-"))
        prev, n = rows.get(key, (Precision(), 0))
        rows[key] = (prev.merge(p), n + 1)
    return rows


def _ulps(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g}" if value < 1e4 else f"{value:.2e}"


def _vs_truth(p: Precision, value: float | None) -> str:
    """A truth column: '= CPU' where every sample equalled CPU's result, so no truth was computed."""
    return "= CPU" if value is None and p.identical and not p.samples else _ulps(value)


def _rel(value: float | None) -> str:
    return "-" if value is None else f"{value:.2e}"


def _row_class(p: Precision) -> str:
    if p.worse:
        return "failed"
    return "worse" if (p.ulp_over_cpu or 0.0) > WORSE_ULPS else ""


def render_precision(records: list[CaseRecord]) -> str:
    """The section's body ('' when no record measured a precision)."""
    rows = profile(records)
    if not rows:
        return ""
    order = sorted(rows.items(), key=lambda kv: (-(kv[1][0].ulp_over_cpu or 0.0),
                                                 -(kv[1][0].device_ulp_vs_truth or 0.0), kv[0]))
    no_truth: dict[str, int] = defaultdict(int)
    for p, _ in rows.values():
        if p.truth is None and p.no_truth:
            no_truth[p.no_truth] += 1
    worse = sum(1 for p, _ in rows.values() if _row_class(p))
    out = [f"<style>{CSS}</style>",
           f"<p class='ctx'>Worst error per op and dtype over the OpInfo forward cases: against CPU, and "
           f"against the float64 (complex128) truth, in ulps of the output dtype. Sorted by how much farther from the "
           f"truth the device is than CPU (its worst element); {worse} of {len(rows)} rows highlighted, where the "
           f"device is more than {WORSE_ULPS:g} ulp less accurate than CPU somewhere (darker: failed as much less "
           f"accurate). A sample whose result equals CPU's element for element is as far from the truth as CPU, "
           f"which is then not computed ('= CPU').</p>",
           "<table id='precision-profile' class='precision'><thead><tr><th>op</th><th>dtype</th><th>cases</th>"
           "<th>vs CPU (ulps)</th><th>device vs truth (ulps)</th><th>CPU vs truth (ulps)</th>"
           "<th>device over CPU (ulps)</th><th>device rel</th><th>CPU rel</th><th>rescued</th><th>worse</th>"
           "</tr></thead><tbody>"]
    for (op, dtype), (p, n) in order[:MAX_ROWS]:
        cls = _row_class(p)
        title = (f" title='no truth: {_e(p.no_truth)}'" if p.truth is None and p.no_truth else
                 f" title='{p.identical} samples equal to CPU element for element: no truth computed'" if p.identical
                 else "")
        off = (f" <small>({p.device_off_scale} off scale)</small>" if p.device_off_scale else "")
        out.append(f"<tr class='{cls}'{title}><td><code>{_e(op)}</code></td><td>{_e(dtype)}</td>"
                   f"<td class='num'>{n}</td><td class='num'>{_ulps(p.max_ulp_vs_cpu)}</td>"
                   f"<td class='num'>{_vs_truth(p, p.device_ulp_vs_truth)}{off}</td>"
                   f"<td class='num'>{_vs_truth(p, p.cpu_ulp_vs_truth)}</td>"
                   f"<td class='num'>{_ulps(p.ulp_over_cpu)}</td><td class='num'>{_rel(p.device_rel_vs_truth)}</td>"
                   f"<td class='num'>{_rel(p.cpu_rel_vs_truth)}</td><td class='num'>{p.rescued or ''}</td>"
                   f"<td class='num'>{p.worse or ''}</td></tr>")
    out.append("</tbody></table>")
    if len(order) > MAX_ROWS:
        out.append(f"<p class='ctx'>... and {len(order) - MAX_ROWS} more rows (cases.jsonl: each record's "
                   f"<code>precision</code>).</p>")
    if no_truth:
        listed = "; ".join(f"{_e(why)} ({n})" for why, n in sorted(no_truth.items(), key=lambda kv: -kv[1]))
        out.append(f"<p class='ctx' id='no-truth'>Rows without a truth, by reason (rows): {listed}.</p>")
    return "".join(out)

