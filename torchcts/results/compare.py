"""Two runs side by side: new failures, fixes, precision regressions (README.md, `compare`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts.results import rundir
from torchcts.results.statuses import FAILURES, PASSING

PRECISION_FACTOR = 2.0


def max_abs_error(record: dict[str, Any]) -> float | None:
    """The largest absolute error the record reports: from a mismatch, or measured on a pass."""
    for source in (record.get("mismatch") or {}, record.get("info") or {}):
        value = source.get("max_abs_error")
        if isinstance(value, (int, float)):
            return float(value)
    return None


@dataclass
class Change:
    id: str
    old: str | None
    new: str
    message: str = ""
    old_error: float | None = None
    new_error: float | None = None


@dataclass
class Comparison:
    new_failures: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    changed_failures: list[Change] = field(default_factory=list)
    precision: list[Change] = field(default_factory=list)
    only_old: int = 0
    only_new: int = 0
    notes: list[str] = field(default_factory=list)


def compare_records(old: list[dict[str, Any]], new: list[dict[str, Any]], *, common_only: bool = False,
                    factor: float = PRECISION_FACTOR) -> Comparison:
    before = {r["id"]: r for r in old}
    after = {r["id"]: r for r in new}
    c = Comparison(only_old=len(before.keys() - after.keys()), only_new=len(after.keys() - before.keys()))
    for cid, r in after.items():
        prev = before.get(cid)
        if prev is None and common_only:
            continue
        was, now = (prev or {}).get("status"), r.get("status", "error")
        change = Change(cid, was, now, str(r.get("message", ""))[:300], max_abs_error(prev or {}), max_abs_error(r))
        if now in FAILURES and was not in FAILURES:
            c.new_failures.append(change)
        elif was in FAILURES and now in PASSING:
            c.fixes.append(change)
        elif was in FAILURES and now in FAILURES and was != now:
            c.changed_failures.append(change)
        if change.old_error and change.new_error is not None and change.new_error >= factor * change.old_error:
            c.precision.append(change)
    return c


def compare_runs(old_dir: Path, new_dir: Path, **kw: Any) -> Comparison:
    old_run, new_run = rundir.read_run(old_dir), rundir.read_run(new_dir)
    c = compare_records(rundir.final_records(old_dir), rundir.final_records(new_dir), **kw)
    for key in ("device", "gate", "manifest_hash", "validation"):
        if old_run.get(key) != new_run.get(key):
            c.notes.append(f"the runs differ in {key}: {old_run.get(key)!r} vs {new_run.get(key)!r}")
    for name, run in (("old", old_run), ("new", new_run)):
        if run.get("status") != "complete":
            c.notes.append(f"the {name} run is {run.get('status', 'interrupted')}: cases it did not reach are missing")
    return c


def render(c: Comparison, limit: int = 50) -> str:
    lines = [f"note: {n}" for n in c.notes]
    sections = (
        ("new failures", c.new_failures, lambda x: f"{x.old or 'absent'} -> {x.new}: {x.message}"),
        ("fixes", c.fixes, lambda x: f"{x.old} -> {x.new}"),
        ("failures that changed", c.changed_failures, lambda x: f"{x.old} -> {x.new}: {x.message}"),
        (f"precision regressions (max abs error grown {PRECISION_FACTOR:g}x or more)", c.precision,
         lambda x: f"{x.old_error:.3g} -> {x.new_error:.3g} ({x.new}"
                   f"{', x%.3g' % (x.new_error / x.old_error) if x.old_error else ''})"),
    )
    for title, items, fmt in sections:
        lines.append(f"{title}: {len(items)}")
        lines += [f"  {x.id}: {fmt(x)}" for x in items[:limit]]
        if len(items) > limit:
            lines.append(f"  ... and {len(items) - limit} more")
    lines.append(f"cases only in the old run: {c.only_old}; only in the new run: {c.only_new}")
    return "\n".join(lines)


def previous_comparable(results_root: Path, run_dir: Path) -> Path | None:
    """The newest earlier complete run in the same results folder with the same device and claims."""
    current = rundir.read_run(run_dir)
    key = (current.get("device"), current.get("manifest_hash"), current.get("validation"))
    for candidate in sorted((p for p in results_root.iterdir() if p.is_dir() and p.name < run_dir.name), reverse=True):
        try:
            run = rundir.read_run(candidate)
        except (OSError, ValueError):
            continue
        if run.get("status") == "complete" and (run.get("device"), run.get("manifest_hash"), run.get("validation")) == key:
            return candidate
    return None


def regressions_line(results_root: Path, run_dir: Path,
                     records: list[dict[str, Any]] | None = None) -> str | None:
    """One scorecard line: what changed since the previous comparable run (cases in both runs).

    `records`: this run's final records when the caller has read them already (finalize)."""
    prev = previous_comparable(results_root, run_dir)
    if prev is None:
        return None
    new = records if records is not None else rundir.final_records(run_dir)
    c = compare_records(rundir.final_records(prev), new, common_only=True)
    head = ", ".join(x.id for x in c.new_failures[:5]) + (" ..." if len(c.new_failures) > 5 else "")
    return (f"since {prev.name}: {len(c.new_failures)} new failures{' (' + head + ')' if head else ''}, "
            f"{len(c.fixes)} fixes, {len(c.precision)} precision regressions "
            f"(torchcts compare {prev.name} {run_dir.name})")
