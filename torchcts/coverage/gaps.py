"""Why each implementable surface went unobserved in a run: one reason from a fixed set per gap.

A coverage figure without its gaps explained invites guessing; every unobserved implementable
surface gets the first reason of GAP_REASONS that holds, from the run's own records (the cases
declaring it by the rule of coverage/mapping.py, their statuses, whether their dispatch was
observed, a pending case's CPU error) and, for a surface no record declares, why the generated
suite makes no case for it (cases/schema/build.py: skip_reason).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from torchcts.coverage.mapping import resolve_op
from torchcts.coverage.surfaces import Surface

# Reason key -> what it means, in the order a gap is classified (the first that holds wins).
GAP_REASONS: dict[str, str] = {
    "pending": "pending: CPU rejects the synthesized inputs of its generated case",
    "not_dispatched": "declared by executed cases, but none dispatched it in this run",
    "dispatch_unobserved": "declared by executed cases whose dispatch was not observed (torch.compile, observer rerun)",
    "not_executed": "declared only by cases that did not execute in this run (not applicable, not claimed, filtered)",
    "unsafe": "no case declares it: the generated suite skips it as unsafe to call with synthesized inputs",
    "no_generator": "no case declares it: the generator cannot make one of its arguments",
    "not_in_run": "no case of this run declares it (its case is outside the run's selection: dtype, level, suite)",
}
_SHOWN_IDS = 3  # case ids named in a reason's detail


@dataclass(frozen=True)
class Declaring:
    """One case declaring an op name: its id, final status, whether it executed and was observed."""

    case_id: str
    status: str
    executed: bool
    observed: bool
    why_unobserved: str = ""


def first_error(message: str) -> str:
    """CPU's first error from a pending record's message (`... (first: RuntimeError: ...)`), one line."""
    m = re.search(r"\(first: (.*)\)\s*$", message, re.S)
    text = m.group(1) if m else message
    return (text.strip().splitlines() or [""])[0][:200]


def _ids(rows: list[Declaring]) -> str:
    shown = ", ".join(r.case_id for r in rows[:_SHOWN_IDS])
    return shown + (f" and {len(rows) - _SHOWN_IDS} more" if len(rows) > _SHOWN_IDS else "")


def declared_by(declaring: dict[str, list[Declaring]], surfaces: tuple[Surface, ...]) -> dict[str, list[Declaring]]:
    """Surface name -> the cases declaring it (each op name resolved by coverage/mapping.py's rule)."""
    out: dict[str, list[Declaring]] = {}
    for name, rows in declaring.items():
        for surface in resolve_op(name, surfaces):
            out.setdefault(surface, []).extend(rows)
    return out


def classify(surface: str, pending: str | None, rows: list[Declaring],
             skip_reason: Callable[[str], str | None]) -> tuple[str, str]:
    """(reason key of GAP_REASONS, one-line detail) for one unobserved implementable surface."""
    if pending is not None:
        return "pending", f"pending: CPU rejects the synthesized inputs: {first_error(pending)}"
    executed = [r for r in rows if r.executed]
    observed = [r for r in executed if r.observed]
    if observed:
        return "not_dispatched", f"declared by {_ids(observed)} but not dispatched in this run"
    if executed:
        whys = Counter(r.why_unobserved for r in executed).most_common(1)[0][0]
        return "dispatch_unobserved", f"declared by {_ids(executed)}, whose dispatch was not observed: {whys}"
    if rows:
        counts = ", ".join(f"{s} {n}" for s, n in sorted(Counter(r.status for r in rows).items()))
        return "not_executed", f"declared only by cases that did not execute ({counts}): {_ids(rows)}"
    why = skip_reason(surface)
    if why is not None and why.startswith("unsafe: "):
        return "unsafe", f"no case declares it; the generated suite skips it: {why}"
    if why is not None:
        return "no_generator", f"no case declares it; the generated suite makes none: {why}"
    return "not_in_run", "no case of this run declares it (its generated or hand-written case is outside the selection)"


def generated_skip_reason() -> Callable[[str], str | None]:
    """Why the generated suite makes no case for an overload (None: it makes one), read lazily from
    the build's schemas (imports torch; only asked for surfaces no record declares)."""
    table: dict[str, Any] = {}

    def reason(surface: str) -> str | None:
        from torchcts.cases.schema.build import aten_surfaces, skip_reason

        if not table:
            table.update({s.name: s for s in aten_surfaces()})
        s = table.get(surface)
        return skip_reason(s) if s is not None else None

    return reason


def explain_gaps(unobserved: Iterable[Surface], pending_ops: dict[str, str], declaring: dict[str, list[Declaring]],
                 surfaces: tuple[Surface, ...], skip_reason: Callable[[str], str | None] | None = None,
                 ) -> list[dict[str, str]]:
    """Each unobserved surface with its reason key and detail (the JSON rows of `unobserved`)."""
    skip_reason = skip_reason or generated_skip_reason()
    by_surface = declared_by(declaring, surfaces)
    rows = []
    for s in unobserved:
        key, detail = classify(s.name, pending_ops.get(s.name), by_surface.get(s.name, []), skip_reason)
        rows.append({"surface": s.name, "kind": s.kind, "reason": key, "detail": detail,
                     **({"pending": pending_ops[s.name]} if s.name in pending_ops else {})})
    return rows


def by_reason(gaps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gaps grouped by reason key, in GAP_REASONS order: reason, meaning, count, surfaces."""
    groups: dict[str, list[str]] = {}
    for g in gaps:
        groups.setdefault(str(g.get("reason")), []).append(str(g.get("surface")))
    order = list(GAP_REASONS)
    return [{"reason": key, "meaning": GAP_REASONS.get(key, key), "count": len(names), "surfaces": names}
            for key, names in sorted(groups.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))]
