"""The inner loop's shortcut: the last selections' results, so rerunning the same command does not
load and filter every case (~0.4 s of a 3 s one-op run on a 2-core machine).

A selection's result is a pure function of the case lists (cases/cache.py's source key: the torch
build, TorchCTS's version and the case-generating source), the manifest's claims, the selection
flags and the selection code itself (this package's selection and shard modules and the shipped
cost table): the memo's key hashes all of them, so any change to any of them misses. Suites from
TORCHCTS_EXTRA_SUITES, TORCHCTS_NO_CACHE, or an unreadable/foreign memo file: no memo, the full
selection runs as before. What a hit returns is exactly what `select` returned: the decided cases
(run, not_claimed, not_applicable) with their reasons, the filtered and sharded-out counts, the
compatibility fallbacks that building the case lists took (run.json names them) and the ledger
entries outside the selection.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
from pathlib import Path

from torchcts import compat, settings
from torchcts.cases.cache import FIELDS, case_row, well_formed
from torchcts.engine.selection import Decision, SelectionResult
from torchcts.errors import UsageError
from torchcts.model.case import Case
from torchcts.model.manifest import Manifest
from torchcts.model.selection import Selection
from torchcts.safe_io import write_atomic

_HERE = Path(__file__).resolve().parent
# The selection code besides the case-generating packages (those are in the cache's source key).
_CODE = ("selection.py", "shard.py", "case_costs.json", "selection_memo.py", "../results/ledger/match.py")
_KEEP = 64  # memo files kept (the newest by use); older ones are deleted when one is written
_STATUSES = ("run", "not_claimed", "not_applicable")


def memo_key(manifest: Manifest, selection: Selection) -> str | None:
    """The key of this selection, or None when it must not be memoised."""
    from torchcts.cases.cache import source_key
    from torchcts.manifest.schema import extra_suites

    if settings.current().no_cache or extra_suites():
        return None
    h = hashlib.sha256()
    h.update(source_key().encode())
    for name in _CODE:
        try:
            h.update(name.encode() + (_HERE / name).read_bytes())
        except OSError:
            return None
    h.update(json.dumps(manifest.to_json(), sort_keys=True, default=str).encode())
    h.update(json.dumps(selection.to_json(), sort_keys=True, default=str).encode())
    h.update(json.dumps(sorted((selection.shard_durations or {}).items())).encode())
    return h.hexdigest()[:32]


def _path(key: str) -> Path:
    return settings.cache_folder() / "selections" / f"{key}.marshal"


def load(key: str) -> SelectionResult | None:
    """The memoised result for `key`, or None (a miss, or a file that is not exactly ours)."""
    path = _path(key)
    try:
        with open(path, "rb") as fh:
            fields, rows, filtered, sharded_out, fallbacks, outside = marshal.loads(fh.read())
        if tuple(fields) != FIELDS:
            return None
        decisions = []
        for status, reason, row in rows:
            case = Case(*row)
            if status not in _STATUSES or not isinstance(reason, str) or not well_formed(case):
                return None
            decisions.append(Decision(case, status, reason))
        if type(filtered) is not int or type(sharded_out) is not int or not decisions:
            return None
        if not isinstance(outside, list) or not all(type(i) is int for i in outside):
            return None
        if not all(isinstance(f, str) and f in compat.FALLBACKS for f in fallbacks):
            return None
        os.utime(path)  # the newest by use are kept
    except (OSError, ValueError, TypeError, EOFError):
        return None
    for name in fallbacks:
        compat.use_fallback(name)
    return SelectionResult(decisions, filtered, sharded_out, outside)


def store(key: str, result: SelectionResult) -> None:
    """Write the result for `key` (best effort: a read-only cache only costs speed)."""
    # a Status as its plain value: marshal takes no str subclass (it wrote nothing, silently)
    rows = [(str(d.status), d.reason, case_row(d.case)) for d in result.decisions]
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path.parent, path.name, marshal.dumps((FIELDS, rows, result.filtered, result.sharded_out,
                                                            compat.fallbacks_used(), result.ledger_outside)),
                     fsync=False)
        old = sorted(path.parent.glob("*.marshal"), key=lambda p: p.stat().st_mtime, reverse=True)[_KEEP:]
        for stale in old:
            stale.unlink(missing_ok=True)
    except (OSError, ValueError, UsageError):  # UsageError: a planted link, refused
        pass
