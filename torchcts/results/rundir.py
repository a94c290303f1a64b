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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from torchcts.results.scrub import scrub_obj
from torchcts.safe_io import open_append, write_atomic

RUN_JSON = "run.json"
CASES_JSONL = "cases.jsonl"
LATEST = "latest"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_results_root(results_root: Path) -> None:
    """--results-dir must be (or become) a folder, and its `latest` a file: say so before a run."""
    from torchcts.errors import UsageError

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


def new_run_dir(results_root: Path) -> Path:
    check_results_root(results_root)
    from torchcts.errors import UsageError

    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    try:
        results_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.ENOSPC, errno.EACCES, errno.EPERM, errno.EDQUOT):
            raise  # the CLI names these (free space, permissions) itself
        raise UsageError(f"--results-dir {results_root.name or results_root} cannot be created "
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


def read_run(run_dir: Path) -> dict[str, Any]:
    """run.json as a mapping; a truncated, garbled or non-object file is the user's data problem."""
    from torchcts.errors import UsageError

    try:
        run = json.loads((run_dir / RUN_JSON).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{run_dir.name}/{RUN_JSON} is not valid JSON ({type(exc).__name__}; truncated or edited): "
                         "restore it from the run's artifacts or rerun") from None
    if not isinstance(run, dict) or not all(isinstance(run.get(k, {}), dict) for k in ("device", "manifest", "selection")):
        raise UsageError(f"{run_dir.name}/{RUN_JSON} is not a TorchCTS run description (not an object, or device/"
                         "manifest/selection of the wrong type): restore it or rerun")
    wrong = _wrong_field(run)
    if wrong:
        raise UsageError(f"{run_dir.name}/{RUN_JSON}: {wrong} has the wrong type (edited or damaged): restore it or rerun")
    return run


def _wrong_field(run: dict[str, Any]) -> str | None:
    """The first field of run.json the commands read whose type is wrong (a crafted or damaged file)."""
    if not isinstance(run.get("torch", {}), dict):
        return "torch"
    fallbacks = run.get("compat_fallbacks", {})
    if not isinstance(fallbacks, (dict, list)) or (isinstance(fallbacks, list)
                                                  and not all(isinstance(f, str) for f in fallbacks)):
        return "compat_fallbacks"
    entries = run.get("manifest", {}).get("expectations", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return "manifest.expectations"
    return None


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
    try:
        name = json.loads((pointer / RUN_JSON).read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError):
        return None
    return _run_named(results_root, name) or pointer


def is_latest_pointer(path: Path) -> bool:
    """Whether `path` is a results folder's `latest` (given as a run, e.g. `results/latest`): a
    link (even a dangling one), a one-line file or a copied folder."""
    return path.name == LATEST and (path.exists() or path.is_symlink())


def resolve_run(ref: str | None, results_root: Path = Path("results")) -> Path:
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


# File-system errors met while appending records (a full or read-only disk), re-raised by the CLI.
WRITE_FAILURES: list[OSError] = []


class RecordWriter:
    """Appends one JSON line per case, flushed at once: O(1) per record, paths scrubbed."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / CASES_JSONL
        self._fh = open_append(run_dir, CASES_JSONL)  # held for the run; never through a planted link

    def append(self, record: dict[str, Any]) -> None:
        try:
            self._fh.write(json.dumps(scrub_obj(record), sort_keys=True, default=str) + "\n")
            self._fh.flush()
        except OSError as exc:  # inside pytest this would read as an internal error: keep it for the CLI
            WRITE_FAILURES.append(exc)
            raise

    def close(self) -> None:
        self._fh.close()


# Record fields the reports read, by the type they need; a crafted or garbled value of another type
# is coerced (never a crash while reporting), see `normalise_record`.
_STR_FIELDS = ("suite", "message", "repro", "repro_script", "signature", "output_tail", "traceback", "signal",
               "kind", "oracle", "op", "dtype")
_NUM_FIELDS = ("duration_s",)
_DICT_FIELDS = ("mismatch", "info", "expectation", "first_failure")
_LIST_FIELDS = ("ops", "requires")


def normalise_record(rec: dict[str, Any]) -> dict[str, Any]:
    """A record whose fields have the types reports use; an unknown status becomes `error` (with the
    recorded one kept), so it fails the run instead of vanishing from the totals."""
    from torchcts.results.statuses import STATUSES

    out = dict(rec)
    status = out.get("status")
    if not isinstance(status, str) or status not in STATUSES:
        out["status"] = "error"
        out["recorded_status"] = str(status)
        out["message"] = f"cases.jsonl holds unknown status {str(status)[:40]!r}, counted as error: {out.get('message', '')}"
    for key in _STR_FIELDS:
        if out.get(key) is not None and not isinstance(out[key], str):
            out[key] = json.dumps(out[key], default=str) if isinstance(out[key], (dict, list)) else str(out[key])
    for key in _NUM_FIELDS:
        v = out.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), -float("inf"))):
            out[key] = None
    for key in _DICT_FIELDS:
        if key in out and not isinstance(out[key], dict):
            out[key] = {"value": str(out[key])}
    for key in _LIST_FIELDS:
        if key in out and not isinstance(out[key], list):
            out[key] = [] if out[key] is None else [str(out[key])]
    return out


def scan_records(run_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """(every readable record, reruns included; one problem per unreadable line).

    Nothing is dropped silently: a line that is not UTF-8, not JSON (a torn last line of a killed
    run, a garbled line), not an object or has no case id is reported by line number.
    """
    path = run_dir / CASES_JSONL
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    if not path.is_file():
        return records, problems
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                problems.append(f"line {n}: not UTF-8 text")
                continue
            except ValueError:
                problems.append(f"line {n}: not JSON (a torn or garbled line)")
                continue
            if not isinstance(rec, dict):
                problems.append(f"line {n}: not a JSON object")
            elif not isinstance(rec.get("id"), str) or not rec["id"]:
                problems.append(f"line {n}: no case id")
            else:
                records.append(normalise_record(rec))
    return records, problems


def read_records(run_dir: Path) -> Iterator[dict[str, Any]]:
    """Every readable record, reruns included (use `final_records` for one per case); unreadable
    lines are counted by `scan_records` and reported by `finalize`."""
    yield from scan_records(run_dir)[0]


def last_per_case(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per case id: the last one appended wins (reruns, a crash after a case's checks),
    placed where it was appended."""
    last: dict[str, dict[str, Any]] = {}
    for record in records:
        last.pop(record["id"], None)
        last[record["id"]] = record
    return list(last.values())


def final_records(run_dir: Path) -> list[dict[str, Any]]:
    return last_per_case(scan_records(run_dir)[0])
