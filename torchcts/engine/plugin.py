"""The pytest plugin: plan.jsonl becomes pytest items; reports become streamed case records.

pytest is the execution engine, so `-k`, `-x`, `--lf`, node ids, JUnit XML and pytest-xdist work
as backend engineers expect. A worker runs a case, builds its `CaseRecord`, judges it
(engine/judge.py: repro line, ledger) and attaches it to the report, which pytest's report
serialisation hooks ship to the controller; the controller (the only writer) appends it to
cases.jsonl.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from torchcts import compat
from torchcts.engine import judge
from torchcts.engine.judge import RecordJudge, align_report, record_of
from torchcts.engine.lean import exit_without_teardown, skip_exit_gc
from torchcts.engine.probe import worker_name
from torchcts.engine.progress import ProgressPlugin
from torchcts.engine.repeat import run_one_repeated
from torchcts.engine.shard import estimated_cost
from torchcts.engine.spec import RunSpec
from torchcts.engine.terminal_guard import TerminalGuard
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord, skip_record
from torchcts.model.status import FAILURES, NO_VERDICT_LETTERS, Status
from torchcts.results.records.decide import is_timeout
from torchcts.results.records.plan import read_plan
from torchcts.results.records.rundir import RecordWriter, read_run
from torchcts.results.repro.commands import record_repro
from torchcts.workers.case_process import CaseRunner
from torchcts.workers.crash_budget import BudgetReader, CrashBudget
from torchcts.workers.deaths import RESCHEDULED, WorkerDeaths

COLLECT_FILE = "torchcts"
_STATE = pytest.StashKey["RunState"]()
_JUDGE = pytest.StashKey[RecordJudge]()


class RunState:
    """Per-process state of a run: its typed spec (run.json) and, lazily, the plan and case context.

    Every process of a run reads the same run.json: the controller right after writing it, each
    xdist worker and rerun session at start. Only `--manifest` differs: run.json keeps it scrubbed,
    and repro lines on the terminal must run as printed, so the live one is handed in."""

    def __init__(self, run_dir: Path, manifest_arg: str | None = None) -> None:
        self.run_dir = run_dir
        self.spec = RunSpec.from_run(read_run(run_dir))  # run.json typed, as the engine runs by it
        self.run = self.spec  # a spec is a Run: repro lines and the ledger read it as they read any run
        if manifest_arg:
            self.spec.manifest_arg = manifest_arg
        self._ctx_parts: tuple[Any, Any] | None = None
        self._plan: dict[str, Case] | None = None
        self.setup_fallbacks: set[str] = set()
        self.worker = "main"  # xdist's worker id in a worker (engine/probe.py), set by pytest_configure
        self.threads: int | None = None  # torch's threads in this worker (engine/threads.py), None: as is
        self.budget: BudgetReader | None = None  # a worker's view of the crash budget and forked cases
        self.work_dir: Path | None = None  # a worker's scratch folder (its log), None without isolation
        self._runner: CaseRunner | None = None

    def runner(self, config: pytest.Config) -> CaseRunner:
        """Runs this process's cases: here, or in forked children once the run crashed."""
        if self._runner is None:
            self._runner = CaseRunner(self, config.getoption("--torchcts-corpus", None), run_one_repeated)
        return self._runner

    def close_runner(self) -> None:
        if self._runner is not None:
            self._runner.close()

    def repro(self, record: CaseRecord) -> str:
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
    group.addoption("--torchcts-corpus", default=None,
                    help="the run's --corpus folder (run.json keeps no paths): explore cases replay and merge into it")
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
    config.pluginmanager.register(TerminalGuard(), "torchcts-terminal-guard")  # pytest's own output, scrubbed
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
        config.stash[_JUDGE] = recorder.judge  # one judge per process: cases run here, crash records
        from torchcts.workers.isolation import tolerate_dead_workers, xdist_available

        if xdist_available():
            tolerate_dead_workers()  # a send to a worker a crash just killed must not end the run
    state.worker = worker_name(config)
    config.stash[_STATE] = state


def _configure_worker(config: pytest.Config, state: RunState) -> None:
    from torchcts.engine import threads

    state.threads = threads.worker_threads(config.workerinput.get("workercount"))
    threads.export(state.threads)  # before torch is imported: cores // workers, unless the user chose
    work_dir = config.getoption("--torchcts-work-dir")
    if work_dir:
        from torchcts.workers.isolation import WorkerWatch

        config.pluginmanager.register(WorkerWatch(Path(work_dir), config.workerinput["workerid"],
                                                  lambda: state.runner(config).retiring))
        state.work_dir = Path(work_dir)
        # Crash-budget stops bind a first attempt only (a rerun runs its cases); forked cases bind all.
        state.budget = BudgetReader(state.work_dir, bool(state.spec.crash_budget)
                                    and config.getoption("--torchcts-attempt") == 1)
    config.stash[_JUDGE] = RecordJudge(state, config.getoption("--torchcts-attempt"))


def pytest_unconfigure(config: pytest.Config) -> None:
    """A worker's forked child (workers/case_process.py) leaves with it; then the worker, its
    results sent, exits without tearing its modules down (engine/lean.py)."""
    state = _state(config)
    if state is not None:
        state.close_runner()
        if hasattr(config, "workerinput"):
            exit_without_teardown()


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
        self.record = CaseRecord.from_case(case)  # filled in by runtest

    def runtest(self) -> None:
        state = _state(self.config)
        assert state is not None
        stop = state.budget.stops(self.case) if state.budget is not None else None
        if stop:  # its family's crash is known (workers/crash_budget.py): not run, and says why
            self.record = CaseRecord.from_case(self.case, status=Status.NOT_RUN, message=stop, duration_s=0.0)
            pytest.skip(stop)
        # engine/one_case.py, here or in a forked child once the run has crashed (workers/case_process.py)
        outcome = state.runner(self.config).run(self.case, self.nodeid)
        self.record = outcome.record
        outcome.raise_for_pytest()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> str:
        msg = self.record.message or str(excinfo.value)
        tb = self.record.traceback
        state = _state(self.config)
        cmd = state.repro(self.record) if state else f"torchcts run --case {shlex.quote(self.case.id)}"
        return f"{msg}\n{tb or ''}\nrepro: {cmd}".strip()

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.case.id


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # noqa: ANN201
    """Before pytest-timeout reads the case's limit: a case of an op that hung earlier in the run gets
    a short one (workers/crash_budget.py: BudgetReader.hang_limit); under --repeat N the item runs the
    case N times, so its limit is N times the per-case one (engine/repeat.py)."""
    state = _state(item.config)
    if isinstance(item, CaseItem) and state is not None:
        limit = (state.budget.hang_limit(item.case, state.spec.timeout_s, estimated_cost)
                 if state.budget is not None else None)
        if state.spec.repeat > 1 and (limit or state.spec.timeout_s):
            limit = (limit or state.spec.timeout_s) * state.spec.repeat
        if limit is not None:
            item.add_marker(pytest.mark.timeout(limit))
    yield


# Fields a case leaves empty ({} of a case that noted nothing, "" of a bare exception): not written.
_EMPTY_DROPPED = ("info", "message", "mismatch", "exception", "traceback")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """The case's record, judged here where it is built (engine/judge.py), on the report."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not isinstance(item, CaseItem):
        return
    printed = case_output(report)  # taken off the report: pytest would print it under a failure
    if call.when == "call" or (call.when == "setup" and report.outcome != "passed"):
        record = item.record.copy()
        record.case_output = printed
        for name in _EMPTY_DROPPED:
            if getattr(record, name) in ({}, ""):
                setattr(record, name, None)
        if record.status is None:  # no case call decided it (engine/one_case.py): pytest's setup, or a timeout there
            raised = call.excinfo.value if call.excinfo is not None else None
            if report.failed and is_timeout(raised):
                record.status, record.message = Status.TIMEOUT, str(raised).strip()
            else:
                record.status = Status.ERROR if report.failed else Status.PASSED
        if record.duration_s is None:
            record.duration_s = round(call.duration, 6)
        state = _state(item.config)
        if state is not None:
            try:
                record = item.config.stash[_JUDGE](record)
            except Exception as exc:  # noqa: BLE001 - ours, not the backend's: this case's record says so
                record = record.internal("judging its record", exc)
                report.outcome, report.longrepr = "failed", record.message
            align_report(report, record, state.strict)
        judge.attach(report, record)


# How much of a case's own output its record keeps (the end: where a build log says what failed).
CASE_OUTPUT_CHARS = 4000


def case_output(report: pytest.TestReport) -> str | None:
    """What the case printed so far (pytest's "Captured stdout/stderr/log" sections), removed from the
    report so the terminal never shows it (a backend printing its OpenCL sources on every failed build
    flooded a level-2 run with 55,000 lines); its line count and last CASE_OUTPUT_CHARS characters."""
    captured = [(title, text) for title, text in report.sections if title.startswith("Captured ")]
    if not captured:
        return None
    report.sections = [s for s in report.sections if not s[0].startswith("Captured ")]
    text = "".join(f"--- {title} ---\n{body.rstrip()}\n" for title, body in captured)
    lines = text.count("\n")
    if len(text) <= CASE_OUTPUT_CHARS:
        return text
    return f"[{lines} lines printed; the last {CASE_OUTPUT_CHARS} characters]\n...{text[-CASE_OUTPUT_CHARS:]}"


@pytest.hookimpl(hookwrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any):  # noqa: ANN201
    """xdist ships a worker's report as pytest's JSON: the record goes along as its own JSON."""
    outcome = yield
    judge.serializable(report, outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_report_from_serializable(config: pytest.Config, data: dict[str, Any]):  # noqa: ANN201
    """The controller rebuilds a worker's report: its record is typed again (CaseRecord.from_json)."""
    outcome = yield
    judge.from_serializable(outcome.get_result())


# A case that runs and finds itself out of scope (or that the crash budget does not run) is a pytest
# skip; pytest's summary names it by its TorchCTS status ("5 not_applicable", not "5 skipped"), the
# word the scorecard counts it under, and its letter among the dots is its own, not skip's `s`.
NO_VERDICT = tuple(NO_VERDICT_LETTERS)


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    if getattr(report, "outcome", None) == RESCHEDULED:  # a crash item that never started runs again (workers/deaths.py)
        return RESCHEDULED, "R", RESCHEDULED.upper()
    if report.when != "call" or not report.skipped or hasattr(report, "wasxfail"):
        return None
    record = record_of(report)
    status = str(record.status) if record and record.status else None
    return (status, NO_VERDICT_LETTERS[status], status.upper()) if status in NO_VERDICT else None


class Recorder:
    """Controller side: the only writer of cases.jsonl. Built by the process that calls pytest.main
    (engine/session.py) and handed to it as a plugin, so workers never have one; whoever built it
    reads `writer.failure` after pytest (a full or read-only disk: exit 2)."""

    def __init__(self, state: RunState, work_dir: Path | None = None, attempt: int = 1) -> None:
        self.state = state
        self.work_dir = work_dir
        self.judge = RecordJudge(state, attempt)  # the crash records it makes (engine/judge.py)
        # Counts the crashes (a first attempt's, under a budget) and says when a worker died; workers
        # read what it publishes (workers/crash_budget.py).
        limit = (state.spec.crash_budget or 0) if attempt == 1 else 0
        self.budget = CrashBudget(work_dir, limit) if work_dir is not None else None
        self.writer = RecordWriter(state.run_dir)
        self.progress = ProgressPlugin(state.spec.planned)  # engine/progress.py
        self._counted = 0  # reports pytest counts as failed (what -x / --maxfail stop on)
        self._interrupt: BaseException | None = None
        self._recorded: set[str] = set()
        self.attempt = attempt
        # What each dead worker means: its case's record, a reschedule, attribution's suspects (workers/deaths.py)
        self.deaths = WorkerDeaths(work_dir, attempt, state.plan, self.judge, self.budget, self.progress.forget)

    def _case(self, case_id: str) -> Case | None:
        return self.state.plan().get(case_id)

    def record_deselected(self, ids: list[str]) -> None:
        """`filtered` records for the cases pytest's own selection dropped (each once)."""
        for case_id in ids:
            case = self._case(case_id)
            if case is None or case_id in self._recorded:
                continue
            self.writer.append(skip_record(case, Status.FILTERED, DESELECTED_REASON))
            self._recorded.add(case_id)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist: a worker is down: the cases its collection deselected are `filtered`; a dead one's
        replacement is the worker-death policy's (workers/deaths.py)."""
        self.record_deselected(list(getattr(node, "workeroutput", {}).get(DESELECTED_KEY, ())))
        self.deaths.node_down(node, error)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist: a worker died before finishing `crashitem`; workers/deaths.py decides what it means."""
        record = self.deaths.crash_item(crashitem, report, sched, crashitem.split("::", 1)[-1] in self._recorded)
        if record is not None:
            judge.attach(report, record)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport):  # noqa: ANN201
        """Record first, then let pytest (terminal, -x counting, xdist) see the report as the ledger
        judged it (a wrapper runs before every plain implementation; a worker's report arrives
        aligned already, a crash report is aligned here)."""
        record = record_of(report)
        if record is not None:
            case = self._case(record.id) if self.budget is not None else None
            if case is not None:
                self.budget.crashed(case, record)  # a worker's or a forked child's crash; every case counts
                if record.status == Status.TIMEOUT:
                    self.budget.hang_note(case, record)
                    self.budget.hung(case, record)
            self.writer.append(record)
            self._recorded.add(record.id)
            self.deaths.recorded(record, report.nodeid)
            self.progress.recorded(record, record.status in FAILURES)
            align_report(report, record, self.state.strict)
            self._counted += report.failed
        yield
        if record is not None:  # written: pytest keeps every report to the end (terminal stats), not its record
            judge.detach(report)

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
