"""The report's dispatcher-coverage section: observed overloads, the headline, the gaps by reason,
exclusions, pending.

Torch-free (the run controller never imports torch): what the records hold (each case's
`dispatched` overloads, cases/observe.py) is counted here; the headline over implementable
surfaces needs the dispatcher, so `torchcts coverage report RUN` computes it
(coverage/observed.py), keeps it in run.json as `coverage` and rebuilds the reports.
"""

from __future__ import annotations

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import EXECUTED
from torchcts.results.reports.quoting import html_text as _e


def is_pending(rec: CaseRecord) -> bool:
    """A generated case waiting for a reference: the engine records status `pending` (model/status.py)."""
    return rec.status == "pending"


def dispatched_names(rec: CaseRecord) -> list[str] | None:
    """The record's observed overloads, or None when it has none or they are not a list of names
    (the one rule for report.html and `coverage report RUN`)."""
    names = rec.dispatched
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return names
    return None


def record_counts(records: list[CaseRecord]) -> dict[str, int]:
    """Executed cases observed / not observed, distinct overloads dispatched, pending cases."""
    names: set[str] = set()
    observed = unobserved = pending = 0
    for r in records:
        pending += is_pending(r)
        if r.status not in EXECUTED:
            continue
        d = dispatched_names(r)
        if d is not None:
            observed += 1
            names.update(d)
        else:
            unobserved += 1
    return {"observed_cases": observed, "unobserved_cases": unobserved, "overloads": len(names), "pending": pending}


def render_coverage_section(run: Run, records: list[CaseRecord]) -> str:
    c = record_counts(records)
    cov = run.coverage
    head = (f"<p>{c['overloads']} distinct aten overloads dispatched to the device by {c['observed_cases']} executed "
            f"cases ({c['unobserved_cases']} not observed); {c['pending']} cases pending.</p>")
    if not isinstance(cov, dict) or not isinstance(cov.get("headline"), dict):
        body = ("<p class='meta'>Coverage of implementable surfaces: run <code>torchcts coverage report "
                f"{_e(run.name or 'RUN')}</code> (it reads the dispatcher) and this page shows it.</p>")
        return f"<div id='coverage'>{head}{body}</div>"
    h = cov["headline"]
    headline = (f"<p><b>{_e(h.get('observed'))} of {_e(h.get('implementable'))} implementable aten overloads observed "
                f"({_e(h.get('percent'))}%)</b> · excluded {_e(h.get('excluded'))} backend-specific · "
                f"{_e(h.get('composite_implicit'))} composite-implicit (decompose above {_e(cov.get('dispatch_key'))}) · "
                f"{_e(h.get('missing'))} without a kernel · {_e(h.get('pending'))} cases pending</p>")
    kinds = cov.get("by_kind") if isinstance(cov.get("by_kind"), dict) else {}
    rows = "".join(
        f"<tr><td>{_e(k)}</td><td class='num'>{_e(v.get('implementable'))}</td>"
        f"<td class='num'>{_e(v.get('implementable_observed'))}</td><td class='num'>{_e(v.get('percent'))}</td></tr>"
        for k, v in kinds.items() if isinstance(v, dict))
    excl = cov.get("exclusions") if isinstance(cov.get("exclusions"), list) else []
    excl_rows = "".join(f"<tr><td>{_e(e.get('reason'))}</td><td class='num'>{_e(e.get('surfaces'))}</td></tr>"
                        for e in excl if isinstance(e, dict))
    gaps = cov.get("gaps") if isinstance(cov.get("gaps"), list) else []
    gap_rows = "".join(f"<tr><td>{_e(g.get('reason'))}</td><td class='num'>{_e(g.get('count'))}</td>"
                       f"<td>{_e(g.get('meaning'))}</td></tr>" for g in gaps if isinstance(g, dict))
    gap_table = ("<table id='coverage-gaps'><thead><tr><th>why not observed</th><th>surfaces</th><th>meaning</th>"
                 f"</tr></thead><tbody>{gap_rows}</tbody></table>" if gap_rows else "")
    return (f"<div id='coverage'>{headline}{head}"
            "<table id='coverage-kinds'><thead><tr><th>kind</th><th>implementable</th><th>observed</th><th>%</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>{gap_table}"
            "<details><summary>excluded families</summary><table id='coverage-exclusions'><thead><tr><th>reason</th>"
            f"<th>surfaces</th></tr></thead><tbody>{excl_rows}</tbody></table></details></div>")
