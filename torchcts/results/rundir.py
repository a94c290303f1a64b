"""The run folder: `results/<UTC time>-<random>/` with run.json and streamed cases.jsonl (README.md, "Results").

Records are appended one line each and flushed, never rewritten, so a killed run keeps every
finished case. Only one process (the pytest controller) appends, so lines never interleave.
A case may have several records (a rerun by --rerun-failures appends one): the LAST record of an
id supersedes the earlier ones. Totals, reports and comparisons use `final_records`.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from torchcts.results.scrub import scrub

RUN_JSON = "run.json"
CASES_JSONL = "cases.jsonl"
LATEST = "latest"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_dir(results_root: Path) -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    results_root.mkdir(parents=True, exist_ok=True)
    while True:
        path = results_root / f"{stamp}-{secrets.token_hex(3)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(scrub(json.dumps(data, indent=2, sort_keys=True, default=str)) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_run(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / RUN_JSON).read_text(encoding="utf-8"))


def point_latest(results_root: Path, run_dir: Path) -> None:
    """`results/latest` names the newest run (a one-line file, portable where symlinks are not)."""
    (results_root / LATEST).write_text(run_dir.name + "\n", encoding="utf-8")


def resolve_run(ref: str | None, results_root: Path = Path("results")) -> Path:
    """A run given as a folder, a run name under results/, or None for the latest."""
    from torchcts.errors import UsageError

    if ref:
        for candidate in (Path(ref), results_root / ref):
            if (candidate / RUN_JSON).is_file():
                return candidate
        raise UsageError(f"no run at '{ref}': pass a results folder containing run.json")
    pointer = results_root / LATEST
    if pointer.is_file():
        run = results_root / pointer.read_text(encoding="utf-8").strip()
        if (run / RUN_JSON).is_file():
            return run
    raise UsageError(f"no runs under '{results_root}': run 'torchcts run --device D' first or pass RUN")


class RecordWriter:
    """Appends one JSON line per case, flushed at once: O(1) per record, paths scrubbed."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / CASES_JSONL
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held for the run

    def append(self, record: dict[str, Any]) -> None:
        self._fh.write(scrub(json.dumps(record, sort_keys=True, default=str)) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def read_records(run_dir: Path) -> Iterator[dict[str, Any]]:
    """Every complete record, reruns included (use `final_records` for one per case); a torn last
    line from a killed run is skipped."""
    path = run_dir / CASES_JSONL
    if not path.is_file():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def final_records(run_dir: Path) -> list[dict[str, Any]]:
    """One record per case id: the last one appended wins (reruns, a crash after a case's checks),
    placed where it was appended."""
    last: dict[str, dict[str, Any]] = {}
    for record in read_records(run_dir):
        last.pop(record.get("id", ""), None)
        last[record.get("id", "")] = record
    return list(last.values())
