"""The evidence store on disk: canonical JSON lines that only grow, chained by hashes.

    DIR/sources.jsonl   one anonymous source per collection (versions, OS, architecture, device)
    DIR/<gate>.jsonl    one record per surface per collection for that backend gate
    DIR/index.json      per file: record count, digest of the last line, counts by result status

Each line is canonical JSON (sorted keys, no spaces, ASCII) and carries `prev`, the SHA-256 of
the previous line of the same file ("" for the first), so changing, removing or reordering any
existing line breaks the chain; the index's digest of the last line catches a changed or dropped
tail. `verify.py` checks all of it. Writers only ever append.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

from torchcts.errors import UsageError
from torchcts.safe_io import open_append, write_atomic
from torchcts.untrusted import loads

FORMAT = "torchcts-evidence/1"
SOURCES = "sources.jsonl"
INDEX = "index.json"


def canonical(obj: Any) -> str:
    """The one text form of a record: sorted keys, compact separators, ASCII only."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def line_hash(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


def gate_file(gate: str) -> str:
    return f"{gate}.jsonl"


def read_lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    text = path.read_bytes().decode("utf-8", "replace")  # a damaged byte breaks the chain, visibly
    return [ln for ln in text.split("\n") if ln]


def last_hash(path: Path) -> str:
    lines = read_lines(path)
    return line_hash(lines[-1]) if lines else ""


def chain(records: list[dict[str, Any]], prev: str) -> list[str]:
    """Canonical lines for records, each carrying the hash of the line before it."""
    lines = []
    for rec in records:
        line = canonical({**rec, "prev": prev})
        lines.append(line)
        prev = line_hash(line)
    return lines


def torn_tail(path: Path) -> bool:
    """Whether the file's last line lacks its newline (an earlier write cut short by a full disk or a
    kill). The one rule for collect (refuses to append) and verify (reports it)."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) != b"\n"


def check_tail(store: Path, name: str) -> None:
    """Refuse to append to a file whose last line is torn: appending would glue a record onto it and
    the store would never verify again."""
    if torn_tail(store / name):
        raise UsageError(f"{store.name}/{name} ends in a torn line (an interrupted write): run "
                         f"`torchcts coverage verify-evidence {shlex.quote(store.name)}` and restore the file from version "
                         "control before collecting again")


def append(store: Path, name: str, records: list[dict[str, Any]]) -> None:
    """Append records to one file of the store atomically: one write, flushed and fsynced; on any
    error the file is cut back to its old length, so it never keeps a torn line of ours."""
    if not records:
        return
    check_tail(store, name)
    path = store / name
    data = "".join(line + "\n" for line in chain(records, last_hash(path))).encode("utf-8")
    with open_append(store, name, binary=True) as fh:
        size = fh.tell()
        try:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        except BaseException:
            fh.truncate(size)
            raise


def append_all(store: Path, batches: dict[str, list[dict[str, Any]]]) -> None:
    """Append each file's records and rewrite the index, all or nothing: on any error (a full disk
    half-way) every file is cut back to its old length and the old index restored, so the sources
    file is never ahead of the index nor a gate file ahead of its source."""
    batches = {name: recs for name, recs in batches.items() if recs}
    for name in batches:  # every file checked before the first byte is appended
        check_tail(store, name)
    sizes = {name: (store / name).stat().st_size if (store / name).is_file() else None for name in batches}
    index = store / INDEX
    old_index = index.read_bytes() if index.is_file() and not index.is_symlink() else None
    try:
        for name, recs in batches.items():
            append(store, name, recs)
        write_index(store)
    except BaseException:
        for name, size in sizes.items():
            path = store / name
            if size is None:
                path.unlink(missing_ok=True)
            elif path.is_file() and not path.is_symlink():
                os.truncate(path, size)
        if old_index is not None:
            write_atomic(store, INDEX, old_index)
        raise


def index_text(index: dict[str, Any]) -> str:
    """index.json's one text form (verify compares it byte for byte)."""
    return json.dumps(index, sort_keys=True, indent=1, ensure_ascii=True) + "\n"


def file_summary(path: Path) -> dict[str, Any]:
    lines = read_lines(path)
    statuses = Counter()
    for ln in lines:
        try:
            status = loads(ln).get("result", {}).get("status")
        except (ValueError, AttributeError):
            status = None
        if isinstance(status, str) and status:  # a crafted line may hold anything
            statuses[status] += 1
    out: dict[str, Any] = {"records": len(lines), "head": line_hash(lines[-1]) if lines else ""}
    if statuses:
        out["results"] = dict(sorted(statuses.items()))
    return out


def data_files(store: Path) -> list[str]:
    return sorted(p.name for p in store.glob("*.jsonl"))


def build_index(store: Path) -> dict[str, Any]:
    return {"format": FORMAT, "files": {name: file_summary(store / name) for name in data_files(store)}}


def write_index(store: Path) -> None:
    """The index is derived from the files; it is rewritten (atomically) after each append."""
    write_atomic(store, INDEX, index_text(build_index(store)))


# What a new store's folder may already hold: a fresh `git init` (or another version control's
# metadata) is how an evidence repository starts, not a foreign folder.
REPOSITORY_FILES = frozenset({".git", ".gitignore", ".gitattributes", ".hg", ".hgignore", ".svn"})


def check_store(path: Path) -> None:
    """Refuse a path that is a file or a foreign folder (UsageError): before a collection's oracles
    run, so the mistake costs no minutes."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"--store {path.name} is a file, not a folder: pass the evidence folder, e.g. evidence/backends")
    if (path.is_dir() and not (path / INDEX).is_file() and not (path / SOURCES).is_file()
            and any(p.name not in REPOSITORY_FILES for p in path.iterdir())):
        raise UsageError(f"--store {path.name} is a non-empty folder without an evidence index: pass an "
                         "evidence store (e.g. evidence/backends) or a new folder")


def open_store(path: Path) -> Path:
    """Create the store folder if needed (check_store first)."""
    check_store(path)
    path.mkdir(parents=True, exist_ok=True)
    return path
