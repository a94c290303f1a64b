"""Merging shard runs into one run folder with one report.

Shards must come from the same claims, versions, device and selection (the shard index aside);
anything else is refused, because a merged report of unlike runs would be a false statement.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

from torchcts.errors import UsageError
from torchcts.model.run import Run
from torchcts.model.selection import Selection
from torchcts.results.records import rundir
from torchcts.results.records.finalize import finalize

# run.json fields (Run's) that must agree between shards.
_SAME = ("manifest_hash", "torchcts", "torch", "device", "gate", "validation", "repeat")  # repeat: flaky fails or not


def _selection_sans_shard(run: Run) -> Selection | None:
    return replace(run.selection, shard=None) if run.selection is not None else None


def check_compatible(runs: list[tuple[Path, Run]]) -> None:
    first_dir, first = runs[0]
    for path, run in runs[1:]:
        for key in _SAME:
            if getattr(run, key) != getattr(first, key):
                raise UsageError(
                    f"cannot merge {path.name} with {first_dir.name}: '{key}' differs "
                    f"({getattr(run, key)!r} vs {getattr(first, key)!r}); merge only shards of one run"
                )
        if _selection_sans_shard(run) != _selection_sans_shard(first):
            raise UsageError(f"cannot merge {path.name} with {first_dir.name}: the selections differ")
    for path, run in runs:
        shard = _shard(run)
        if not shard:
            raise UsageError(f"{path.name} is not a shard run: merge folders written by 'run --shard I/N'")
        if not (isinstance(shard, tuple) and len(shard) == 2 and all(type(v) is int and v > 0 for v in shard)):
            raise UsageError(f"{path.name}/run.json names no valid shard I/N ({shard!r}): the folder was edited; rerun it")
    shards = [tuple(_shard(r)) for _, r in runs]
    if len({n for _, n in shards}) != 1 or len(set(shards)) != len(shards):
        raise UsageError(f"cannot merge: shards {[f'{i}/{n}' for i, n in shards]} are not distinct shards of one N")


def check_disjoint(run_dirs: list[Path]) -> None:
    """No case in two shards: shards of one run never share a case, so a shared id means a copied or
    edited folder, and a merge that let one shard's `passed` hide another's `failed` would read clean
    (and depend on the order the folders were named). Read line by line (plan and records)."""
    from torchcts.results.records.jsonl import read_jsonl
    from torchcts.results.records.plan import PLAN

    owner: dict[str, str] = {}
    for d in run_dirs:
        seen: set[str] = set()
        for name in (PLAN, rundir.CASES_JSONL):
            if not (d / name).exists():
                continue
            for line in read_jsonl(d / name):
                case_id = line.value.get("id") if isinstance(line.value, dict) else None
                if isinstance(case_id, str):
                    seen.add(case_id)
        for case_id in sorted(seen):
            if owner.setdefault(case_id, d.name) != d.name:
                raise UsageError(f"cannot merge {d.name} with {owner[case_id]}: case '{case_id[:200]}' is in both "
                                 "(shards of one run never share a case; one was copied or edited): merge each shard once")


def _copy_lines(run_dirs: list[Path], folder: Path, name: str) -> None:
    """`name` of every shard joined into `folder/name` verbatim, unreadable lines too (they stay
    counted), line by line: an over-long line (untrusted.MAX_LINE) becomes one line saying so."""
    from torchcts.safe_io import open_append
    from torchcts.untrusted import MAX_LINE, open_regular, read_lines

    with open_append(folder, name, binary=True) as out:
        for d in run_dirs:
            if not (d / name).exists():
                continue
            with open_regular(d / name) as fh:
                for raw in read_lines(fh):
                    line = raw.rstrip(b"\r\n") if raw is not None else f"<a line of {d.name} over {MAX_LINE} bytes>".encode()
                    out.write(line + b"\n")


def _shard(run: Run) -> Any:
    """The run's `--shard I/N` as run.json holds it ((I, N); check_compatible checks it)."""
    return run.selection.shard if run.selection is not None else None


def merge_runs(run_dirs: list[Path], results_root: Path) -> Path:
    """Write a new run folder holding every shard's records and plans; returns it.

    Everything is written to a hidden temporary folder that is renamed at the very end, so a merge
    that fails half-way leaves no folder claiming a complete run.
    """
    import shutil

    from torchcts.results.records.plan import PLAN

    if len(run_dirs) < 2:
        raise UsageError("merge needs at least two shard runs")
    runs = [(d, rundir.read_run(d)) for d in run_dirs]
    check_compatible(runs)
    check_disjoint(run_dirs)
    out = rundir.new_run_dir(results_root)  # reserves the name
    tmp = results_root / f".{out.name}.merging"
    out.rmdir()
    tmp.mkdir()
    try:
        first = copy.deepcopy(runs[0][1])
        count = _shard(first)[1]
        statuses = {r.status for _, r in runs}
        first.name = out.name
        first.merged_from = [d.name for d, _ in runs]
        first.command = ["merge", *[d.name for d, _ in runs]]
        first.started = min(r.started or "" for _, r in runs)
        first.filtered = first.filtered or 0
        first.sharded_out = 0
        first.planned = sum(r.planned or 0 for _, r in runs)
        first.compat_fallbacks = {k: v for _, r in runs if isinstance(r.compat_fallbacks, dict)
                                  for k, v in r.compat_fallbacks.items()}
        first.selection = _selection_sans_shard(first)
        missing = count - len(runs)
        status = "complete" if statuses == {"complete"} and missing == 0 else "interrupted"
        if missing:
            first.missing_shards = missing
        rundir.write_run(tmp, first)
        for name in (rundir.CASES_JSONL, PLAN):  # verbatim, unreadable lines too: they stay counted
            if name == PLAN and not all((d / PLAN).is_file() for d, _ in runs):
                continue  # a shard without its plan: the merged run cannot be shown complete either
            _copy_lines([d for d, _ in runs], tmp, name)
        finalize(tmp, status)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    rundir.point_latest(results_root, out)
    return out
