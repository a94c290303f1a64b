"""`coverage verify-evidence DIR`: is this a well-formed, append-only, anonymous evidence store?

Checks, each reported with file and line: every line is canonical JSON; its `prev` is the hash of
the line before (so no line was changed, removed or reordered); the index matches the files
(count and last-line digest, so a changed or dropped tail is caught); records name a known
source and their own gate; no record holds an absolute path, host name or user name. When the
store is in git, each file must extend every committed version of it (so a cut and re-chained
tail is rejected); with `--base OLD`, every file of the older copy must be a prefix of the new one.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from torchcts.evidence import store as st
from torchcts.evidence.privacy import leaks, local_identities
from torchcts.untrusted import loads

RECORD_FIELDS = ("surface", "gate", "source", "registration", "oracles", "result", "intent", "run_status")
SHALLOW = "shallow (a --depth clone)"
SOURCE_FIELDS = ("id", "torchcts", "torch", "python", "os", "arch", "device")


def _parse(name: str, lines: list[str], problems: list[str]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    prev = ""
    for n, line in enumerate(lines, 1):
        where = f"{name}:{n}"
        try:
            rec = loads(line)
        except ValueError as exc:
            problems.append(f"{where}: not JSON ({getattr(exc, 'msg', None) or type(exc).__name__})")
            prev = st.line_hash(line)
            continue
        if not isinstance(rec, dict):
            problems.append(f"{where}: not a JSON object")
        elif _canonical(rec) != line:
            problems.append(f"{where}: not canonical JSON (sorted keys, compact): the line was edited")
        if isinstance(rec, dict):
            if rec.get("prev") != prev:
                problems.append(f"{where}: hash chain broken: a line before it was changed, removed or reordered")
            records.append(rec)
        prev = st.line_hash(line)
    return records


def _byte_exact(name: str, path: Path) -> list[str]:
    """The file is its canonical lines byte for byte: UTF-8, one newline after each line, no blank
    line and no carriage return (the reader skips blank lines, so an added one would verify)."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [f"{name}: not UTF-8 text: the file was edited"]
    lines = text.split("\n")
    if text.startswith("\n") or "\n\n" in text or "\r" in text:
        where = next((n for n, ln in enumerate(lines, 1) if not ln.strip("\r") or "\r" in ln), 1)
        return [f"{name}:{where}: a blank line or carriage return the canonical form does not have: the file was edited"]
    return []


def _canonical(rec: Any) -> str | None:
    """The canonical line of a parsed record; None where it has none (NaN or infinity: a line
    TorchCTS never writes, `allow_nan=False`)."""
    try:
        return st.canonical(rec)
    except ValueError:
        return None


def _check_fields(name: str, records: list[dict[str, Any]], fields: tuple[str, ...], problems: list[str]) -> None:
    for n, rec in enumerate(records, 1):
        missing = [f for f in fields if f not in rec]
        if missing:
            problems.append(f"{name}:{n}: missing {', '.join(missing)}")


def verify_store(path: Path, identities: set[str] | None = None, base: Path | None = None,
                 history: bool = True, notes: list[str] | None = None) -> list[str]:
    """Every problem found (empty when the store is valid). With `history`, the store must extend
    every committed version of itself in git (notes say when it is not in git)."""
    if not path.is_dir():
        return [f"{path.name}: not a folder"]
    problems: list[str] = []
    files = st.data_files(path)
    if st.SOURCES not in files:
        problems.append(f"{st.SOURCES}: missing")
    problems += [f"{name}: ends in a torn line (an interrupted write; collect refuses to append)"
                 for name in files if st.torn_tail(path / name)]
    for name in files:
        problems += _byte_exact(name, path / name)
    parsed = {name: _parse(name, st.read_lines(path / name), problems) for name in files}
    sources = parsed.get(st.SOURCES, [])
    _check_fields(st.SOURCES, sources, SOURCE_FIELDS, problems)
    source_ids = {s.get("id") for s in sources if isinstance(s.get("id"), str)}
    ids = local_identities() if identities is None else identities  # once per store, not per record
    for name, records in parsed.items():
        for n, rec in enumerate(records, 1):
            problems += [f"{name}:{n}: {p}" for p in leaks(rec, ids)]
        if name == st.SOURCES:
            continue
        _check_fields(name, records, RECORD_FIELDS, problems)
        for n, rec in enumerate(records, 1):
            if not isinstance(rec.get("source"), str) or rec.get("source") not in source_ids:
                problems.append(f"{name}:{n}: source {rec.get('source')!r} is not in {st.SOURCES}")
            if st.gate_file(str(rec.get("gate"))) != name:
                problems.append(f"{name}:{n}: gate {rec.get('gate')!r} recorded in the wrong file")
    problems += _check_index(path)
    if base is not None:
        problems += _check_grew(base, path)
    if history:
        found, note = check_history(path)
        if base is not None and found and SHALLOW in found[0]:  # --base proves what the shallow history cannot
            found, note = [], found[0].replace(": fetch", "; checked against --base instead; or fetch", 1)
        problems += found
        if note and notes is not None:
            notes.append(note)
    return problems


def _check_index(path: Path) -> list[str]:
    index_path = path / st.INDEX
    if not index_path.is_file():
        return [f"{st.INDEX}: missing"]
    try:
        index = loads(index_path.read_bytes())
    except ValueError as exc:
        return [f"{st.INDEX}: not JSON ({getattr(exc, 'msg', None) or type(exc).__name__})"]
    if not isinstance(index, dict) or not isinstance(index.get("files", {}), dict):
        return [f"{st.INDEX}: not an index (an object whose `files` is an object): restore it"]
    expected = st.build_index(path)
    problems = []
    try:
        rendered = st.index_text(index).encode("ascii", "replace")
    except ValueError:  # NaN or infinity: never written by an append
        rendered = b""
    if index_path.read_bytes() != rendered:
        problems.append(f"{st.INDEX}: not in its canonical form byte for byte (edited by hand)")
    if index.get("format") != st.FORMAT:
        problems.append(f"{st.INDEX}: format {str(index.get('format'))[:40]!r}, expected {st.FORMAT!r}")
    have = index.get("files", {})
    for name in sorted(set(have) | set(expected["files"])):
        h, e = have.get(name), expected["files"].get(name)
        if h is not None and not isinstance(h, dict):
            problems.append(f"{st.INDEX}: files.{name[:80]} is not an object")
        elif h is None:
            problems.append(f"{st.INDEX}: {name} is not indexed")
        elif e is None:
            problems.append(f"{st.INDEX}: {name} is indexed but missing from the store")
        elif h.get("records") != e["records"]:
            problems.append(f"{name}: {e['records']} records but the index says {h.get('records')} "
                            "(records removed or added by hand)")
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


def _git(cwd: Path, *args: str) -> str | None:
    """git's output, or None when git is missing or the command fails (not a repository, no such path)."""
    try:
        out = subprocess.run(["git", "-c", "core.fsmonitor=false", "-C", str(cwd), *args], capture_output=True,
                             timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.decode("utf-8", "replace")


def check_history(path: Path) -> tuple[list[str], str | None]:
    """(problems, note): each data file must extend every committed version of it, in commit order,
    so a store whose tail was cut and re-chained (index rebuilt) is rejected without --base."""
    top = _git(path, "rev-parse", "--show-toplevel")
    if top is None:
        return [], (f"{path.name} is not in a git repository: append-only is checked within the files only; "
                    "pass --base OLD_COPY to compare with an older copy")
    root = Path(top.strip())
    if (_git(root, "rev-parse", "--is-shallow-repository") or "").strip() == "true":
        return [f"{path.name}: the git history is {SHALLOW}, so the chain cannot be proven against "
                "its committed versions: fetch the whole history (git fetch --unshallow; actions/checkout: "
                "fetch-depth: 0) or pass --base OLD_COPY"], None
    rel = Path(os.path.relpath(path.resolve(), root.resolve())).as_posix()
    commits = (_git(root, "log", "--format=%H", "--reverse", "--", rel) or "").split()
    if not commits:
        return [], f"{path.name} has no committed history in git yet: pass --base OLD_COPY to compare with a copy"
    problems: list[str] = []
    committed: dict[str, tuple[str, list[str]]] = {}  # file -> (commit, its lines there)
    for commit in commits:
        listing = _git(root, "ls-tree", "--name-only", commit, "--", f"{rel}/") or ""
        for name in sorted({Path(n).name for n in listing.split("\n") if n.endswith(".jsonl")}):
            text = _git(root, "show", f"{commit}:{rel}/{name}")
            if text is None:
                continue
            lines = [ln for ln in text.split("\n") if ln]
            before = committed.get(name)
            if before is not None and lines[: len(before[1])] != before[1]:
                problems.append(f"{name}: commit {commit[:10]} rewrites lines committed in {before[0][:10]} "
                                "(the store's history must only grow)")
            committed[name] = (commit, lines)
    for name, (commit, lines) in sorted(committed.items()):
        if st.read_lines(path / name)[: len(lines)] != lines:
            problems.append(f"{name}: does not extend its committed version ({len(lines)} lines in {commit[:10]}): "
                            "rewritten or cut, not appended")
    return problems, None
