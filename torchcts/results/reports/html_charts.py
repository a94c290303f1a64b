"""Inline SVG charts for report.html: pass rate per group, and error magnitude against tolerance.

Plain SVG strings (no script, no network, no library), so the page stays one self-contained file
that renders the same offline, in a CI artifact viewer and in headless Chromium. Every label comes
from records and goes through `html_text`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from torchcts.model.record import CaseRecord
from torchcts.model.status import EXECUTED, PASSING
from torchcts.oracle.mismatch import Mismatch
from torchcts.results.reports.quoting import html_text as _e  # None reads as ''

LABEL_W, BAR_W, ROW_H, TEXT_W = 150, 260, 20, 170
MAX_BARS = 25


def rate_color(rate: float) -> str:
    """Red (0%) through amber to green (100%)."""
    return f"hsl({int(120 * rate)},65%,{72 - 10 * rate:.0f}%)"


def pass_counts(counts: dict[str, int]) -> tuple[int, int]:
    """(cases that pass, cases that ran) of a group's status counts."""
    return sum(counts.get(s, 0) for s in PASSING), sum(counts.get(s, 0) for s in EXECUTED)


def _label(text: str, y: float) -> str:
    short = text if len(text) <= 22 else text[:21] + "…"
    return (f"<text x='{LABEL_W - 6}' y='{y}' text-anchor='end'><title>{_e(text)}</title>{_e(short)}</text>")


def _svg(chart_id: str, title: str, rows: int, body: str, axis: bool = False) -> str:
    height = ROW_H * rows + (24 if axis else 10)
    width = LABEL_W + BAR_W + TEXT_W
    return (f"<figure class='chart'><figcaption>{_e(title)}</figcaption>"
            f"<svg id='{_e(chart_id)}' role='img' aria-label='{_e(title)}' width='{width}' height='{height}' "
            f"viewBox='0 0 {width} {height}' font-size='12' "
            f"font-family='system-ui,sans-serif'>{body}</svg></figure>")


def pass_rate_chart(chart_id: str, title: str, groups: dict[str, dict[str, int]]) -> str:
    """One horizontal bar per group: the share of its executed cases that pass."""
    rows = [(name, *pass_counts(g)) for name, g in groups.items()]
    rows = [r for r in rows if r[2]][:MAX_BARS]
    if not rows:
        return ""
    body = []
    for i, (name, ok, executed) in enumerate(rows):
        y = 8 + i * ROW_H
        rate = ok / executed
        body.append(_label(name, y + 13))
        body.append(f"<rect x='{LABEL_W}' y='{y}' width='{BAR_W}' height='{ROW_H - 5}' fill='#eceff1'/>")
        body.append(f"<rect class='bar' x='{LABEL_W}' y='{y}' width='{BAR_W * rate:.1f}' height='{ROW_H - 5}' "
                    f"fill='{rate_color(rate)}'><title>{_e(name)}: {ok} of {executed} pass</title></rect>")
        body.append(f"<text x='{LABEL_W + BAR_W + 6}' y='{y + 13}'>{100 * rate:.0f}% ({ok}/{executed})</text>")
    return _svg(chart_id, title, len(rows), "".join(body))


def excess(mismatch: Mismatch) -> float | None:
    """How many times its tolerance a mismatch's error is: max abs error / atol, else (atol 0)
    max rel error / rtol; inf for an infinite or NaN error (off any scale); None where the comparison
    was exact (atol = rtol = 0: any difference fails)."""
    abs_err, rel_err, atol, rtol = mismatch.max_abs_error, mismatch.max_rel_error, mismatch.atol, mismatch.rtol
    if abs_err is not None and not math.isfinite(abs_err):
        return math.inf
    atol, rtol = (t if t is not None and math.isfinite(t) else None for t in (atol, rtol))
    if abs_err is not None and atol:
        return abs_err / atol
    if rel_err is not None and rtol:
        return rel_err / rtol
    return None


def worst_by_op(records: list[CaseRecord], op_of: Any) -> tuple[list[tuple[str, float | None, int, Mismatch]], list[str]]:
    """Per failing op with error metrics: (op, its worst excess or None when exact, failures, the
    worst mismatch), largest first; and the failing ops without metrics (errors, crashes)."""
    found: dict[str, list[Mismatch]] = defaultdict(list)
    without: set[str] = set()
    for r in records:
        m = Mismatch.from_json(r.mismatch)
        if m is not None and m.max_abs_error is not None:
            found[op_of(r)].append(m)
        else:
            without.add(op_of(r))

    def key(m: Mismatch) -> tuple[bool, float]:  # a finite excess first: it has a scale
        x = excess(m)
        return (x is not None, -1.0 if x is None else x)

    worst = {op: max(ms, key=key) for op, ms in found.items()}
    rows = [(op, excess(m), len(found[op]), m) for op, m in worst.items()]
    rows.sort(key=lambda row: (row[1] is not None, -1.0 if row[1] is None else row[1], row[0]), reverse=True)
    return rows, sorted(without - set(found))


def error_chart(records: list[CaseRecord], op_of: Any) -> str:
    """Log-scale bars of each failing op's worst error in units of its tolerance (1 = the line)."""
    rows, without = worst_by_op(records, op_of)
    if not rows:
        return ""
    shown = rows[:MAX_BARS]
    finite = [x for _, x, _, _ in shown if x is not None and 0 < x < math.inf]
    lo = 10.0 ** math.floor(math.log10(min([*finite, 1.0])) - (0 if finite and min(finite) < 1 else 1))
    hi = 10.0 ** math.ceil(math.log10(max([*finite, 10.0])))
    span = math.log10(hi) - math.log10(lo)

    def x_of(value: float) -> float:
        return LABEL_W + BAR_W * (math.log10(min(max(value, lo), hi)) - math.log10(lo)) / span

    body = []
    for i, (op, ratio, count, m) in enumerate(shown):
        y = 8 + i * ROW_H
        body.append(_label(f"{op} ({count})", y + 13))
        tol = f"atol {m.atol}, rtol {m.rtol}"
        if ratio is None:
            what = f"exact comparison: max abs error {m.max_abs_error:.3g}"
            body.append(f"<rect class='bar exact' x='{LABEL_W}' y='{y}' width='{BAR_W}' height='{ROW_H - 5}' "
                        f"fill='#6a1b9a'><title>{_e(op)}: {_e(what)} ({_e(tol)})</title></rect>")
            body.append(f"<text x='{LABEL_W + BAR_W + 6}' y='{y + 13}'>exact, off by {m.max_abs_error:.3g}</text>")
            continue
        fill = "#c62828" if ratio >= 1 else "#ef6c00"
        body.append(f"<rect class='bar' x='{LABEL_W}' y='{y}' width='{x_of(ratio) - LABEL_W:.1f}' height='{ROW_H - 5}' "
                    f"fill='{fill}'><title>{_e(op)}: max abs error {m.max_abs_error:.3g} = {ratio:.3g} x "
                    f"tolerance ({_e(tol)})</title></rect>")
        body.append(f"<text x='{LABEL_W + BAR_W + 6}' y='{y + 13}'>{ratio:.3g} x tol</text>")
    bottom = 8 + len(shown) * ROW_H
    one = x_of(1.0)
    body.append(f"<line x1='{one:.1f}' y1='2' x2='{one:.1f}' y2='{bottom}' stroke='#222' stroke-dasharray='3,2'/>")
    decade = lo
    while decade <= hi * 1.0001:
        label = f"{decade:g}" if 1e-3 <= decade < 1e4 else f"1e{round(math.log10(decade))}"
        body.append(f"<text x='{x_of(decade):.1f}' y='{bottom + 14}' text-anchor='middle' fill='#555'>"
                    f"{label}</text>")
        decade *= 10 if span <= 8 else 100
    title = "worst error per failing op, in units of its tolerance (log scale; dashed line = tolerance)"
    if len(rows) > len(shown):
        title += f"; {len(rows) - len(shown)} more ops in the failure list"
    if without:
        title += f"; failing without error metrics (raised, crashed, timed out): {', '.join(without[:12])}"
        title += f" +{len(without) - 12} more" if len(without) > 12 else ""
    return _svg("error-chart", title, len(shown), "".join(body), axis=True)
