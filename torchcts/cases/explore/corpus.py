"""The counterexample corpus: every failing input exploration found, one JSON file each.

Layout: `<DIR>/<op key>/<case digest>-<entry digest>.json` (the op key as in case ids, e.g.
`div.floor_rounding`), holding {"version", "case", "variant", "sample" (the shrunk input,
codec.py), "original", "recipe", "message"}. One file per find, named by its content, so a
merge is a union of files: writers never read-modify-write, two workers (or two machines whose
folders are copied together) cannot lose each other's finds, and each file is written whole
(safe_io.write_atomic). The same layout is written in the run folder (`<run>/corpus/`), and into
`--corpus DIR` when given; an explore case replays DIR's entries for its own case id before it
explores. Files are untrusted: JSON only, size-capped, shapes checked by codec.decode_sample;
an unreadable file is counted, never fatal.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts.safe_io import write_atomic

VERSION = 1
MAX_BYTES = 1 << 20


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


def load(root: Path, case_id: str) -> tuple[list[Entry], int]:
    """(the entries of `case_id` under `root`, in file-name order; how many files were unreadable)."""
    folder = root / op_folder(case_id)
    if not folder.is_dir() or folder.is_symlink():
        return [], 0
    entries: list[Entry] = []
    bad = 0
    for path in sorted(folder.glob(f"{_digest(case_id)}-*.json")):
        try:
            if path.is_symlink() or path.stat().st_size > MAX_BYTES:
                raise ValueError("a link or too large")
            data = json.loads(path.read_text(encoding="utf-8"))
            entry = _entry(data, path.name)
        except (OSError, ValueError, UnicodeDecodeError):
            bad += 1
            continue
        if entry.case == case_id:
            entries.append(entry)
    return entries, bad


def _entry(data: Any, name: str) -> Entry:
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise ValueError("not a corpus entry of this version")
    case, variant, sample = data.get("case"), data.get("variant"), data.get("sample")
    if not isinstance(case, str) or not isinstance(variant, str) or not isinstance(sample, dict):
        raise ValueError("a corpus entry needs case, variant and sample")
    original = data.get("original")
    return Entry(case, variant, sample, original if isinstance(original, dict) else None,
                 str(data.get("recipe") or "")[:500], str(data.get("message") or "")[:500], name)
