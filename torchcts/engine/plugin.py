"""The pytest plugin: plan.jsonl becomes pytest items; reports become streamed case records.

pytest is the execution engine, so `-k`, `-x`, `--lf`, node ids, JUnit XML and pytest-xdist work
as backend engineers expect. Workers run cases and attach the record to the report's
user_properties; the controller (the only writer) appends it to cases.jsonl.
"""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from torchcts import compat
from torchcts.cases.model import Case, NotApplicable, Pending
from torchcts.engine.lean import skip_exit_gc
from torchcts.engine.probe import CaseProbe, release_memory, worker_name
from torchcts.engine.progress import ProgressPlugin
from torchcts.engine.spec import RunSpec
from torchcts.errors import first_line
from torchcts.oracle.mismatch import OracleMismatch
from torchcts.results.plan import read_plan
from torchcts.results.records import base_record, record_repro, skip_record
from torchcts.results.rundir import RecordWriter, read_run
from torchcts.results.statuses import FAILURES

COLLECT_FILE = "torchcts"
RECORD_KEY = "torchcts_record"
_STATE = pytest.StashKey["RunState"]()


class RunState:
    """Per-process state of a run: its typed spec (run.json) and, lazily, the plan and case context.

    Every process of a run reads the same run.json: the controller right after writing it, each
    xdist worker and rerun session at start. Only `--manifest` differs: run.json keeps it scrubbed,
    and repro lines on the terminal must run as printed, so the live one is handed in."""

    def __init__(self, run_dir: Path, manifest_arg: str | None = None) -> None:
        self.run_dir = run_dir
        self.run = read_run(run_dir)  # run.json as written, for results/ code that reads its keys
        self.spec = RunSpec.from_json(self.run)
        if manifest_arg:
            self.spec.manifest_arg = manifest_arg
        self._ctx_parts: tuple[Any, Any] | None = None
        self._plan: dict[str, Case] | None = None
        self._ledger: Any = None  # results.ledger.RunLedger, built on the first record
        self.setup_fallbacks: set[str] = set()
        self.worker = "main"  # xdist's worker id in a worker (engine/probe.py), set by pytest_configure
        self.threads: int | None = None  # torch's threads in this worker (engine/threads.py), None: as is

    def repro(self, record: dict[str, Any]) -> str:
        return record_repro(record, self.run, self.spec.manifest_arg)

    def plan(self) -> dict[str, Case]:
        """The planned cases by id, read once per process (collection, the Recorder, its annotator)."""
        if self._plan is None:
            self._plan = {c.id: c for c in read_plan(self.run_dir)}
        return self._plan

    @property
    def device_name(self) -> str:
        return self.spec.device_type

    @property
    def strict(self) -> bool:
        return self.spec.strict_expectations

    def ledger_status(self, record: dict[str, Any], case: Case) -> dict[str, Any]:
        """The record as the ledger judges it (the controller's Recorder does the same, authoritatively):
        a worker needs it so that an expected failure does not count towards its own `-x`."""
        if self._ledger is None:
            from torchcts.results.ledger import RunLedger

            self._ledger = RunLedger(self.run)
        if not self._ledger.entries:
            return record
        op = case.params.get("op")
        return self._ledger({**record, **({"op": str(op)} if op else {})})

    def context_parts(self) -> tuple[Any, Any]:
        """(torch.device, Manifest), built once per worker after importing the backend."""
        if self._ctx_parts is None:
            import torch

            from torchcts.backends.devices import import_backend
            from torchcts.engine import threads
            threads.apply(self.threads)  # before the backend or any case starts a parallel region
            manifest = self.spec.manifest
            with compat.watch_fallbacks() as setup:  # e.g. how a Python backend registered
                import_backend(manifest.backend_import)
            self._ctx_parts = (torch.device(self.device_name), manifest)
            self.setup_fallbacks = setup
        return self._ctx_parts


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchcts")
    group.addoption("--torchcts-run-dir", default=None, help="run folder written by 'torchcts run'")
    group.addoption("--torchcts-work-dir", default=None, help="scratch folder for worker logs (isolation)")
    group.addoption("--torchcts-attempt", type=int, default=1,
                    help="which attempt this session records (engine/rerun.py: 2 and up); engine/session.py "
                         "reads it to build the session's Recorder")
    group.addoption("--torchcts-manifest-arg", default=None,
                    help="the run's --manifest as given, for workers' repro lines (run.json keeps it scrubbed)")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """A worker reads the run's state; the controller (the only process with -n 0) was handed its
    Recorder by whoever called pytest.main (engine/session.py) and shares its state."""
    run_dir = config.getoption("--torchcts-run-dir")
    if not run_dir:
        return
    _report_from_rootdir(config)
    skip_exit_gc(config)  # engine/lean.py: ~1 s of CPU per worker at exit
    if hasattr(config, "workerinput"):
        state = RunState(Path(run_dir), config.getoption("--torchcts-manifest-arg"))
        _configure_worker(config, state)
    else:
        recorder = recorder_of(config)
        if recorder is None:
            raise pytest.UsageError("--torchcts-run-dir: a run's cases are recorded by its controller; start it "
                                    "with 'torchcts run' (engine/session.py hands pytest the Recorder)")
        state = recorder.state
    state.worker = worker_name(config)
    config.stash[_STATE] = state


def _configure_worker(config: pytest.Config, state: RunState) -> None:
    from torchcts.engine import threads

    state.threads = threads.worker_threads(config.workerinput.get("workercount"))
    threads.export(state.threads)  # before torch is imported: cores // workers, unless the user chose
    work_dir = config.getoption("--torchcts-work-dir")
    if work_dir:
        from torchcts.engine.isolation import WorkerWatch

        config.pluginmanager.register(WorkerWatch(Path(work_dir), config.workerinput["workerid"]))


def recorder_of(config: pytest.Config) -> Recorder | None:
    """The Recorder handed to pytest.main (the controller's; workers have none)."""
    return next((p for p in config.pluginmanager.get_plugins() if isinstance(p, Recorder)), None)


def _report_from_rootdir(config: pytest.Config) -> None:
    """Node ids print as `torchcts::<case id>` wherever `torchcts run` was started: pytest writes them
    relative to its invocation folder, which shows TorchCTS's own install path (`../../lib/...`).
    Only this run's config and terminal reporter change; the invocation folder stays the user's."""
    config.cwd_relative_nodeid = lambda nodeid: nodeid  # type: ignore[method-assign]


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if _state(session.config) is not None and reporter is not None and hasattr(reporter, "startpath"):
        reporter.startpath = session.config.rootpath  # the progress line's file name: `torchcts`


# Header lines naming TorchCTS's internal folders (rootdir is the collect folder; the cache lives in
# the results folder, which the scorecard names): every run would print them.
_INTERNAL_HEADER = ("rootdir:", "configfile:", "cachedir:")


@pytest.hookimpl(hookwrapper=True)
def pytest_report_header(config: pytest.Config):  # noqa: ANN201
    outcome = yield
    if _state(config) is None:
        return
    kept = []
    for lines in outcome.get_result():
        lines = [lines] if isinstance(lines, str) else list(lines or [])
        kept.append([line for line in lines if not line.startswith(_INTERNAL_HEADER)])
    outcome.force_result(kept)


def _state(config: pytest.Config) -> RunState | None:
    return config.stash.get(_STATE, None)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == COLLECT_FILE and _state(parent.config) is not None:
        return CaseFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Import torch and the backend before the first case, so no case's time limit pays for it."""
    state = _state(session.config)
    if state is not None and session.items:
        try:
            state.context_parts()
            import torch

            torch.testing.assert_close(torch.zeros(1), torch.zeros(1))  # its lazy imports take seconds
        except Exception:  # noqa: BLE001 - the first case reports it as its error
            pass


DESELECTED_KEY = "torchcts_deselected"
DESELECTED_REASON = "deselected by pytest (-k, -m, --deselect or --lf)"


def pytest_deselected(items: list[pytest.Item]) -> None:
    """pytest's own selection (-k, -m, --lf) is the user's: those cases are `filtered`, not
    `not_run`. Called where collection happens: a worker hands the ids to the controller through
    xdist's workeroutput (Recorder.pytest_testnodedown); with -n 0 the Recorder takes them here."""
    ids = [item.case.id for item in items if isinstance(item, CaseItem)]
    if not ids:
        return
    config = items[0].config
    if hasattr(config, "workeroutput"):
        config.workeroutput.setdefault(DESELECTED_KEY, []).extend(ids)
        return
    recorder = recorder_of(config)
    if recorder is not None:
        recorder.record_deselected(ids)


class CaseFile(pytest.File):
    def collect(self):
        state = _state(self.config)
        assert state is not None
        for case in state.plan().values():
            yield CaseItem.from_parent(self, name=case.id, case=case)


class CaseItem(pytest.Item):
    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.outcome: dict[str, Any] = {}

    def runtest(self) -> None:
        from torchcts.cases.context import CaseContext
        from torchcts.engine.runner import run_case

        state = _state(self.config)
        assert state is not None
        device, manifest = state.context_parts()
        sel = state.spec.selection
        ctx = CaseContext(device=device, manifest=manifest, max_samples=sel.max_samples, sample=sel.sample,
                          validation=state.spec.validation)
        self.outcome = {"info": ctx.info}
        probe = CaseProbe(state.worker)
        start = time.perf_counter()
        try:
            with compat.watch_fallbacks() as fallbacks:
                run_case(self.case, ctx)
        except NotApplicable as exc:  # Pending is one: no verdict, shown apart (results/statuses.py)
            status = "pending" if isinstance(exc, Pending) else "not_applicable"
            self.outcome.update(status=status, message=str(exc))
            pytest.skip(f"{status.replace('_', ' ')}: {exc}")
        except OracleMismatch as exc:
            self.outcome.update(status="failed", message=str(exc), mismatch=exc.mismatch.to_json())
            raise
        except Exception as exc:
            self.outcome.update(
                status="error",
                message=f"{type(exc).__name__}: {first_line(exc, 500)}",
                exception=type(exc).__name__,
                traceback=_tail(traceback.format_exc(), 30),
            )
            raise
        finally:
            self.outcome["duration_s"] = round(time.perf_counter() - start, 6)
            self.outcome.update(probe.fields())  # engine/probe.py: when, where, memory
            # Compatibility fallbacks behind this result: the backend setup's and the case's own.
            self.outcome["compat_fallbacks"] = sorted(state.setup_fallbacks | fallbacks) or None
            # The aten overloads that reached the device (cases/observe.py), or why not observed.
            self.outcome.update(dispatched=ctx.dispatched, dispatch_unobserved=ctx.dispatch_unobserved)
            rss = release_memory()  # the worker's resident set after the case, freed heap returned
            if rss is not None:
                self.outcome["rss_mb"] = round(rss, 1)
        self.outcome["status"] = "passed"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> str:
        msg = self.outcome.get("message") or str(excinfo.value)
        tb = self.outcome.get("traceback")
        state = _state(self.config)
        cmd = state.repro({**base_record(self.case), **self.outcome}) if state else f"torchcts run --case {self.case.id}"
        return f"{msg}\n{tb or ''}\nrepro: {cmd}".strip()

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.case.id


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not isinstance(item, CaseItem):
        return
    if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
        record = base_record(item.case)
        record.update({k: v for k, v in item.outcome.items() if v not in (None, {}, "")})
        if report.failed and "status" not in record and _is_timeout(call):  # pytest-timeout, in-process
            record.update(status="timeout", message=str(call.excinfo.value).strip())
        record.setdefault("status", "error" if report.failed else "passed")
        record.setdefault("duration_s", round(call.duration, 6))
        report.user_properties.append((RECORD_KEY, json.dumps(record, default=str)))
        state = _state(item.config)
        # A worker judges its own report; with -n 0 the Recorder (in this process) does, once.
        if state is not None and hasattr(item.config, "workerinput"):
            align_report(report, state.ledger_status(record, item.case), state.strict)


def align_report(report: pytest.TestReport, record: dict[str, Any], strict: bool) -> None:
    """pytest's outcome agrees with the record's status after the ledger: an expected failure is
    pytest's xfailed (not in "N failed", not in FAILURES, not counted by -x/--maxfail), an expected
    failure that passed is XPASS (a failure under --strict-expectations, as pytest's strict xfail)."""
    status = record.get("status")
    note = record.get("expectation") or {}
    reason = f"expectations[{note.get('entry')}]: {note.get('reason') or ''}".strip()
    if status == "xfailed":
        report.outcome = "skipped"
        report.wasxfail = reason  # type: ignore[attr-defined]
    elif status == "xpassed" and strict:
        report.outcome = "failed"
        report.longrepr = f"[XPASS(strict)] {reason}: passed, remove the entry from the ledger"
        if hasattr(report, "wasxfail"):
            del report.wasxfail
    elif status == "xpassed":
        report.outcome = "passed"
        report.wasxfail = reason  # type: ignore[attr-defined]


# A case that runs and finds itself out of scope is a pytest skip; pytest's summary names it by
# its TorchCTS status ("5 not_applicable", not "5 skipped"), the word the scorecard counts it under.
NO_VERDICT = ("not_applicable", "pending")


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    if report.when != "call" or not report.skipped or hasattr(report, "wasxfail"):
        return None
    record = record_from_report(report)
    status = record.get("status") if record else None
    return (status, "s", status.upper()) if status in NO_VERDICT else None


def _is_timeout(call: pytest.CallInfo[None]) -> bool:
    exc = call.excinfo
    return exc is not None and exc.typename == "Failed" and str(exc.value).lstrip().startswith("Timeout")


def record_from_report(report: pytest.TestReport) -> dict[str, Any] | None:
    for key, value in report.user_properties:
        if key == RECORD_KEY:
            return json.loads(value)
    return None


class Recorder:
    """Controller side: the only writer of cases.jsonl. Built by the process that calls pytest.main
    (engine/session.py) and handed to it as a plugin, so workers never have one; whoever built it
    reads `writer.failure` after pytest (a full or read-only disk: exit 2)."""

    def __init__(self, state: RunState, work_dir: Path | None = None, attempt: int = 1) -> None:
        from torchcts.results.annotate import RecordAnnotator

        self.state = state
        self.work_dir = work_dir
        self.annotate = RecordAnnotator(state.run, state.run_dir, attempt, state.plan)  # ledger, flaky, repro_script
        self.writer = RecordWriter(state.run_dir)
        self.progress = ProgressPlugin(state.spec.planned)  # engine/progress.py
        self._counted = 0  # reports pytest counts as failed (what -x / --maxfail stop on)
        self._interrupt: BaseException | None = None
        self._recorded: set[str] = set()
        self._rescheduled: set[str] = set()

    def _case(self, case_id: str) -> Case | None:
        return self.state.plan().get(case_id)

    def record_deselected(self, ids: list[str]) -> None:
        """`filtered` records for the cases pytest's own selection dropped (each once)."""
        for case_id in ids:
            case = self._case(case_id)
            if case is None or case_id in self._recorded:
                continue
            self.writer.append(skip_record(case, "filtered", DESELECTED_REASON))
            self._recorded.add(case_id)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist: a worker finished; the cases its collection deselected are `filtered`."""
        self.record_deselected(list(getattr(node, "workeroutput", {}).get(DESELECTED_KEY, ())))

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist: a worker died running `crashitem`; record it crashed or timeout, with its evidence."""
        from torchcts.engine.isolation import crash_details

        case = self._case(crashitem.split("::", 1)[-1])
        if case is None:
            return
        details = crash_details(self.work_dir, getattr(report, "node", None), crashitem)
        if not details.pop("started") and crashitem not in self._rescheduled and hasattr(sched, "mark_test_pending"):
            self._rescheduled.add(crashitem)  # it never ran: not its fault; run it on another worker
            sched.mark_test_pending(crashitem)
            self.progress.forget(case.id)
            return
        if case.id in self._recorded:  # last record per id wins: this one replaces its earlier result
            details["message"] += "; its checks had finished, so the crash came after them (teardown or deferred work)"
        record = {**base_record(case), **details}
        report.user_properties.append((RECORD_KEY, json.dumps(record, default=str)))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport):  # noqa: ANN201
        """Record first, then let pytest (terminal, -x counting, xdist) see the report as the ledger
        judged it (a wrapper runs before every plain implementation)."""
        record = record_from_report(report)
        if record is not None:
            if record["status"] not in ("passed", "not_applicable"):
                record["repro"] = self.state.repro(record)
                if (record.get("info") or {}).get("repro"):  # the case's own line: the same, with the manifest
                    record["info"]["repro"] = record["repro"]
            record = self.annotate(record)
            self.writer.append(record)
            self._recorded.add(record["id"])
            self.progress.recorded(record, record["status"] in FAILURES)
            align_report(report, record, self.state.strict)
            self._counted += report.failed
        yield

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self._interrupt = excinfo.value

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """pytest's exit status, made exact: INTERRUPTED means SIGINT only. xdist ends a `-x` run
        by raising its Interrupted; that is a stop after a failure (TESTS_FAILED), and any other
        pytest interruption (collection errors) is ours (INTERNAL_ERROR)."""
        self.writer.close()
        if exitstatus != pytest.ExitCode.INTERRUPTED or self._interrupt is None:
            return
        maxfail = session.config.getvalue("maxfail")
        if type(self._interrupt) is KeyboardInterrupt or "keyboard-interrupt" in str(self._interrupt):
            return  # SIGINT (Ctrl-C), in the controller or a worker
        if maxfail and self._counted >= maxfail:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        else:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
