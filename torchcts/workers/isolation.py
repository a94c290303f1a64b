"""Crash and hang isolation on pytest-xdist workers (docs/internals.md, "How a run flows").

Each worker keeps a log file in a scratch folder outside the run folder. Before every case it
appends a marker line naming the case and its start time; faulthandler writes a fatal signal's
traceback there, and the timeout watchdog writes a timeout marker and every thread's stack there
before it ends the worker. When xdist reports "worker crashed while running X", the controller
reads that log: the last marker names the case and its start (so the next cases are not blamed),
a timeout marker after it makes the status `timeout` instead of `crashed`, the worker's exit code
or signal comes from its process, and the log's tail becomes the record's output tail. A case notes
each sample it turns to in a small file beside the log (`sample_noter`, overwritten each time, so
nothing grows): the note of the case that died names the crash's sample.

What C code writes to fd 2 (a driver's assertion before it aborts) goes, under pytest's fd capture,
to a temporary file that dies with the worker: the worker points that capture at a named file beside
its log (`stderr_path`, emptied by pytest after every phase), so a dead worker's stderr since its
last phase is kept in the crash record. A process marker (FRESH_MARK) starts the log and follows
every forked child's death (workers/case_process.py): the cases between two markers ran in one
process, which is what crash attribution reruns (workers/attribution.py).
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from torchcts import settings
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.process import exit_fields
from torchcts.results.triage.crash_frames import reference_death

CASE_MARK = "@@torchcts-case "
TIMEOUT_MARK = "@@torchcts-timeout "
FRESH_MARK = "@@torchcts-fresh-process"  # the cases after it run in a new process
SAMPLE_TEXT = 500  # characters of a noted sample's text
RETIRED_MARK = "@@torchcts-retired"  # the worker left on purpose: its device was poisoned (workers/canary.py)
STDERR_HEADER = "--- stderr of the dead process (fd 2, last lines) ---"
STDERR_LINES = 20
TIMEOUT_EXIT = 86  # exit code of a worker ended by the watchdog (the marker is what counts)
TAIL_LINES = 40


def log_path(work_dir: Path, worker_id: str) -> Path:
    return work_dir / f"{worker_id}.log"


def stderr_path(work_dir: Path, worker_id: str) -> Path:
    """Where a worker's captured fd 2 lives (the crashed phase's stderr survives the worker)."""
    return work_dir / f"{worker_id}.stderr"


def sample_path(work_dir: Path, worker_id: str) -> Path:
    return work_dir / f"{worker_id}.sample.json"


def sample_noter(work_dir: Path, worker_id: str, case_id: str) -> Callable[[dict[str, Any]], None]:
    """What a case's context calls with each sample it turns to (cases/context.py: on_sample): the
    worker's sample file, overwritten and closed before the device's call, so the record of a
    process that dies in it names that sample (an explore case's crash named none: pytorch_ocl's
    softmax of an empty tensor had to be found by hand). Forked children write the same file. A
    note that cannot be written is no case's failure: the record then names no sample."""
    path = sample_path(work_dir, worker_id)

    def note(sample: dict[str, Any]) -> None:
        shown = {k: (v[:SAMPLE_TEXT] if isinstance(v, str) else v) for k, v in sample.items()}
        try:
            path.write_text(json.dumps({"case": case_id, **shown}, default=str), encoding="utf-8")
        except OSError:
            pass
    return note


def noted_sample(work_dir: Path | None, worker_id: str, case_id: str) -> dict[str, Any] | None:
    """The sample the case `case_id` last noted on this worker (sample_noter), if the note is its."""
    if work_dir is None:
        return None
    try:
        noted = json.loads(sample_path(work_dir, worker_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(noted, dict) or noted.pop("case", None) != case_id:
        return None
    return noted


def mark_fresh_process(log: Path) -> None:
    """The next cases in this log run in a new process (a forked child after the last one died)."""
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"\n{FRESH_MARK}\n")


class WorkerWatch:
    """Worker side: per-worker log, a marker per case, and a watchdog that ends a hung worker."""

    def __init__(self, work_dir: Path, worker_id: str, retiring: Callable[[], bool] = lambda: False) -> None:
        self.log = open(log_path(work_dir, worker_id), "a", encoding="utf-8")  # noqa: SIM115
        self.work_dir, self.worker_id = work_dir, worker_id
        self.stderr = stderr_path(work_dir, worker_id)
        self.retiring = retiring  # the device was found poisoned (workers/canary.py): leave before the next case

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # After pytest's own faulthandler setup, which would send the traceback to the terminal.
        faulthandler.enable(file=self.log, all_threads=False)  # the crashing thread: the case's stack
        self.log.write(f"\n{FRESH_MARK}\n")
        self.log.flush()
        keep_captured_stderr(session.config, self.stderr)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self.retiring():  # before the case's marker: the controller gives it to a fresh worker
            from torchcts.workers.canary import RETIRED_EXIT

            self.log.write(f"\n{RETIRED_MARK}\n")
            self.log.flush()
            os._exit(RETIRED_EXIT)
        with contextlib.suppress(OSError):  # no earlier case's note (a note names its case, too)
            sample_path(self.work_dir, self.worker_id).unlink(missing_ok=True)
        self.log.write(f"\n{CASE_MARK}{time.time():.6f} {nodeid}\n")
        self.log.flush()

    @pytest.hookimpl(optionalhook=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> bool:
        """Replaces pytest-timeout's timer: a thread that records the timeout, then ends the worker."""
        timer = threading.Timer(settings.timeout, self._expire, (item, settings.timeout))
        timer.daemon = True

        def cancel() -> None:
            timer.cancel()

        item.cancel_timeout = cancel  # type: ignore[attr-defined] - pytest-timeout's cancel calls it
        timer.start()
        return True

    def _expire(self, item: pytest.Item, seconds: float) -> None:
        forked = False
        try:
            self.log.write(f"{TIMEOUT_MARK}{seconds}\n")
            capman = item.config.pluginmanager.getplugin("capturemanager")
            if capman is not None:
                capman.suspend_global_capture(item)
                out, err = capman.read_global_capture()
                capman.resume_global_capture()
                for name, text in (("stdout", out), ("stderr", err)):
                    if text:
                        self.log.write(f"--- captured {name} ---\n{text}\n")
            self.log.flush()
            # A case in a forked child (workers/case_process.py): the child is made to write its own
            # stack and die; the worker records the timeout and goes on.
            forked = _abort_running_child()
            if forked:
                return
            frame = sys._current_frames().get(threading.main_thread().ident)
            if frame is not None:  # innermost call last, so the tail shows where the case hung
                self.log.write(f"--- where the case was after {seconds:g} s ---\n")
                self.log.write("".join(traceback.format_stack(frame)))
            self.log.flush()
        finally:
            if not forked:
                os._exit(TIMEOUT_EXIT)


def keep_captured_stderr(config: pytest.Config, path: Path) -> None:
    """Point pytest's fd-2 capture at `path` instead of its unnamed temporary file: the same file
    descriptor, so pytest reads and empties it after each phase as before, but what a dying process
    wrote last (C code's assertion on fd 2) can be read after it died. Without fd capture (`-s`)
    fd 2 is the terminal, and nothing changes."""
    capman = config.pluginmanager.getplugin("capturemanager")
    err = getattr(getattr(capman, "_global_capturing", None), "err", None)
    tmpfile = getattr(err, "tmpfile", None)
    if getattr(err, "targetfd", None) != 2 or tmpfile is None:
        return
    try:
        fd = tmpfile.fileno()
        named = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    except (OSError, ValueError):
        return
    try:
        live = os.path.sameopenfile(2, fd)  # capture is running: fd 2 is the temporary file now
        os.dup2(named, fd)
        if live:
            os.dup2(named, 2)
    except OSError:
        pass
    finally:
        os.close(named)


def read_stderr(path: Path | None, lines: int = STDERR_LINES) -> str:
    """The last lines a dead process wrote to its captured fd 2, or ''."""
    if path is None or not path.is_file():
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 64 * 1024))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip("\n").splitlines()[-lines:])


def with_stderr(tail: str, stderr: str) -> str:
    """A crash record's output tail: the log's (faulthandler), then the dead process's stderr."""
    if not stderr:
        return tail
    return f"{tail}\n{STDERR_HEADER}\n{stderr}".strip("\n")


def earlier_cases(text: str, nodeid: str | None, count: int) -> list[str]:
    """Node ids of the last `count` cases the same process ran before `nodeid` (its last start
    marker; `None`: before the log's end), oldest first: the suspects of a crash that may have landed
    in the next case (workers/attribution.py)."""
    begin = len(text)
    if nodeid is not None:
        start_at = text.rfind(f" {nodeid}\n")
        if start_at < 0:  # the case never started in this log: no case of it is a suspect
            return []
        begin = text.rfind(CASE_MARK, 0, start_at + 1)
    before = text[:max(begin, 0)]
    fresh = before.rfind(FRESH_MARK)
    ids = [line[len(CASE_MARK):].split(" ", 1)[-1] for line in before[fresh + 1 if fresh >= 0 else 0:].splitlines()
           if line.startswith(CASE_MARK)]
    return ids[-count:] if count > 0 else []


_running_child: Callable[[], None] | None = None  # how to end the forked child running a case now
_child_lock = threading.Lock()


def running_child(abort: Callable[[], None] | None) -> None:
    """workers/case_process.py: a forked child runs the current case (`abort` ends it), or none does."""
    global _running_child
    with _child_lock:
        _running_child = abort


def _abort_running_child() -> bool:
    """The watchdog's call: ends the forked child running the timed-out case; False when the case
    runs in the worker itself (the watchdog then ends the worker)."""
    with _child_lock:
        abort = _running_child
    if abort is None:
        return False
    abort()
    return True


def parse_log(text: str, nodeid: str) -> dict[str, Any]:
    """What the log says about the last run of `nodeid`: start time, timed out, output tail."""
    start_at = text.rfind(f" {nodeid}\n")
    begin = text.rfind(CASE_MARK, 0, start_at + 1) if start_at >= 0 else -1
    if begin < 0:  # the case never started on this worker: the worker died before or between cases
        return {"start": None, "timeout": None, "tail": _tail(text), "started": False}
    header, _, body = text[begin:].partition("\n")
    body = body.split(CASE_MARK, 1)[0]
    try:
        start = float(header[len(CASE_MARK):].split(" ", 1)[0])
    except ValueError:
        start = None
    timeout = None
    if TIMEOUT_MARK in body:
        value = body.split(TIMEOUT_MARK, 1)[1].split("\n", 1)[0]
        try:
            timeout = float(value)
        except ValueError:
            timeout = 0.0
    tail = _tail(body.replace(TIMEOUT_MARK, "timeout after "))
    return {"start": start, "timeout": timeout, "tail": tail, "started": True, "reference": reference_death(body)}


# Frames of the harness itself (pytest, pluggy, xdist, execnet) say nothing about the case.
_HARNESS_FRAMES = re.compile(r'^\s*File "[^"]*[/\\](_pytest|pluggy|xdist|execnet)[/\\]|^\s*File "<string>"')


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    kept: list[str] = []
    skip_source = False
    for line in text.strip("\n").splitlines():
        if _HARNESS_FRAMES.match(line):
            skip_source = True  # traceback.format_stack puts the source line under the frame
            continue
        if skip_source and line.startswith("    ") and not line.lstrip().startswith("File "):
            continue
        skip_source = False
        kept.append(line)
    return "\n".join(kept[-lines:])


def worker_exit(worker: Any, wait_s: float = 5.0) -> dict[str, Any]:
    """The dead worker's exit code or signal, from its process when xdist started it locally, as
    CaseRecord fields (`signal`, `exit_code`)."""
    popen = getattr(getattr(getattr(worker, "gateway", None), "_io", None), "popen", None)
    if popen is None:
        return {}
    try:
        code = popen.wait(timeout=wait_s)
    except Exception:  # noqa: BLE001 - still running or not ours: nothing to say
        return {}
    return {} if code is None else exit_fields(code)


def signal_quietly(pid: int, signum: int) -> None:
    """Send a signal to a process that may already be gone."""
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def read_log(work_dir: Path | None, worker_id: str) -> str | None:
    """A worker's log, read once per death by whoever handles it (None without isolation or a log)."""
    if work_dir is None:
        return None
    try:
        return log_path(work_dir, worker_id).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def retired(text: str | None, exit_fields: dict[str, Any]) -> bool:
    """The worker left on purpose before its next case, its device poisoned (workers/canary.py): the
    log ends with RETIRED_MARK, or, the log unreadable, the process exited with RETIRED_EXIT. The
    caller asks only for a case that never started: a case's own exit code 87 is its crash."""
    from torchcts.workers.canary import RETIRED_EXIT

    if text and text.strip():
        return text.rstrip().endswith(RETIRED_MARK)
    return exit_fields.get("exit_code") == RETIRED_EXIT and not exit_fields.get("signal")


def crash_record(case: Case, log: str | None, work_dir: Path | None, worker_id: str, nodeid: str,
                 exit_fields: dict[str, Any]) -> tuple[bool, CaseRecord]:
    """(whether the case had started on the dead worker, its `crashed` or `timeout` record with the
    evidence: signal or exit code, duration since its start marker, the log's tail). `log` is the
    worker's log as read_log read it: one read per death, also for attribution's suspects."""
    return _death_record(case, log, work_dir, worker_id, nodeid, exit_fields,
                         who=f"worker {worker_id}", after="it was replaced", ended=f"worker {worker_id} was replaced")


def child_death_record(case: Case, work_dir: Path | None, worker_id: str, nodeid: str,
                       exit_fields: dict[str, Any]) -> CaseRecord:
    """The record of a case whose forked child (workers/case_process.py) died: crashed, or timeout
    when the watchdog ended it; the same evidence as a worker's death, from the same log."""
    who = f"its process (forked from worker {worker_id})"
    return _death_record(case, read_log(work_dir, worker_id), work_dir, worker_id, nodeid, exit_fields, who=who,
                         after="the worker went on", ended=f"{who} was ended; the worker went on")[1]


def _death_record(case: Case, log: str | None, work_dir: Path | None, worker_id: str, nodeid: str,
                  exit_fields: dict[str, Any], *, who: str, after: str, ended: str) -> tuple[bool, CaseRecord]:
    info: dict[str, Any] = {"start": None, "timeout": None, "tail": "", "started": True}
    if log is not None:
        info = parse_log(log, nodeid)
    record = CaseRecord.from_case(case, worker=worker_id, **exit_fields)
    if info["start"] is not None:  # when the case began, by the worker's start marker (a timeline's crashes)
        record.started_at = round(info["start"], 3)
        record.duration_s = round(time.time() - info["start"], 3)
    tail = with_stderr(info["tail"], read_stderr(stderr_path(work_dir, worker_id) if work_dir else None))
    if tail:
        record.output_tail = tail
    noted = noted_sample(work_dir, worker_id, case.id) if info["started"] else None
    if noted:  # the sample whose call it died in, as a failure names its own
        record.info = noted
    if info["timeout"] is not None:
        record.status, record.timeout_s = Status.TIMEOUT, info["timeout"]
        record.message = f"exceeded the {info['timeout']:g} s timeout; {ended}"
    else:
        how = record.signal or (f"exit code {record.exit_code}" if record.exit_code is not None else "unknown cause")
        record.status = Status.CRASHED
        record.message = f"{who} died ({how}) while running this case; {after}"
        if info.get("reference"):  # in CPU's reference: CPU's death only if it dies there again alone
            record.message = (f"{who} died ({how}) in TorchCTS's CPU reference ({info['reference']}); {after}; "
                              "rerun alone to tell CPU's death from the device's (workers/attribution.py)")
            record.attribution = {"reference": info["reference"]}
    return info["started"], record


def wants_xdist(user_args: list[str]) -> bool:
    """False when the user already chose the worker count (`-n 0` debugs in-process) or disabled xdist."""
    return not any(a.startswith(("-n", "--numprocesses")) or a == "no:xdist" for a in user_args)


CASES_PER_WORKER = 64  # a worker's start-up (importing torch) is worth it from about this many cases


def default_workers(planned: int) -> int:
    """One worker per core, but no more than one per CASES_PER_WORKER cases (start-up is seconds)."""
    return max(1, min(os.cpu_count() or 1, -(-planned // CASES_PER_WORKER)))


def pytest_extra_args(user_args: list[str], isolation: bool, timeout: float | None, planned: int) -> list[str]:
    """Worker processes (see default_workers; TORCHCTS_WORKERS overrides) that xdist replaces when they die,
    and the per-case timeout; the user's own `-n`/`--timeout` after `--` win."""
    args: list[str] = []
    if isolation and _user_workers(user_args) and xdist_available() and not _given(user_args, "--max-worker-restart"):
        # Every case may crash its worker: xdist's own limit (4 per worker) ended a crash-heavy run with
        # `-- -n N` after a few crashes, the rest not_run.
        args += [f"--max-worker-restart={planned + 16}"]
    if isolation and wants_xdist(user_args) and xdist_available():
        chosen = settings.current().workers
        args += ["-n", str(default_workers(planned) if chosen is None else chosen), f"--max-worker-restart={planned + 16}"]
        if not any(a == "-d" or a.startswith("--dist") for a in user_args):
            # Each worker gets a contiguous share (an op's kinds stay together: samples are made
            # once) and an idle worker takes half of another's queue. xdist's `load` sends chunks of
            # thousands of cases: a worker held up by a slow case kept 1,885 queued cases while the
            # other finished, 52 s of a 9-minute run on 2 cores.
            args += ["--dist=worksteal"]
    if timeout and not any(a.startswith("--timeout") for a in user_args):
        args += [f"--timeout={timeout:g}"]
    return args


def _given(user_args: list[str], flag: str) -> bool:
    return any(a == flag or a.startswith(f"{flag}=") for a in user_args)


def _user_workers(user_args: list[str]) -> bool:
    """The user chose xdist workers (`-n N`, N not 0) after `--`."""
    for i, a in enumerate(user_args):
        if a in ("-n", "--numprocesses"):
            value = user_args[i + 1] if i + 1 < len(user_args) else ""
        elif a.startswith("--numprocesses="):
            value = a.partition("=")[2]
        elif a.startswith("-n"):
            value = a[2:]
        else:
            continue
        return value.strip() not in ("0", "")
    return False


def tolerate_dead_workers() -> None:
    """pytest-xdist (3.8) can send a steal request or more cases to a worker a crash has just
    killed: the OSError ("cannot send (already closed?)") ended the whole run as an INTERNALERROR,
    the rest of its cases `not_run` (505 of level 2's 1,208 after 76 crashes, measured on the sim).
    The dead worker's own down event follows and hands its queue back to the scheduler (the steal
    it was asked for is forgotten with it), so a send that cannot reach a worker that is gone is
    dropped, as xdist already does for its shutdown command; any other send error still raises."""
    from xdist.workermanage import WorkerController

    if getattr(WorkerController, "_torchcts_tolerant", False):
        return
    for name in ("send_steal", "send_runtest_some", "send_runtest_all"):
        original = getattr(WorkerController, name)

        def tolerant(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> None:
            try:
                _original(self, *args, **kwargs)
            except OSError:
                if not _gone(self):
                    raise

        setattr(WorkerController, name, tolerant)
    WorkerController._torchcts_tolerant = True  # type: ignore[attr-defined]


def _gone(worker: Any) -> bool:
    """The worker's channel is closed or its local process has exited."""
    channel = getattr(worker, "channel", None)
    if channel is not None and channel.isclosed():
        return True
    popen = getattr(getattr(getattr(worker, "gateway", None), "_io", None), "popen", None)
    return popen is not None and popen.poll() is not None


def xdist_available() -> bool:
    try:
        import xdist  # noqa: F401
    except ImportError:
        return False
    return True
