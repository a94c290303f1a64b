"""On-disk cache of each suite's case list, so collection costs a file read, not an op_db import.

The case list is a pure function of the PyTorch build and TorchCTS's own case code, never of the
manifest: the key hashes the torch version and git revision, the TorchCTS version, and the source
of the packages that generate cases. Any edit to them, or another torch, misses the cache.
Set TORCHCTS_CACHE_DIR to move it, or TORCHCTS_NO_CACHE=1 to bypass it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from torchcts.cases.model import Case

_PACKAGE = Path(__file__).resolve().parent.parent
# Packages whose source determines the case lists.
_SOURCE_DIRS = ("cases", "oracle", "manifest")


def cache_dir() -> Path:
    env = os.environ.get("TORCHCTS_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchcts"


@lru_cache(maxsize=1)
def source_key() -> str:
    """Hash of the torch build, TorchCTS version and case-generating source files."""
    import torch

    import torchcts

    h = hashlib.sha256()
    h.update(f"{torch.__version__}|{getattr(torch.version, 'git_version', '')}|{torchcts.__version__}".encode())
    for sub in _SOURCE_DIRS:
        for path in sorted((_PACKAGE / sub).rglob("*.py")):
            h.update(str(path.relative_to(_PACKAGE)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:20]


def cached_cases(suite: str, build: Callable[[], list[Case]]) -> list[Case]:
    """The suite's cases from the cache, building and storing them on a miss."""
    if os.environ.get("TORCHCTS_NO_CACHE"):
        return build()
    path = cache_dir() / f"{suite}-{source_key()}.jsonl"
    try:
        with open(path, encoding="utf-8") as fh:
            return [Case.from_json(json.loads(line)) for line in fh]
    except (OSError, ValueError, TypeError):
        pass
    cases = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for case in cases:
                fh.write(json.dumps(case.to_json(), sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache location only costs speed
    return cases
