"""The counterexample corpus: every failing input exploration found, one JSON file each.

Layout: `<DIR>/<op key>/<case digest>-<entry digest>.json` (the op key as in case ids, e.g.
`div.floor_rounding`), holding {"version", "case", "variant", "sample" (the shrunk input,
codec.py), "original", "recipe", "message"}. One file per find, named by its content, so a
merge is a union of files: writers never read-modify-write, two workers (or two machines whose
folders are copied together) cannot lose each other's finds, and each file is written whole
(safe_io.write_atomic). The same layout is written in the run folder (`<run>/corpus/`), and into
`--corpus DIR` when given; an explore case replays DIR's entries for its own case id before it
explores. Files are untrusted: only regular files are opened, without blocking (a FIFO or a
device in the folder is refused, never waited on); JSON only (untrusted.loads), size-capped; what
an entry may ask for is bounded before anything is built (`bounds_problem`: dimensions, elements,
bytes against the manifest's max_tensor_mb, int arguments that could be sizes); shapes checked by
codec.decode_sample. An unreadable or refused file is counted (`corpus_unreadable`), never fatal
and never a failure of the backend.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts.safe_io import write_atomic
from torchcts.untrusted import loads

VERSION = 1
MAX_BYTES = 1 << 20
# What a replayed entry may ask for. No explored sample has more dimensions (OpInfo's have at most
# 5); a hundred turn a correct backend's case into an error. Bytes are counted at 16 per element
# (complex128, the widest dtype) against the manifest's max_tensor_mb.
MAX_DIMS = 8
DEFAULT_MAX_TENSOR_MB = 256.0


@dataclass
class Entry:
    case: str
    variant: str
    sample: dict[str, Any]  # codec.encode_sample of the shrunk input
    original: dict[str, Any] | None = None  # the input exploration found, when storable
    recipe: str = ""
    message: str = ""
    name: str = ""  # the file name, when read

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "case": self.case, "variant": self.variant, "sample": self.sample,
                "original": self.original, "recipe": self.recipe, "message": self.message[:500]}


def _safe(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", part)[:120] or "_"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def op_folder(case_id: str) -> str:
    """The op key of an `opinfo/<op key>/<dtype>/explore` case id (its folder in a corpus)."""
    parts = case_id.split("/")
    return _safe(parts[1] if len(parts) > 2 else case_id)


def file_name(entry: Entry) -> str:
    """`<case digest>-<content digest>.json`: the same find is always the same file."""
    return f"{_digest(entry.case)}-{_digest(entry.variant + json.dumps(entry.sample, sort_keys=True))}.json"


def save(root: Path, entry: Entry) -> Path:
    """Write one entry under `root` (created if missing); the same find twice is the same file."""
    text = json.dumps(entry.to_json(), sort_keys=True)
    folder = root / op_folder(entry.case)
    folder.mkdir(parents=True, exist_ok=True)
    return write_atomic(folder, file_name(entry), text + "\n", root=root, fsync=False)


def load(root: Path, case_id: str, max_tensor_mb: float = DEFAULT_MAX_TENSOR_MB) -> tuple[list[Entry], int]:
    """(the entries of `case_id` under `root`, in file-name order; how many files were unreadable or
    refused: not a regular file, too large, not JSON, or asking for more than `bounds_problem` allows)."""
    folder = root / op_folder(case_id)
    if not folder.is_dir() or folder.is_symlink():
        return [], 0
    entries: list[Entry] = []
    bad = 0
    for path in sorted(folder.glob(f"{_digest(case_id)}-*.json")):
        try:
            entry = _entry(loads(_read_regular(path)), path.name)
            problem = bounds_problem(entry.sample, max_tensor_mb) or bounds_problem(entry.original, max_tensor_mb)
            if problem:
                raise ValueError(problem)
        except (OSError, ValueError):  # UnicodeDecodeError and untrusted.Unreadable are ValueErrors
            bad += 1
            continue
        if entry.case == case_id:
            entries.append(entry)
    return entries, bad


def _read_regular(path: Path) -> bytes:
    """The bytes of `path` if it is a regular file of at most MAX_BYTES: opened without following a
    link and without blocking (a FIFO would hang the case until its timeout), checked with fstat."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
            raise ValueError("not a regular file, or too large")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)


def bounds_problem(sample: Any, max_tensor_mb: float = DEFAULT_MAX_TENSOR_MB) -> str | None:
    """Why an encoded sample (codec.py's form) asks for more than a replay may build, or None.

    Counted on the JSON before anything is allocated: a tensor's dimensions (at most MAX_DIMS, its
    `expand` shape too) and bytes (its expanded size at 16 bytes an element; all tensors together at
    most max_tensor_mb); an int argument and the product of a list or tuple of ints (a size such as
    16,384 x 16,384) at most the elements that fit in max_tensor_mb, a lone int at most their square
    root (an `n` that makes an n x n result)."""
    max_elements = max(1, int(max_tensor_mb * (1 << 20)) // 16)
    total = 0
    stack: list[Any] = [sample]
    while stack:
        item = stack.pop()
        if isinstance(item, dict) and isinstance(item.get("tensor"), dict) and len(item) == 1:
            body = item["tensor"]
            shapes = [s for s in (body.get("shape"), body.get("expand")) if s is not None]
            for shape in shapes:
                if not isinstance(shape, list) or len(shape) > MAX_DIMS:
                    return f"a tensor of more than {MAX_DIMS} dimensions"
                if not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= max_elements for n in shape):
                    return "a tensor size out of range"
            total += math.prod(shapes[-1]) if shapes else 0
            if total > max_elements:
                return f"tensors of more than {max_tensor_mb:g} MB (max_tensor_mb)"
            continue
        children = list(item.values()) if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            if _int(item) and abs(item) > math.isqrt(max_elements):
                return f"an int argument of {str(item)[:20]} (a size past max_tensor_mb)"
            continue
        ints = [abs(c) for c in children if _int(c)]
        if len(ints) > 1 and math.prod(ints) > max_elements:
            return f"int arguments whose product passes max_tensor_mb ({str(ints[:4])[:60]})"
        stack.extend(c for c in children if not (_int(c) and len(ints) > 1))
    return None


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entry(data: Any, name: str) -> Entry:
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ValueError("not a corpus entry of this version")
    case, variant, sample = data.get("case"), data.get("variant"), data.get("sample")
    if not isinstance(case, str) or not isinstance(variant, str) or not isinstance(sample, dict):
        raise ValueError("a corpus entry needs case, variant and sample")
    original = data.get("original")
    return Entry(case, variant, sample, original if isinstance(original, dict) else None,
                 str(data.get("recipe") or "")[:500], str(data.get("message") or "")[:500], name)
