"""Deterministic sharding of the selected cases across N machines."""

from __future__ import annotations

import zlib
from typing import Any


def shard_of(case_id: str, n: int) -> int:
    """1-based shard of a case by a stable hash of its id (counts-balanced fallback)."""
    return zlib.crc32(case_id.encode()) % n + 1


def shard_decisions(decisions: list[Any], index: int, count: int) -> tuple[list[Any], int]:
    """Keep this shard's decisions; return them and how many were moved to other shards."""
    kept = [d for d in decisions if shard_of(d.case.id, count) == index]
    return kept, len(decisions) - len(kept)
