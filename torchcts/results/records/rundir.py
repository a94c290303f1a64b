"""The run folder: `results/<UTC time>-<random>/` with run.json and streamed cases.jsonl (README.md, "Results").

Records are appended one line each and flushed, never rewritten, so a killed run keeps every
finished case. Only one process (the pytest controller) appends, so lines never interleave.
A case may have several records (a rerun by --rerun-failures appends one): the LAST record of an
id supersedes the earlier ones. Totals, reports and comparisons use `final_records`.
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from torchcts import settings
from torchcts.model.record import MAX_DEPTH, CaseRecord, plain
from torchcts.model.run import Run
from torchcts.results.records.jsonl import read_jsonl
from torchcts.results.records.scrub import scrub_obj
from torchcts.safe_io import open_append, write_atomic
from torchcts.untrusted import MAX_LINE, NotRegular, Unreadable, check_depth, loads, read_bounded

RUN_JSON = "run.json"
CASES_JSONL = "cases.jsonl"
LATEST = "latest"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_results_root(results_root: Path) -> None:
    """--results-dir must be (or become) a folder, and its `latest` a file: say so before a run."""
    from torchcts.errors import UsageError

    inside_git = [p for p in {os.path.abspath(results_root), os.path.realpath(results_root)}
                  if ".git" in (part.lower() for part in Path(p).parts)]
    if inside_git:  # run folders there break the repository (refs/heads/<run> is no ref: git log, gc fail)
        raise UsageError(f"--results-dir {_shown(results_root)} is inside a .git folder, which belongs to git: "
                         "pass a results folder outside it (default: results/)")
    for parent in (results_root, *results_root.parents):
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"--results-dir {results_root} cannot be created: {parent} is a file, not a folder; "
                             "pass another --results-dir")
        if parent.exists():
            break
    pointer = results_root / LATEST
    if pointer.is_dir() and not pointer.is_symlink():
        raise UsageError(f"{pointer} is a folder, but TorchCTS keeps a link to (or the name of) the newest run "
                         "there: move the folder away or pass another --results-dir")


def _shown(path: Path) -> str:
    """A folder as a refusal names it: as given when relative, else from its `.git` part on (never
    the absolute path, which names the user's home and host)."""
    if not path.is_absolute():
        return str(path)
    parts = path.parts
    lowered = [p.lower() for p in parts]
    return str(Path(*parts[lowered.index(".git"):])) if ".git" in lowered else path.name


def new_run_dir(results_root: Path) -> Path:
    check_results_root(results_root)
    from torchcts.errors import UsageError

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    try:
        results_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EPERM, errno.EDQUOT):
            raise  # the CLI names these (free space, permissions) itself
        raise UsageError(f"--results-dir {results_root} cannot be created "
                         f"({exc.strerror or type(exc).__name__}): pass another --results-dir") from None
    while True:
        path = results_root / f"{stamp}-{secrets.token_hex(3)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path.parent, path.name, json.dumps(scrub_obj(data), indent=2, sort_keys=True, default=str) + "\n")


def write_run(run_dir: Path, run: Run) -> None:
    """run.json, whole and atomically, scrubbed: the run spec when the run opens (engine/spec.py:
    RunSpec, a Run), then with what finalize, reruns, merge and coverage add."""
    write_json_atomic(run_dir / RUN_JSON, run.to_json())


def read_run(run_dir: Path) -> Run:
    """run.json typed (model/run.py: Run.from_json, then the claims' own checks): the one reader of an
    untrusted one; a truncated, garbled or non-object file, a field of the wrong type or claims the
    manifest's validation refuses are the user's data problem."""
    from torchcts.errors import UsageError
    from torchcts.manifest.validate import check_run_claims

    try:
        run = loads(read_bounded(run_dir / RUN_JSON))
    except NotRegular:
        raise
    except (UnicodeDecodeError, ValueError) as exc:
        why = exc.msg if isinstance(exc, Unreadable) else type(exc).__name__
        raise UsageError(f"{run_dir.name}/{RUN_JSON} is not valid JSON ({why}; truncated or edited): "
                         "restore it from the run's artifacts or rerun") from None
    where = f"{run_dir.name}/{RUN_JSON}"
    return check_run_claims(Run.from_json(run, where), where)


def point_latest(results_root: Path, run_dir: Path) -> None:
    """`results/latest` is a relative symlink to the newest run, so `results/latest/report.html` opens;
    where the file system refuses symlinks (Windows without the privilege, some mounts) it is a
    one-line file naming the run. Replaced atomically either way; `latest_run` reads both."""
    pointer = results_root / LATEST
    tmp = results_root / f".{LATEST}.{secrets.token_hex(3)}"
    try:
        os.symlink(run_dir.name, tmp, target_is_directory=True)
    except (OSError, NotImplementedError):
        write_atomic(results_root, tmp.name, run_dir.name + "\n", fsync=False)  # then replaces the link or file
    try:
        os.replace(tmp, pointer)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def latest_run(results_root: Path) -> Path | None:
    """The run `results_root/latest` points to, as `results_root/<name>` (symlink or one-line file);
    None when there is none, or it names anything but a run folder directly under results_root.
    The one reader of `latest`: every command, script and test resolves it here."""
    pointer = results_root / LATEST
    if pointer.is_dir() and not pointer.is_symlink():
        return _copied_latest(results_root, pointer)
    try:
        raw = os.readlink(pointer) if pointer.is_symlink() else pointer.read_bytes().decode("utf-8", "replace")
    except OSError:  # absent, or a folder (check_results_root names that problem)
        return None
    return _run_named(results_root, raw.strip())


def _run_named(results_root: Path, name: Any) -> Path | None:
    """`results_root/name` when `name` is a bare folder name (no path, not `latest`) holding run.json."""
    if isinstance(name, str) and name and Path(name).name == name and name not in (".", "..", LATEST) \
            and (results_root / name / RUN_JSON).is_file():
        return results_root / name
    return None


def _copied_latest(results_root: Path, pointer: Path) -> Path | None:
    """`latest` as a folder: an artifact upload that followed the link (GitHub's upload-artifact
    does) copied the run into it. The run folder of the same name when it came along, else the copy."""
    from torchcts.errors import UsageError

    try:
        name = read_run(pointer).name
    except (OSError, UsageError):
        return None
    return _run_named(results_root, name) or pointer


def is_latest_pointer(path: Path) -> bool:
    """Whether `path` is a results folder's `latest` (given as a run, e.g. `results/latest`): a
    link (even a dangling one), a one-line file or a copied folder."""
    return path.name == LATEST and (path.exists() or path.is_symlink())


def resolve_run(ref: str | None, results_root: Path = Path(settings.RESULTS_DIR)) -> Path:
    """A run given as a run folder, `results/latest` (the link or the file), a run name under
    results/, a results folder (its latest run), or None for the latest under results_root.
    `latest` always resolves to the run's own folder, so its name is the run's."""
    from torchcts.errors import UsageError

    if ref:
        for candidate in (Path(ref), results_root / ref):
            if is_latest_pointer(candidate):
                run = latest_run(candidate.parent)
                if run is not None:
                    return run
            elif (candidate / RUN_JSON).is_file():
                return candidate
        if is_latest_pointer(Path(ref) / LATEST):  # a results folder
            return resolve_run(None, Path(ref))
        raise UsageError(f"no run at '{ref}': pass a run folder (containing run.json), a run name under "
                         f"'{results_root}', 'results/latest', or a results folder (its latest run)")
    run = latest_run(results_root)
    if run is not None:
        return run
    raise UsageError(f"no runs under '{results_root}': run 'torchcts run --device D' first or pass RUN")


class RecordWriter:
    """Appends one JSON line per case, flushed at once: O(1) per record, paths scrubbed."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / CASES_JSONL
        self._fh = open_append(run_dir, CASES_JSONL)  # held for the run; never through a planted link
        # The last file-system error met appending (a full or read-only disk). Inside pytest the
        # raised OSError reads as an internal error: whoever ran pytest re-raises this one (exit 2).
        self.failure: OSError | None = None

    def append(self, record: CaseRecord) -> None:
        try:
            self._fh.write(_line(record) + "\n")
            self._fh.flush()
        except OSError as exc:  # inside pytest this would read as an internal error: keep it for the CLI
            self.failure = exc
            raise

    def close(self) -> None:
        self._fh.close()


def _line(record: CaseRecord) -> str:
    """The record's cases.jsonl line, scrubbed; what JSON cannot hold as it is (nesting past
    records.MAX_DEPTH) is written as `CaseRecord.to_text` sends it: never a lost record."""
    data = record.to_json()
    try:
        check_depth(data, MAX_DEPTH)  # the readers (untrusted.loads) refuse deeper lines
        line = json.dumps(scrub_obj(data), sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        line = json.dumps(scrub_obj(plain(data)), sort_keys=True)
    if len(line) < MAX_LINE:  # ASCII (json.dumps escapes the rest): its length is its bytes
        return line
    # The readers take a longer line as unreadable (untrusted.read_lines): keep the verdict and its
    # first words, never a record no report can read.
    cut = min(2000, MAX_LINE // 64)  # per text field: the cut line stays far inside the bound
    kept = {k: (v[:MAX_LINE // 2 if k == "id" else cut] if isinstance(v, str) else v) for k, v in data.items()
            if isinstance(v, (str, int, float, bool)) or v is None}
    kept["message"] = (f"[record cut to its verdict: {len(line)} bytes, past the {MAX_LINE}-byte line limit] "
                       + str(data.get("message") or "")[:cut])
    return json.dumps(scrub_obj(kept), sort_keys=True, default=str)


def iter_records(run_dir: Path, problems: list[str]) -> Iterator[CaseRecord]:
    """Every readable record, reruns included, one at a time as cases.jsonl is read (one line in
    memory, whatever the file's size); one problem per unreadable line appended to `problems`.

    Nothing is dropped silently: a line that is not UTF-8, not JSON (a torn last line of a killed
    run, a garbled line), longer than untrusted.MAX_LINE, not an object or without a case id is
    reported by line number; a readable one is typed by `CaseRecord.from_json` (which coerces what
    it cannot trust). A FIFO or a device as cases.jsonl is NotRegular (exit 2), never opened to block.
    """
    path = run_dir / CASES_JSONL
    if not path.exists():  # absent (or a dangling link): no records yet
        return
    for line in read_jsonl(path):
        rec = line.value
        if line.problem:
            problems.append(f"line {line.number}: {line.problem}")
        elif not isinstance(rec, dict):
            problems.append(f"line {line.number}: not a JSON object")
        elif not isinstance(rec.get("id"), str) or not rec["id"]:
            problems.append(f"line {line.number}: no case id")
        else:
            yield CaseRecord.from_json(rec)


def scan_records(run_dir: Path) -> tuple[list[CaseRecord], list[str]]:
    """(every readable record, reruns included; one problem per unreadable line): `iter_records` whole."""
    problems: list[str] = []
    return list(iter_records(run_dir, problems)), problems


def read_records(run_dir: Path) -> Iterator[CaseRecord]:
    """Every readable record, reruns included (use `final_records` for one per case); unreadable
    lines are counted by `scan_records` and reported by `finalize`."""
    yield from iter_records(run_dir, [])


def last_per_case(records: Iterable[CaseRecord]) -> list[CaseRecord]:
    """One record per case id: the last one appended wins (reruns, a crash after a case's checks),
    placed where it was appended."""
    last: dict[str, CaseRecord] = {}
    for record in records:
        last.pop(record.id, None)
        last[record.id] = record
    return list(last.values())


def final_records(run_dir: Path) -> list[CaseRecord]:
    return last_per_case(iter_records(run_dir, []))
