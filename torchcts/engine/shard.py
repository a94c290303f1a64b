"""Deterministic sharding of the selected cases across N machines.

Every machine of a CI matrix computes the same partition from the same inputs: the selected cases
and, optionally, the per-case durations of an earlier run (`--shard-durations RUN`). Cases are
assigned longest-first to the least-loaded shard (ties broken by id and shard index), so shards
finish together. Without durations a case weighs its estimated cost (`estimated_cost`: the mean
seconds of its suite's case kind, scaled by its op's, from `case_costs.json`, which
`python bench/bench.py --write-costs RUN` derives from a full run's records); the table ships with
the package, so every machine computes the same weights.
"""

from __future__ import annotations

import functools
import heapq
import json
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchcts.model.record import CaseRecord

from torchcts import settings

COSTS_FILE = Path(__file__).with_name("case_costs.json")


def partition(ids_weights: list[tuple[str, float]], count: int) -> dict[str, int]:
    """Case id -> 1-based shard, longest processing time first."""
    order = sorted(ids_weights, key=lambda iw: (-iw[1], iw[0]))
    heap = [(0.0, i) for i in range(1, count + 1)]
    out: dict[str, int] = {}
    for case_id, weight in order:
        load, shard = heapq.heappop(heap)
        out[case_id] = shard
        heapq.heappush(heap, (load + weight, shard))
    return out


def shard_decisions(
    decisions: list[Any], index: int, count: int, durations: Mapping[str, float] | None = None
) -> tuple[list[Any], int]:
    """Keep this shard's decisions; return them and how many went to other shards.

    Cases that run are weighted by their recorded duration (median when unknown); skip records
    cost nothing and are spread the same way with unit weight, so each is written by one shard.
    """
    durations = durations or {}
    known = sorted(durations.values())
    if known:
        default = known[len(known) // 2]
        runs = [(d.case.id, max(durations.get(d.case.id, default), 1e-6)) for d in decisions if d.status == "run"]
    else:
        runs = [(d.case.id, estimated_cost(d.case)) for d in decisions if d.status == "run"]
    skips = [(d.case.id, 1.0) for d in decisions if d.status != "run"]
    owner = {**partition(runs, count), **partition(skips, count)}
    kept = [d for d in decisions if owner[d.case.id] == index]
    return kept, len(decisions) - len(kept)


def durations_of(run_dir: Path) -> dict[str, float]:
    """Per-case durations recorded by an earlier run."""
    from torchcts.results.records.rundir import final_records

    return {r.id: float(r.duration_s) for r in final_records(run_dir) if r.duration_s}


@functools.lru_cache(maxsize=1)
def cost_table() -> dict[str, dict[str, float]]:
    """{"kind": {"suite/kind": mean s}, "op": {"suite/op": mean s}, "suite": {"suite": mean s},
    "case": {case id: s}}; empty if absent. "case" holds only the cases the means misjudge."""
    try:
        data = json.loads(COSTS_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {k: {} for k in TABLES}
    return {k: dict(data.get(k) or {}) for k in TABLES}


TABLES = ("kind", "op", "suite", "case")
# A case whose recorded seconds are over this and off its estimate by more than OUTLIER_RATIO either
# way keeps its own entry: one op's slow dtype (grid_sampler_3d's float16 backward, 70 s on CPU
# against an estimate of 11 s) otherwise unbalances a 4-shard split by 20%.
OUTLIER_S = 1.0
OUTLIER_RATIO = 2.0


def estimated_cost(case: Any) -> float:
    """Seconds this case is expected to take, relative to others: a suite missing from the table (none
    of its cases in the run it was written from) weighs the median suite mean; with no table every
    case weighs 1.0."""
    table = cost_table()
    known = table.get("case", {}).get(case.id)
    if known is not None:
        return max(known, 1e-4)
    return _from_means(table, case)


def _from_means(table: dict[str, dict[str, float]], case: Any) -> float:
    suite_mean = table["suite"].get(case.suite)
    if suite_mean is None:
        means = sorted(table["suite"].values())
        return means[len(means) // 2] if means else 1.0
    cost = table["kind"].get(f"{case.suite}/{case.kind}", suite_mean)
    op = (getattr(case, "params", None) or {}).get("op")
    op_mean = table["op"].get(f"{case.suite}/{op}") if op else None
    if op_mean is not None and suite_mean > 0:
        cost *= op_mean / suite_mean
    return max(cost, 1e-4)


def cost_table_from(records: list[CaseRecord]) -> dict[str, dict[str, float]]:
    """The table estimated_cost reads, from executed records (`bench/bench.py --write-costs`)."""
    sums: dict[str, dict[str, list[float]]] = {"kind": {}, "op": {}, "suite": {}}
    for r in records:
        seconds = float(r.duration_s)
        keys = {"suite": r.suite, "kind": f"{r.suite}/{r.kind or ''}"}
        if r.op:
            keys["op"] = f"{r.suite}/{r.op}"
        for table, key in keys.items():
            acc = sums[table].setdefault(key, [0.0, 0])
            acc[0] += seconds
            acc[1] += 1
    table = {t: {k: round(s / n, 4) for k, (s, n) in sorted(v.items())} for t, v in sums.items()}
    # A worker's first case also pays its imports (the OpInfo database, inductor): not the case's cost.
    first: dict[str, tuple[float, str]] = {}
    for r in records:
        if r.worker and r.started_at is not None:
            first[r.worker] = min(first.get(r.worker, (float("inf"), "")), (r.started_at, r.id))
    starters = {case_id for _, case_id in first.values()}
    table["case"] = {}
    for r in records:
        if r.id in starters:
            continue
        seconds = float(r.duration_s)
        case = SimpleNamespace(id=r.id, suite=r.suite, kind=r.kind or "",
                               params={"op": r.op} if r.op else {})
        guess = _from_means(table, case)
        if seconds > OUTLIER_S and not 1 / OUTLIER_RATIO <= seconds / guess <= OUTLIER_RATIO:
            table["case"][r.id] = round(seconds, 2)
    table["case"] = dict(sorted(table["case"].items()))
    return table


# `--shard auto`: the shard index and count from the CI engine running this job, never a scheduler
# of ours. Each source: (engine, index variable, its base (0 or 1), count variable or None: the count
# then comes from --shard-count or TORCHCTS_SHARD_COUNT). The first source whose index is set wins.
AUTO_SOURCES: tuple[tuple[str, str, int, str | None], ...] = (
    ("GitLab CI (parallel:)", "CI_NODE_INDEX", 1, "CI_NODE_TOTAL"),
    ("a Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", 0, None),
)
COUNT_VAR = settings.env_name("shard_count")


def _int(value: str, name: str) -> int:
    from torchcts.errors import UsageError

    try:
        return int(value.strip())
    except ValueError:
        raise UsageError(f"--shard auto: {name}={value!r} is not a whole number; fix the job's variables") from None


def shard_from_env(env: Mapping[str, str], count: int | None = None) -> tuple[int, int, str]:
    """(index 1-based, count, where they came from) for `--shard auto`; UsageError naming the fix
    when no source is set or its values do not make a shard. `count` is --shard-count."""
    from torchcts.errors import UsageError

    for engine, index_var, base, count_var in AUTO_SOURCES:
        if not env.get(index_var, "").strip():
            continue
        index = _int(env[index_var], index_var) + 1 - base
        if count_var is not None:
            if not env.get(count_var, "").strip():
                raise UsageError(f"--shard auto: {index_var} is set but {count_var} is not; pass --shard I/N instead")
            total, total_from = _int(env[count_var], count_var), count_var
        elif count is not None:
            total, total_from = count, "--shard-count"
        elif (given := settings.of(env).shard_count) is not None:
            total, total_from = given, COUNT_VAR
        else:
            raise UsageError(f"--shard auto: {engine} gives {index_var} but not the shard count: pass --shard-count N "
                             f"(the Job's completions) or set {COUNT_VAR}")
        if not 1 <= index <= total:
            raise UsageError(f"--shard auto: {index_var}={env[index_var].strip()} (counted from {base}) is not one of "
                             f"{total} shards ({total_from}); check the job's parallelism")
        return index, total, f"{engine}: {index_var}, {total_from}"
    names = ", ".join(sorted({v for _, i, _, c in AUTO_SOURCES for v in (i, c) if v}))
    raise UsageError(f"--shard auto found no shard variables ({names}): run it under GitLab `parallel:` or a Kubernetes "
                     "Indexed Job, or pass --shard I/N (e.g. from a GitHub Actions matrix)")
