"""Keep host identity out of the run folder: absolute paths become short placeholders.

Tracebacks, faulthandler output and exception messages name files by absolute path, which carry
the user's home, the checkout location and the temp folder. Every line written into a run folder
passes through `scrub`, so `results/` can be committed and shared (README.md, "Results").
"""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig
import tempfile
from pathlib import Path


@functools.lru_cache(maxsize=1)
def _replacements() -> tuple[tuple[str, str], ...]:
    pairs: dict[str, str] = {}

    def add(path: str | None, label: str) -> None:
        if not path:
            return
        for p in {path, os.path.realpath(path)}:
            if len(p) > 1 and p not in pairs:
                pairs[p] = label

    add(str(Path(__file__).resolve().parents[2]), "<torchcts>")
    for name in ("purelib", "platlib", "stdlib", "platstdlib"):
        add(sysconfig.get_paths().get(name), f"<{name}>")
    for p in getattr(site, "getsitepackages", list)():
        add(p, "<site-packages>")
    add(getattr(site, "getusersitepackages", lambda: None)(), "<user-site>")
    add(sys.prefix, "<prefix>")
    add(sys.base_prefix, "<prefix>")
    add(os.getcwd(), ".")
    add(tempfile.gettempdir(), "<tmp>")
    add(os.path.expanduser("~"), "~")
    # Longest first, so a path inside another is replaced by its own, more precise label.
    return tuple(sorted(pairs.items(), key=lambda kv: -len(kv[0])))


def scrub(text: str) -> str:
    """`text` with every known absolute path prefix replaced by its placeholder."""
    for path, label in _replacements():
        if path in text:
            text = text.replace(path, label)
        escaped = path.replace("\\", "\\\\")
        if escaped != path and escaped in text:  # the same path inside a JSON string on Windows
            text = text.replace(escaped, label)
    return text
