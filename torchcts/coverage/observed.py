"""`coverage report RUN`: coverage observed in a run's records (their `dispatched` lists).

A surface is observed when a case that executed (passed, failed, error, ... : not not_applicable,
not_claimed or filtered) recorded it as dispatched to the device under test (cases/observe.py).
Counted by surface kind, by family and by kernel for the run's device; the headline is observed
coverage of the implementable surfaces: all surfaces except the excluded backend-specific
families (cases/surface_exclusions.py), those that decompose above the device's key
(composite_implicit: the dispatch hook sees their parts, never them) and those without a kernel
for the device (missing).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts import settings
from torchcts.cases.surface_exclusions import excluded_reason
from torchcts.coverage.gaps import GAP_REASONS, Declaring, by_reason, explain_gaps
from torchcts.coverage.report import family
from torchcts.coverage.surfaces import (
    KERNELS,
    KINDS,
    Surface,
    all_surfaces,
    dispatch_key_for_device,
    kernel_table,
    registration,
)
from torchcts.model.record import CaseRecord
from torchcts.model.status import STATUSES
from torchcts.results.reports.coverage_section import dispatched_names, is_pending
from torchcts.results.reports.fallback_section import FallbackSummary
from torchcts.results.reports.fallback_section import ops_table as fallback_table
from torchcts.results.reports.fallback_section import summarize as summarize_fallback

# Kernels the dispatch hook can see on the device: a surface of another kernel is not implementable there.
OBSERVABLE_KERNELS = ("native", "composite_explicit", "fallback")


@dataclass
class RunObservation:
    """What a run's final records say about dispatch: surface -> observing case ids, and counts."""

    device: str
    cases_by_surface: dict[str, list[str]] = field(default_factory=dict)
    observed_cases: int = 0
    unobserved: Counter = field(default_factory=Counter)  # reason -> executed cases not observed
    malformed: int = 0  # records whose `dispatched` is not a list of names
    pending: int = 0
    pending_ops: dict[str, str] = field(default_factory=dict)  # op a pending case names -> its reason
    declaring: dict[str, list[Declaring]] = field(default_factory=dict)  # op name a record declares -> its cases
    # What ran on the backend's CPU fallback, by name, from the records (the worker asked the
    # dispatcher with the backend imported: no --manifest needed here).
    fallback: FallbackSummary = field(default_factory=FallbackSummary)


def observe_records(records: list[CaseRecord], device: str) -> RunObservation:
    obs = RunObservation(device, fallback=summarize_fallback(records))
    for rec in records:
        if is_pending(rec):
            obs.pending += 1
            why = str(rec.extra.get("reason") or rec.message or "pending")
            for op in rec.ops or ():
                obs.pending_ops.setdefault(str(op), why)
        info = STATUSES.get(str(rec.status))
        executed = info is not None and info.executed
        names = dispatched_names(rec) if executed else None
        why = ""
        if executed and rec.dispatched is None:
            why = str(rec.dispatch_unobserved or (
                "crashed or timed out: its worker died with the observation" if info.crash_like
                else "no `dispatched` field (recorded before observation)"))
        elif executed and names is None:
            why = "its `dispatched` field is not a list of names"
        declared = Declaring(str(rec.id), str(rec.status), executed, names is not None, why)
        for op in dict.fromkeys([*(rec.ops or ()), *([rec.op] if rec.op else [])]):
            obs.declaring.setdefault(str(op), []).append(declared)
        if not executed:
            continue
        if rec.dispatched is None:
            obs.unobserved[why] += 1
            continue
        if names is None:  # present but not a list of names
            obs.malformed += 1
            continue
        obs.observed_cases += 1
        for name in names:
            obs.cases_by_surface.setdefault(name, []).append(str(rec.id))
    return obs


def run_device_key(device: str) -> str:
    """The run's device's dispatch key; a device this process does not know is a PrivateUse1 backend."""
    from torchcts.errors import UsageError

    try:
        return dispatch_key_for_device(device)
    except UsageError:  # its kernels count once its backend is imported (`--manifest`)
        return "PrivateUse1"


def _privateuse1_is(device: str) -> bool:
    from torchcts.compat import privateuse1_name

    return privateuse1_name() == device


def _pct(n: int, d: int) -> float:
    return round(100.0 * n / d, 1) if d else 0.0


def summarize_run(obs: RunObservation, top: int = 25, surfaces: tuple[Surface, ...] | None = None,
                  skip_reason: Callable[[str], str | None] | None = None) -> dict[str, Any]:
    """The observed coverage report (JSON-able): headline, by kind, by kernel, uncovered families, and
    every unobserved implementable surface with its reason (coverage/gaps.py; `skip_reason`: why the
    generated suite makes no case for a surface, read from the build's schemas when not given)."""
    surfaces = surfaces if surfaces is not None else all_surfaces()
    key = run_device_key(obs.device)
    table = kernel_table()
    kernel = {s.name: registration(s.name, key, table)["kernel"] for s in surfaces}
    excluded = {s.name: r for s in surfaces if (r := excluded_reason(s.name)) is not None}
    seen = obs.cases_by_surface
    implementable = [s for s in surfaces if s.name not in excluded and kernel[s.name] in OBSERVABLE_KERNELS]
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        rows = [s for s in surfaces if s.kind == kind]
        impl = [s for s in implementable if s.kind == kind]
        by_kind[kind] = {"surfaces": len(rows), "observed": sum(s.name in seen for s in rows),
                         "implementable": len(impl), "implementable_observed": sum(s.name in seen for s in impl),
                         "percent": _pct(sum(s.name in seen for s in impl), len(impl))}
    by_kernel = {k: {"surfaces": sum(1 for s in surfaces if kernel[s.name] == k),
                     "observed": sum(1 for s in surfaces if kernel[s.name] == k and s.name in seen)} for k in KERNELS}
    families: dict[str, list[Surface]] = {}
    for s in implementable:
        families.setdefault(family(s.op), []).append(s)
    uncovered = [{"family": name, "unobserved": len(miss), "surfaces": len(rows), "examples": [s.name for s in miss[:4]]}
                 for name, rows in families.items() if (miss := [s for s in rows if s.name not in seen])]
    uncovered.sort(key=lambda f: (-f["unobserved"], f["family"]))
    reasons = Counter(excluded.values())
    gaps = [{**g, "kernel": kernel[g["surface"]]} for g in explain_gaps(
        [s for s in implementable if s.name not in seen], obs.pending_ops, obs.declaring, surfaces, skip_reason)]
    impl_seen = sum(s.name in seen for s in implementable)
    known = {s.name for s in surfaces}
    return {
        "device": obs.device,
        "dispatch_key": key,
        "device_registered": key != "PrivateUse1" or _privateuse1_is(obs.device),
        "headline": {
            "implementable": len(implementable), "observed": impl_seen, "percent": _pct(impl_seen, len(implementable)),
            "excluded": len(excluded), "composite_implicit": by_kernel["composite_implicit"]["surfaces"],
            "missing": by_kernel["missing"]["surfaces"], "pending": obs.pending,
            "surfaces": len(surfaces), "observed_all": sum(s.name in seen for s in surfaces),
        },
        "cases": {"observed": obs.observed_cases, "unobserved": dict(obs.unobserved.most_common()),
                  "malformed": obs.malformed},
        "by_kind": by_kind,
        "by_kernel": by_kernel,
        "exclusions": [{"reason": r, "surfaces": n} for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))],
        "largest_unobserved_families": uncovered[:top],
        "unobserved": gaps,
        "unobserved_by_reason": [{k: v for k, v in g.items() if k != "surfaces"} for g in by_reason(gaps)],
        "observed_unknown": sorted(n for n in seen if n not in known),  # not an overload of this build
        "fallback": obs.fallback.to_json(),
    }


def headline_line(summary: dict[str, Any]) -> str:
    h = summary["headline"]
    return (f"{h['observed']} of {h['implementable']} implementable aten overloads observed ({h['percent']}%); "
            f"excluded {h['excluded']} backend-specific, {h['composite_implicit']} composite-implicit, "
            f"{h['missing']} without a kernel for {summary['dispatch_key']}; {h['pending']} cases pending")


def render_markdown(summary: dict[str, Any], run_name: str, list_unobserved: bool = False) -> str:
    c = summary["cases"]
    lines = [
        "# TorchCTS observed dispatcher coverage",
        "",
        f"Run {run_name}; device {summary['device']} (dispatch key {summary['dispatch_key']}); "
        f"{c['observed']} executed cases observed, {sum(c['unobserved'].values())} not observed.",
        "",
        f"**{headline_line(summary)}**",
        *(["", f"Note: device {summary['device']} is not registered in this process, so no kernel of its backend "
            "is known: pass --manifest (its backend_import registers them) for the kernel counts."]
          if not summary["device_registered"] else []),
        "",
        "## By surface kind",
        "",
        "| kind | surfaces | surfaces observed | implementable | implementable observed | % of implementable |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind, row in summary["by_kind"].items():
        lines.append(f"| {kind} | {row['surfaces']} | {row['observed']} | {row['implementable']} | "
                     f"{row['implementable_observed']} | {row['percent']} |")
    lines += ["", f"## By kernel for {summary['dispatch_key']}", "", "| kernel | surfaces | observed |", "| --- | ---: | ---: |"]
    lines += [f"| {k} | {v['surfaces']} | {v['observed']} |" for k, v in summary["by_kernel"].items()]
    lines += ["", "## Excluded families", "", "| reason | surfaces |", "| --- | ---: |"]
    lines += [f"| {e['reason']} | {e['surfaces']} |" for e in summary["exclusions"]]
    lines += ["", "## Largest unobserved families (implementable)", "", "| family | unobserved | of | examples |",
              "| --- | ---: | ---: | --- |"]
    lines += [f"| {f['family']} | {f['unobserved']} | {f['surfaces']} | {', '.join(f['examples'])} |"
              for f in summary["largest_unobserved_families"]]
    fb = summary.get("fallback") or {}
    if fb.get("ops"):
        lines += ["", f"## Ran on the backend's CPU fallback: {len(fb['ops'])} ops", "",
                  f"{fb['cases_on_fallback']} executed cases ran at least one of these ops on the fallback; "
                  f"{fb['passes_on_fallback']} of {fb['passes']} passes rest on it. By the cases they carry "
                  "(implement the top ones first):", "", *fallback_table(fb["ops"])]
    if summary.get("unobserved_by_reason"):
        lines += ["", f"## Why {len(summary['unobserved'])} implementable surfaces were not observed", "",
                  "| reason | surfaces | meaning |", "| --- | ---: | --- |"]
        lines += [f"| {g['reason']} | {g['count']} | {g['meaning']} |" for g in summary["unobserved_by_reason"]]
    if list_unobserved:
        lines += ["", f"## Unobserved implementable surfaces ({len(summary['unobserved'])})", "",
                  "| surface | kind | kernel | reason | detail |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {u['surface']} | {u['kind']} | {u['kernel']} | {u['reason']} | {_cell(u['detail'])} |"
                  for u in _by_reason_order(summary["unobserved"])]
    if c["unobserved"]:
        lines += ["", "## Cases not observed", ""] + [f"- {n} cases: {why}" for why, n in c["unobserved"].items()]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Record text in a Markdown table cell: one line, markup (and `|`) escaped (results/reports/quoting.py)."""
    from torchcts.results.reports.quoting import md_text

    return md_text(text[:240])


def _by_reason_order(gaps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order = list(GAP_REASONS)
    return sorted(gaps, key=lambda g: (order.index(g["reason"]) if g["reason"] in order else len(order), g["surface"]))


def report_run(ref: str, top: int = 25, results_root: Path = Path(settings.RESULTS_DIR)) -> tuple[Path, dict[str, Any]]:
    """(run folder, summary) of `coverage report RUN`; the headline is kept in run.json and the run's
    reports are rebuilt, so report.html shows it (results/reports/coverage_section.py)."""
    from torchcts.results.records import rundir
    from torchcts.results.records.finalize import finalize

    run_dir = rundir.resolve_run(ref, results_root)  # a run folder or name, a results folder, `latest`
    run = rundir.read_run(run_dir)
    summary = summarize_run(observe_records(rundir.final_records(run_dir), str(run.device_type or "cpu")), top=top)
    if run.status == "running":  # still being written (or killed: `torchcts report` closes it first)
        print(f"torchcts: note: {run_dir.name} is still running: its reports are left as they are", file=sys.stderr)
        return run_dir, summary
    run.coverage = {"headline": summary["headline"], "dispatch_key": summary["dispatch_key"],
                       "by_kind": summary["by_kind"], "exclusions": summary["exclusions"],
                       "gaps": summary["unobserved_by_reason"]}
    rundir.write_run(run_dir, run)
    finalize(run_dir, run.status or "complete")  # report.html shows it
    return run_dir, summary
