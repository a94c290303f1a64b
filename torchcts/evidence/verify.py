"""`coverage verify-evidence DIR`: is this a well-formed, append-only, anonymous evidence store?

Checks, each reported with file and line: every line is canonical JSON; its `prev` is the hash of
the line before (so no line was changed, removed or reordered); the index matches the files
(count and last-line digest, so a changed or dropped tail is caught); records name a known
source and their own gate; no record holds an absolute path, host name or user name. With
`--base OLD`, every file of the older copy must be a prefix of the new one (the store only grew).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torchcts.evidence import store as st
from torchcts.evidence.privacy import leaks

RECORD_FIELDS = ("surface", "gate", "source", "registration", "oracles", "result", "intent", "run_status")
SOURCE_FIELDS = ("id", "torchcts", "torch", "python", "os", "arch", "device")


def _parse(name: str, lines: list[str], problems: list[str]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    prev = ""
    for n, line in enumerate(lines, 1):
        where = f"{name}:{n}"
        try:
            rec = json.loads(line)
        except ValueError as exc:
            problems.append(f"{where}: not JSON ({exc.msg})")
            prev = st.line_hash(line)
            continue
        if not isinstance(rec, dict):
            problems.append(f"{where}: not a JSON object")
        elif st.canonical(rec) != line:
            problems.append(f"{where}: not canonical JSON (sorted keys, compact): the line was edited")
        if isinstance(rec, dict):
            if rec.get("prev") != prev:
                problems.append(f"{where}: hash chain broken: a line before it was changed, removed or reordered")
            records.append(rec)
        prev = st.line_hash(line)
    return records


def _check_fields(name: str, records: list[dict[str, Any]], fields: tuple[str, ...], problems: list[str]) -> None:
    for n, rec in enumerate(records, 1):
        missing = [f for f in fields if f not in rec]
        if missing:
            problems.append(f"{name}:{n}: missing {', '.join(missing)}")


def verify_store(path: Path, identities: set[str] | None = None, base: Path | None = None) -> list[str]:
    """Every problem found (empty when the store is valid)."""
    if not path.is_dir():
        return [f"{path.name}: not a folder"]
    problems: list[str] = []
    files = st.data_files(path)
    if st.SOURCES not in files:
        problems.append(f"{st.SOURCES}: missing")
    parsed = {name: _parse(name, st.read_lines(path / name), problems) for name in files}
    sources = parsed.get(st.SOURCES, [])
    _check_fields(st.SOURCES, sources, SOURCE_FIELDS, problems)
    source_ids = {s.get("id") for s in sources}
    for name, records in parsed.items():
        for n, rec in enumerate(records, 1):
            problems += [f"{name}:{n}: {p}" for p in leaks(rec, identities)]
        if name == st.SOURCES:
            continue
        _check_fields(name, records, RECORD_FIELDS, problems)
        for n, rec in enumerate(records, 1):
            if rec.get("source") not in source_ids:
                problems.append(f"{name}:{n}: source {rec.get('source')!r} is not in {st.SOURCES}")
            if st.gate_file(str(rec.get("gate"))) != name:
                problems.append(f"{name}:{n}: gate {rec.get('gate')!r} recorded in the wrong file")
    problems += _check_index(path)
    if base is not None:
        problems += _check_grew(base, path)
    return problems


def _check_index(path: Path) -> list[str]:
    index_path = path / st.INDEX
    if not index_path.is_file():
        return [f"{st.INDEX}: missing"]
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        return [f"{st.INDEX}: not JSON ({exc.msg})"]
    expected = st.build_index(path)
    problems = []
    if index.get("format") != st.FORMAT:
        problems.append(f"{st.INDEX}: format {index.get('format')!r}, expected {st.FORMAT!r}")
    have = index.get("files", {})
    for name in sorted(set(have) | set(expected["files"])):
        h, e = have.get(name), expected["files"].get(name)
        if h is None:
            problems.append(f"{st.INDEX}: {name} is not indexed")
        elif e is None:
            problems.append(f"{st.INDEX}: {name} is indexed but missing from the store")
        elif h.get("records") != e["records"]:
            problems.append(f"{name}: {e['records']} records but the index says {h.get('records')} (records removed or added by hand)")
        elif h.get("head") != e["head"]:
            problems.append(f"{name}: its last line differs from the indexed one (the last record was changed)")
    return problems


def _check_grew(base: Path, path: Path) -> list[str]:
    problems = []
    for name in st.data_files(base):
        old, new = st.read_lines(base / name), st.read_lines(path / name)
        if new[: len(old)] != old:
            problems.append(f"{name}: does not extend the base store's {len(old)} lines (rewritten, not appended)")
    return problems
