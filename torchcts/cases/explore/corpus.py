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
    most max_tensor_mb). Every number that can become a size, an int or a finite float alike (an
    `arange` end of 2e8 as a float, a `linspace` steps): a lone one at most the square root of the
    elements that fit in max_tensor_mb (an `n` that makes an n x n result), the product of a list or
    tuple of them at most those elements; a `scale_factor`-like keyword (scale, factor) multiplies the
    largest tensor by its value once per spatial dimension, and that product is bounded the same way."""
    max_elements = max(1, int(max_tensor_mb * (1 << 20)) // 16)
    total, largest, dims = 0, 0, 0
    scales: list[Any] = []
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
            elements = math.prod(shapes[-1]) if shapes else 0
            total, largest, dims = total + elements, max(largest, elements), max(dims, len(shapes[-1]) if shapes else 0)
            if total > max_elements:
                return f"tensors of more than {max_tensor_mb:g} MB (max_tensor_mb)"
            continue
        if isinstance(item, dict):  # keyword arguments: a scale multiplies what it resizes
            scales += [v for k, v in item.items() if isinstance(k, str) and ("scale" in k or "factor" in k)]
        number = _number(item)
        if number is not None:
            if number > math.isqrt(max_elements):
                return f"a number argument of {number:.4g} (a size past max_tensor_mb)"
            continue
        children = _children(item)
        if children is None:
            continue
        numbers = [n for n in map(_number, children) if n is not None]
        if len(numbers) > 1 and (math.prod(n for n in numbers if n) > max_elements or max(numbers) > max_elements):
            return f"number arguments whose product passes max_tensor_mb ({str(numbers[:4])[:60]})"
        stack.extend(c for c in children if not (len(numbers) > 1 and _number(c) is not None))
    for scale in scales:
        one = _number(scale)
        items = scale.get("tuple") if isinstance(scale, dict) else scale  # a list, or codec's tuple
        numbers = [one] if one is not None else [n for n in map(_number, _children(items) or []) if n is not None]
        grown = largest * math.prod(numbers) ** (max(1, dims - 2) if len(numbers) == 1 else 1)
        if numbers and largest and grown > max_elements:
            return f"a scale of {str(numbers[:4])[:40]} that grows a tensor past max_tensor_mb"
    return None


def _number(value: Any) -> float | None:
    """The magnitude of a value that can become a size: an int, a finite float, or codec's
    `{"float": hex}`; None for anything else (an infinity or NaN asks for no size: torch refuses it)."""
    if isinstance(value, dict) and len(value) == 1 and "float" in value:  # float.hex text (codec._num)
        text = value["float"]
        try:
            value = float.fromhex(text) if isinstance(text, str) else text
        except (ValueError, OverflowError):
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    # as a float, an int past float's range infinite: products and messages never overflow
    return abs(float(value)) if abs(value) < 1e300 else math.inf


def _children(item: Any) -> list[Any] | None:
    """The values inside a container of the encoded form (a list, a `{"tuple": [...]}`, an object)."""
    if isinstance(item, list):
        return item
    if isinstance(item, dict):
        return [v for k, v in item.items() if k != "float"]
    return None


def _entry(data: Any, name: str) -> Entry:
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ValueError("not a corpus entry of this version")
    case, variant, sample = data.get("case"), data.get("variant"), data.get("sample")
    if not isinstance(case, str) or not isinstance(variant, str) or not isinstance(sample, dict):
        raise ValueError("a corpus entry needs case, variant and sample")
    original = data.get("original")
    return Entry(case, variant, sample, original if isinstance(original, dict) else None,
                 str(data.get("recipe") or "")[:500], str(data.get("message") or "")[:500], name)
