"""On-disk cache of each suite's case list, so collection costs a file read, not an op_db import.

The case list is a pure function of the PyTorch build and TorchCTS's own case code, never of the
manifest: the key hashes the torch version and git revision, the TorchCTS version, and the source
of the packages that generate cases and of compat.py (OpInfo field access and fallbacks decide
dtypes and oracles). Any edit to them, or another torch, misses the cache.
Set TORCHCTS_CACHE_DIR to move it, or TORCHCTS_NO_CACHE=1 to bypass it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import marshal
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from torchcts import compat, settings
from torchcts.errors import UsageError
from torchcts.model.case import Case
from torchcts.safe_io import write_atomic

_PACKAGE = Path(__file__).resolve().parent.parent
# Packages and modules whose source determines the case lists.
_SOURCE_DIRS = ("model", "cases", "oracle", "manifest")  # model/case.py: what a case is
_SOURCE_FILES = ("compat.py",)


@lru_cache(maxsize=1)
def source_key() -> str:
    """Hash of the torch build, TorchCTS version and case-generating source files."""
    import torchcts
    from torchcts.compat import torch_version_file

    h = hashlib.sha256()
    h.update(f"{torch_version_file()}|{torchcts.__version__}".encode())
    files = [p for sub in _SOURCE_DIRS for p in sorted((_PACKAGE / sub).rglob("*.py"))]
    for path in [*files, *(_PACKAGE / name for name in _SOURCE_FILES)]:
        h.update(str(path.relative_to(_PACKAGE)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:20]


# Rows are field tuples in this order; a file written for other fields is a miss, not an error.
FIELDS = tuple(f.name for f in dataclasses.fields(Case))
# Cache files of other keys untouched this long are deleted when a new one is written.
_STALE_S = 7 * 24 * 3600


def _load(path: Path) -> tuple[list[Case], list[str]] | None:
    """marshal, not JSON: ~37k cases load in a fraction of the time (cases are plain data).
    Returns the cases and the compatibility fallbacks their build used."""
    try:
        with open(path, "rb") as fh:
            fields, rows, fallbacks = marshal.loads(fh.read())  # load() on a file reads in tiny pieces: 10x slower
        if tuple(fields) != FIELDS or not isinstance(rows, (list, tuple)) or not isinstance(fallbacks, (list, tuple)):
            return None
        cases = [Case(*row) for row in rows]
    except (OSError, ValueError, TypeError, EOFError):
        return None
    # A fallback compat.py does not register (an edited or foreign file) is a miss, not a KeyError.
    ok = all(well_formed(c) for c in cases) and all(isinstance(f, str) and f in compat.FALLBACKS for f in fallbacks)
    return (cases, list(fallbacks)) if ok else None


def _strs(value: object) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, str) for v in value)


def well_formed(c: Case) -> bool:
    """A cached case of the right shape: anything else (an edited or foreign file) is a miss."""
    return (isinstance(c.id, str) and isinstance(c.suite, str) and type(c.level) is int and isinstance(c.runner, str)
            and isinstance(c.params, dict) and _strs(c.ops) and _strs(c.dtypes) and _strs(c.requires)
            and isinstance(c.dtype, (str, type(None))) and isinstance(c.oracle, str) and isinstance(c.kind, str)
            and isinstance(c.not_applicable, (str, type(None))))


def case_row(case: Case) -> tuple:
    """The case as a tuple of plain values in FIELDS order (what marshal stores; Case(*row) reads it)."""
    return tuple(dict(case.params) if name == "params" else getattr(case, name) for name in FIELDS)


def _store(path: Path, cases: list[Case], fallbacks: list[str]) -> None:
    rows = [case_row(c) for c in cases]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path.parent, path.name, marshal.dumps((FIELDS, rows, fallbacks)), fsync=False)
        _prune(path.parent, keep=path)
    except (OSError, ValueError, UsageError):  # UsageError: a planted link, refused
        pass  # a read-only cache location, or params marshal cannot store, only cost speed


def _prune(folder: Path, keep: Path) -> None:
    """Drop case lists of other torch builds or TorchCTS sources nobody has read for a week."""
    now = time.time()
    for old in folder.glob("*-*.*"):
        try:
            if old != keep and now - old.stat().st_atime > _STALE_S and old.suffix in (".marshal", ".jsonl"):
                old.unlink()
        except OSError:
            continue


def cached_cases(suite: str, build: Callable[[], list[Case]]) -> list[Case]:
    """The suite's cases from the cache, building and storing them on a miss.

    A build that took a compatibility fallback (an OpInfo field this PyTorch lacks) stores its
    name with the cases, and a load notes it again, so run.json says so on cached runs too."""
    if settings.current().no_cache:
        return build()
    path = settings.cache_folder() / f"{suite}-{source_key()}.marshal"
    loaded = _load(path)
    if loaded is not None:
        cases, fallbacks = loaded
        for name in fallbacks:
            compat.use_fallback(name)
        return cases
    with compat.watch_fallbacks() as fallbacks:
        cases = build()
    _store(path, cases, sorted(fallbacks))
    return cases
