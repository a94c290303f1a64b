"""Two runs side by side: new failures, fixes, precision regressions (README.md, `compare`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts.errors import UsageError
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import FAILURES, PASSING
from torchcts.oracle.mismatch import Mismatch
from torchcts.results.records import rundir
from torchcts.results.reports.quoting import one_field
from torchcts.results.reports.upgrade import Upgrade, render_lines, upgrade_view
from torchcts.results.reports.wording import plural
from torchcts.results.repro.commands import shell_path

PRECISION_FACTOR = 2.0


def max_abs_error(record: CaseRecord) -> float | None:
    """The largest absolute error the record reports: from a mismatch, or measured on a pass."""
    mismatch = Mismatch.from_json(record.mismatch)
    if mismatch is not None and mismatch.max_abs_error is not None:
        return float(mismatch.max_abs_error)
    value = (record.info or {}).get("max_abs_error")  # a pass's own measure (cases/context.py: describe)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


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
    upgrade: Upgrade | None = None  # the runs ran different torch releases (results/reports/upgrade.py)


def compare_records(old: list[CaseRecord], new: list[CaseRecord], *, common_only: bool = False,
                    factor: float = PRECISION_FACTOR) -> Comparison:
    before = {r.id: r for r in old}
    after = {r.id: r for r in new}
    c = Comparison(only_old=len(before.keys() - after.keys()), only_new=len(after.keys() - before.keys()))
    for cid, r in after.items():
        prev = before.get(cid)
        if prev is None and common_only:
            continue
        was, now = (prev.status if prev else None), r.status
        change = Change(cid, was, now, str(r.message or "")[:300], max_abs_error(prev) if prev else None,
                        max_abs_error(r))
        if now in FAILURES and was not in FAILURES:
            c.new_failures.append(change)
        elif was in FAILURES and now in PASSING:
            c.fixes.append(change)
        elif was in FAILURES and now in FAILURES and was != now:
            c.changed_failures.append(change)
        if change.old_error and change.new_error is not None and change.new_error >= factor * change.old_error:
            c.precision.append(change)
    return c


def compare_runs(old_dir: Path, new_dir: Path, new_records: list[CaseRecord] | None = None,
                 **kw: Any) -> Comparison:
    old_run, new_run = rundir.read_run(old_dir), rundir.read_run(new_dir)
    new = new_records if new_records is not None else rundir.final_records(new_dir)
    old = rundir.final_records(old_dir)
    c = compare_records(old, new, **kw)
    c.upgrade = upgrade_view(old_run, new_run, old, new, (x.id for x in c.new_failures))
    for key in ("device", "gate", "manifest_hash", "validation", "selection"):  # Run's fields
        before, after = _as_json(getattr(old_run, key)), _as_json(getattr(new_run, key))
        if before != after:
            c.notes.append(difference(key, before, after))
    for name, run in (("old", old_run), ("new", new_run)):
        if run.status != "complete":
            c.notes.append(f"the {name} run is {run.status or 'interrupted'}: cases it did not reach are missing")
    return c


def difference(key: str, old: Any, new: Any) -> str:
    """`the runs differ in selection: dtypes float32 vs (all); ops add vs mul`: for a mapping (the
    selection, the device) only the fields that differ, each value as a flag takes it, never a
    Python repr."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(k for k in {**old, **new} if old.get(k) != new.get(k))
        parts = [f"{k} {_plain(k, old.get(k))} vs {_plain(k, new.get(k))}" for k in keys]
        return f"the runs differ in {key}: " + "; ".join(parts)
    return f"the runs differ in {key}: {_plain(key, old)} vs {_plain(key, new)}"


_JOINERS = {"shard": "/", "level_range": ":"}  # --shard I/N, --level-range A:B


def _plain(key: str, value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return _JOINERS.get(key, ",").join(str(v) for v in value) if value else "(all)"
    if isinstance(value, dict):
        return " ".join(f"{k}={_plain(k, v)}" for k, v in value.items()) or "(none)"
    return str(value)


def render(c: Comparison, limit: int = 50) -> str:
    lines = [f"note: {n}" for n in c.notes] + [headline(c)]
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
    if c.upgrade is not None:
        lines += render_lines(c.upgrade, limit)
    return "\n".join(one_field(line) for line in lines)  # each line one line whatever a record holds


COMPARABLE_KEYS = ("device", "manifest_hash", "validation", "selection")  # Run's fields


def comparable_key(run: Run) -> str:
    """What two runs must share for "since the previous run": device, claims, validation mode and
    the user's selection (a focused run is never measured against a full one)."""
    return json.dumps([_as_json(getattr(run, k)) for k in COMPARABLE_KEYS], sort_keys=True, default=str)


def _as_json(value: Any) -> Any:
    """A run's field as run.json holds it (the device and the selection are typed: model/run.py)."""
    return value.to_json() if hasattr(value, "to_json") else value


def previous_comparable(results_root: Path, run_dir: Path) -> Path | None:
    """The newest earlier complete run in the same results folder with the same comparable key."""
    key = comparable_key(rundir.read_run(run_dir))
    for candidate in sorted((p for p in results_root.iterdir()
                                   if p.is_dir() and not p.is_symlink() and p.name < run_dir.name), reverse=True):
        try:
            run = rundir.read_run(candidate)
        except (OSError, ValueError, UsageError):  # an unreadable old run is no previous run
            continue
        if run.status == "complete" and comparable_key(run) == key:
            return candidate
    return None


def headline(c: Comparison) -> str:
    """The counts `torchcts compare` reports, in one line (the scorecard prints the same)."""
    return (f"{plural(len(c.new_failures), 'new failure')}, {plural(len(c.fixes), 'fix', 'fixes')}, "
            f"{plural(len(c.changed_failures), 'changed failure')}, {plural(len(c.precision), 'precision regression')}")


def regressions_line(results_root: Path, run_dir: Path,
                     records: list[CaseRecord] | None = None) -> str | None:
    """One scorecard line: `torchcts compare PREVIOUS THIS` in brief, for the previous comparable run.

    `records`: this run's final records when the caller has read them already (finalize)."""
    prev = previous_comparable(results_root, run_dir)
    if prev is None:
        return None
    c = compare_runs(prev, run_dir, new_records=records)
    head = ", ".join(x.id for x in c.new_failures[:5]) + (" ..." if len(c.new_failures) > 5 else "")
    command = f"torchcts compare {shell_path(str(prev))} {shell_path(str(run_dir))}"
    return f"since {prev.name}: {headline(c)}{' (new: ' + head + ')' if head else ''} ({command})"
