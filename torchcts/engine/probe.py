"""Per-case timing and memory fields for a record, cheap enough for every case (docs/speed.md).

`started_at` (epoch seconds) and `worker` let bench/bench.py compute how busy each worker was and
the run's cases/s; `cpu_s` (the worker's CPU seconds in the case, all its threads) is a cost that a
loaded machine inflates far less than `duration_s` (--shard's estimates, engine/shard.py, still
come from `duration_s`); `maxrss_mb` (the worker's resident-set high-water mark after the case) and
`rss_grew_mb` (how much this case raised it) say which case made a run's memory peak; `threads` is
torch's intra-op thread count the case ran with (engine/threads.py). Two getrusage calls and two
clock reads per case: a few microseconds.
"""

from __future__ import annotations

import resource
import sys
import time
from typing import Any

from torchcts.engine.threads import intra_op_threads

# ru_maxrss is KiB on Linux, bytes on macOS.
_RSS_TO_MB = 1 / (1024 * 1024) if sys.platform == "darwin" else 1 / 1024


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * _RSS_TO_MB


class CaseProbe:
    """Started before a case runs; `fields()` after it gives the record's timing and memory fields."""

    def __init__(self, worker: str) -> None:
        self.worker = worker
        self.started_at = time.time()
        self.cpu_before = time.process_time()
        self.rss_before = _maxrss_mb()

    def fields(self) -> dict[str, Any]:
        after = _maxrss_mb()
        return {"started_at": round(self.started_at, 3), "worker": self.worker,
                "cpu_s": round(time.process_time() - self.cpu_before, 4),
                "maxrss_mb": round(after, 1), "rss_grew_mb": round(after - self.rss_before, 1),
                "threads": intra_op_threads()}


def worker_name(config: Any) -> str:
    """xdist's worker id ("gw0"), or "main" for the one process of --no-isolation / -n 0."""
    return getattr(config, "workerinput", {}).get("workerid", "main")
