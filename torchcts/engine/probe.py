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

import os
import resource
import sys
import time
from typing import Any

from torchcts.engine.threads import intra_op_threads
from torchcts.model.record import CaseRecord

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

    def fill(self, record: CaseRecord) -> None:
        """Sets the record's timing and memory fields (`fields()`, each a CaseRecord field)."""
        for name, value in self.fields().items():
            setattr(record, name, value)


# A case's freed memory stays in the C allocator's heap (glibc keeps freed chunks for reuse, and
# its mmap threshold grows after a large free, so later tensors of up to 32 MB come from the heap
# too): a worker's resident set crept from 360 MB to 1.2-1.5 GB over a level-8 run. When it has
# grown by TRIM_MB since the last release, malloc_trim(0) hands the free pages back.
TRIM_MB = 128
_released_at: list[float] = []


def _current_rss_mb() -> float | None:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def _malloc_trim() -> Any:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def release_memory() -> float | None:
    """After a case: give freed heap pages back to the system once the resident set has grown by
    TRIM_MB since the last time (Linux with glibc; a no-op elsewhere). The resident set after it,
    in MB (None where /proc is missing). Costs one or two /proc reads."""
    rss = _current_rss_mb()
    if rss is None or _TRIM is None:
        return rss
    if not _released_at:
        _released_at.append(rss)
    elif rss > _released_at[0] + TRIM_MB:
        _TRIM(0)
        rss = _released_at[0] = _current_rss_mb() or rss
    return rss


_TRIM = _malloc_trim() if sys.platform.startswith("linux") else None


def worker_name(config: Any) -> str:
    """xdist's worker id ("gw0"), or "main" for the one process of --no-isolation / -n 0."""
    return getattr(config, "workerinput", {}).get("workerid", "main")
