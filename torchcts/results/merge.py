"""Merging shard runs into one run folder with one report.

Shards must come from the same claims, versions, device and selection (the shard index aside);
anything else is refused, because a merged report of unlike runs would be a false statement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchcts.errors import UsageError
from torchcts.results import rundir
from torchcts.results.finalize import finalize
from torchcts.safe_io import write_atomic

# run.json fields that must agree between shards.
_SAME = ("manifest_hash", "torchcts", "torch", "device", "gate", "validation")


def _selection_sans_shard(run: dict[str, Any]) -> dict[str, Any]:
    sel = dict(run.get("selection", {}))
    sel.pop("shard", None)
    return sel


def check_compatible(runs: list[tuple[Path, dict[str, Any]]]) -> None:
    first_dir, first = runs[0]
    for path, run in runs[1:]:
        for key in _SAME:
            if run.get(key) != first.get(key):
                raise UsageError(
                    f"cannot merge {path.name} with {first_dir.name}: '{key}' differs "
                    f"({run.get(key)!r} vs {first.get(key)!r}); merge only shards of one run"
                )
        if _selection_sans_shard(run) != _selection_sans_shard(first):
            raise UsageError(f"cannot merge {path.name} with {first_dir.name}: the selections differ")
    for path, run in runs:
        shard = run.get("selection", {}).get("shard")
        if not shard:
            raise UsageError(f"{path.name} is not a shard run: merge folders written by 'run --shard I/N'")
        if not (isinstance(shard, list) and len(shard) == 2 and all(type(v) is int and v > 0 for v in shard)):
            raise UsageError(f"{path.name}/run.json names no valid shard I/N ({shard!r}): the folder was edited; rerun it")
    shards = [tuple(r["selection"]["shard"]) for _, r in runs]
    if len({n for _, n in shards}) != 1 or len(set(shards)) != len(shards):
        raise UsageError(f"cannot merge: shards {[f'{i}/{n}' for i, n in shards]} are not distinct shards of one N")


def merge_runs(run_dirs: list[Path], results_root: Path) -> Path:
    """Write a new run folder holding every shard's records and plans; returns it.

    Everything is written to a hidden temporary folder that is renamed at the very end, so a merge
    that fails half-way leaves no folder claiming a complete run.
    """
    import shutil

    from torchcts.results.plan import PLAN

    if len(run_dirs) < 2:
        raise UsageError("merge needs at least two shard runs")
    runs = [(d, rundir.read_run(d)) for d in run_dirs]
    check_compatible(runs)
    out = rundir.new_run_dir(results_root)  # reserves the name
    tmp = results_root / f".{out.name}.merging"
    out.rmdir()
    tmp.mkdir()
    try:
        first = dict(runs[0][1])
        count = runs[0][1]["selection"]["shard"][1]
        statuses = {r.get("status") for _, r in runs}
        first.update(
            name=out.name,
            merged_from=[d.name for d, _ in runs],
            command=["merge", *[d.name for d, _ in runs]],
            started=min(str(r.get("started") or "") for _, r in runs),
            filtered=first.get("filtered", 0),
            sharded_out=0,
            planned=sum(int(r.get("planned") or 0) for _, r in runs),
            compat_fallbacks={k: v for _, r in runs for k, v in (r.get("compat_fallbacks") or {}).items()
                              if isinstance(r.get("compat_fallbacks"), dict)},
        )
        first["selection"] = {**_selection_sans_shard(first), "shard": None}
        missing = count - len(runs)
        status = "complete" if statuses == {"complete"} and missing == 0 else "interrupted"
        if missing:
            first["missing_shards"] = missing
        rundir.write_run(tmp, first)
        for name in (rundir.CASES_JSONL, PLAN):  # verbatim, unreadable lines too: they stay counted
            if name == PLAN and not all((d / PLAN).is_file() for d, _ in runs):
                continue  # a shard without its plan: the merged run cannot be shown complete either
            joined = b"".join(line + b"\n" for d, _ in runs if (d / name).is_file()
                              for line in (d / name).read_bytes().splitlines())
            write_atomic(tmp, name, joined)
        finalize(tmp, status)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    rundir.point_latest(results_root, out)
    return out
