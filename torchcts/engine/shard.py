"""Deterministic sharding of the selected cases across N machines.

Every machine of a CI matrix computes the same partition from the same inputs: the selected cases
and, optionally, the per-case durations of an earlier run (`--shard-durations RUN`). Cases are
assigned longest-first to the least-loaded shard (ties broken by id and shard index), so shards
finish together; without durations every case weighs the same, which balances counts.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from pathlib import Path
from typing import Any


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
    default = known[len(known) // 2] if known else 1.0
    runs = [(d.case.id, max(durations.get(d.case.id, default), 1e-6)) for d in decisions if d.status == "run"]
    skips = [(d.case.id, 1.0) for d in decisions if d.status != "run"]
    owner = {**partition(runs, count), **partition(skips, count)}
    kept = [d for d in decisions if owner[d.case.id] == index]
    return kept, len(decisions) - len(kept)


def durations_of(run_dir: Path) -> dict[str, float]:
    """Per-case durations recorded by an earlier run."""
    from torchcts.results.rundir import final_records

    return {r["id"]: float(r["duration_s"]) for r in final_records(run_dir) if r.get("duration_s")}
