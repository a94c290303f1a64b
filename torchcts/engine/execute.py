"""Running a prepared spec: open the run folder, run pytest, close the run, the exit status.

Each step is one function (open_run, run_pytest, close_run, exit_code); `execute` chains them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torchcts
from torchcts.compat import build_info, describe_fallbacks, fallbacks_used
from torchcts.engine.setup import RunSetup
from torchcts.engine.spec import RunSpec
from torchcts.errors import ExitCode
from torchcts.model.record import CaseRecord, skip_record
from torchcts.model.run import FIELD_KEYS as RUN_FIELDS
from torchcts.model.run import Run
from torchcts.results.records import rundir
from torchcts.results.records.finalize import finalize
from torchcts.results.records.plan import write_plan
from torchcts.results.repro import sim_env

if TYPE_CHECKING:
    from torchcts.engine.plugin import Recorder

COLLECT_DIR = Path(__file__).parent / "collect"
# The only third-party pytest plugins a run loads (autoload is off), so whatever else is installed
# (randomizers, benchmark or coverage plugins) neither slows nor reorders a run; `-- -p NAME` adds one.
RUN_PLUGINS = ("xdist.plugin", "pytest_timeout")


@dataclass
class OpenedRun:
    """A run folder ready for pytest: the spec as run.json holds it, and pytest's arguments."""

    spec: RunSpec
    run_dir: Path
    pytest_args: list[str]  # isolation's (-n, --timeout: workers/isolation.py), then the user's after `--`


def opening_facts(pytest_args: list[str]) -> dict[str, Any]:
    """run.json's descriptive keys at open: versions, machine, fallbacks, threads (Run's fields, or its `extra`)."""
    from torchcts.engine.threads import describe

    return {
        "torchcts": torchcts.__version__,
        "torch": build_info(),
        "python": platform.python_version(),
        "os": platform.system(),
        "arch": platform.machine(),
        # Where this PyTorch lacked something and TorchCTS took a fallback (compat.FALLBACKS):
        # the controller's now (building the case list), the workers' added by finalize.
        "compat_fallbacks": describe_fallbacks(fallbacks_used()),
        "threads": describe(pytest_args),
        "ended": None,  # set by finalize, with status and totals
        "status": "running",
    }


def open_run(setup: RunSetup) -> OpenedRun:
    """The run folder, run.json (the spec), the skip records and plan.jsonl; `latest` points to it."""
    from torchcts.workers.isolation import pytest_extra_args

    spec, result = setup.spec, setup.result
    run_dir = rundir.new_run_dir(spec.results_dir)
    to_run = result.to_run
    args = [*pytest_extra_args(spec.pytest_args, spec.isolation, spec.timeout_s, len(to_run)), *spec.pytest_args]
    # The sim's variables (a planted fault): repro lines and scripts set them again (results/repro/sim_env.py)
    sim = sim_env.recorded(spec.manifest.backend_import if spec.manifest else None)
    facts = {**opening_facts(args), **({"sim_env": sim} if sim else {})}
    named = {k: v for k, v in facts.items() if k in RUN_FIELDS}
    spec = replace(spec, name=run_dir.name, started=rundir.utc_now(), planned=len(to_run), filtered=result.filtered,
                   sharded_out=result.sharded_out, expectations_outside_selection=list(result.ledger_outside),
                   **named, extra={**spec.extra, **{k: v for k, v in facts.items() if k not in named}},
                   _keys=spec._keys | set(named))
    try:
        rundir.write_run(run_dir, spec)
        rundir.point_latest(spec.results_dir, run_dir)
    except BaseException:  # a full or read-only disk: no bogus run folder is left behind
        import shutil

        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    writer = rundir.RecordWriter(run_dir)
    try:
        for d in result.skipped:
            writer.append(skip_record(d.case, d.status, d.reason))
    finally:
        writer.close()
    write_plan(run_dir, to_run)
    return OpenedRun(spec, run_dir, args)


def pytest_argv(run_dir: Path, results_root: Path, user_args: list[str], work_dir: Path | None = None,
                manifest_arg: str | None = None, corpus: str | None = None) -> list[str]:
    return [
        str(COLLECT_DIR / "torchcts"),
        *[arg for name in RUN_PLUGINS if importlib.util.find_spec(name.split(".")[0]) for arg in ("-p", name)],
        "-p", "torchcts.engine.plugin",
        f"--torchcts-run-dir={run_dir}",
        *([f"--torchcts-work-dir={work_dir}"] if work_dir else []),
        *([f"--torchcts-manifest-arg={manifest_arg}"] if manifest_arg else []),
        *([f"--torchcts-corpus={os.path.abspath(corpus)}"] if corpus else []),
        f"--rootdir={COLLECT_DIR}",
        "-c", str(COLLECT_DIR / "pytest.ini"),
        "-o", f"cache_dir={results_root.resolve() / '.pytest_cache'}",
        # Cases are items, not test modules: nothing to rewrite, and the plugins a run loads were
        # imported before pytest.main (a PytestAssertRewriteWarning on every run otherwise).
        "--assert=plain",
        *user_args,
    ]


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, `timeout`, a container stopped) ends the run like Ctrl-C: pytest
    stops, the workers are shut down, and the run folder is finalised as interrupted."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_pytest(run: OpenedRun) -> tuple[int, Recorder]:
    """pytest on the plan, then --rerun-failures' attempts; SIGTERM ends it like Ctrl-C. The Recorder
    is this process's (engine/session.py), so a failed record write is read from it afterwards."""
    import tempfile
    from unittest import mock

    import pytest

    from torchcts.engine.session import run_session
    from torchcts.engine.threads import exported
    from torchcts.workers.crash_server import serving  # a crashed worker's replacement forked (workers/crash_server.py)
    from torchcts.workers.warm import plugins  # workers forked from a pre-imported server (workers/warm.py)

    spec = run.spec
    assert spec.manifest is not None  # prepared
    warm_plugins = plugins(spec.warm, spec.isolation, spec.device_type, spec.manifest.backend_import)
    # see RUN_PLUGINS: workers, attribution and reruns inherit it; the caller's environment is restored
    # after (an in-process run left it set, and a later pytest of the caller's knew no -n)
    with (mock.patch.dict(os.environ, {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}),
          tempfile.TemporaryDirectory(prefix="torchcts-workers-") as work_dir, sigterm_as_interrupt(),
          exported(run.pytest_args),
          serving(spec.isolation, warm_plugins, spec.device_type, spec.manifest.backend_import) as crash_server):
        argv = pytest_argv(run.run_dir, spec.results_dir, run.pytest_args, Path(work_dir), spec.manifest_arg,
                           spec.corpus)
        code, recorder = run_session(argv, warm_plugins, replacer=crash_server)
        if recorder.deaths.suspicions and code != pytest.ExitCode.INTERRUPTED:
            from torchcts.workers.attribution import settle  # a crash that landed in an innocent case

            settle(run.run_dir, recorder.deaths.suspicions, recorder.judge, recorder.state.plan(), spec.timeout_s,
                   spec.corpus, solo="torchcts.engine.solo")
        if spec.rerun_failures and code != pytest.ExitCode.INTERRUPTED:
            from torchcts.engine.rerun import rerun_failures

            rerun_failures(run.run_dir, spec.rerun_failures, argv)
    return code, recorder


def close_run(run: OpenedRun, code: int, recorder: Recorder | None) -> Run:
    """Finalise the run folder (complete or interrupted), GitHub's step summary, the scorecard; the
    finished run.json. A record the file system refused (full, read-only) is a UsageError-like exit 2.
    `recorder` is None when an interrupt came before pytest had one."""
    import pytest

    from torchcts.results.reports.step_summary import append_step_summary

    if recorder is not None and recorder.writer.failure is not None:
        raise recorder.writer.failure
    interrupted = code == pytest.ExitCode.INTERRUPTED  # SIGINT or SIGTERM (Recorder.pytest_sessionfinish)
    finished, records = finalize(run.run_dir, "interrupted" if interrupted else "complete",
                                 run.spec.manifest_arg)
    append_step_summary(run.run_dir)  # GitHub Actions: the summary on the job's page
    print_run_scorecard(run, finished, records)
    return finished


@contextlib.contextmanager
def interrupts_deferred(doing: str) -> Iterator[list[int]]:
    """Ctrl-C or SIGTERM while the run folder is being closed waits until it is closed (seconds):
    raised there, it left run.json saying `running` and no reports. Yields the signals that came;
    a third one stops at once (the user insists; `report` closes the folder later)."""
    import signal
    import threading

    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return

    def defer(signum: int, frame: Any) -> None:
        came.append(signum)
        if len(came) >= 3:
            raise KeyboardInterrupt
        if len(came) == 1:
            print(f"\ntorchcts: interrupted: {doing} first (seconds)", file=sys.stderr)

    previous = {sig: signal.signal(sig, defer) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield came
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def print_run_scorecard(run: OpenedRun, finished: Run, records: list[CaseRecord]) -> None:
    """The scorecard with the "since the previous comparable run" line, paths shown as given."""
    from torchcts.results.records.scrub import scrub
    from torchcts.results.reports.compare import regressions_line
    from torchcts.results.reports.scorecard import print_scorecard

    try:
        since = regressions_line(run.spec.results_dir, run.run_dir, records)
    except (OSError, ValueError, KeyError):  # an unreadable old run never spoils this one
        since = None
    live = {scrub(p): p for p in (run.spec.manifest_arg, str(run.run_dir)) if p and scrub(p) != p}
    print_scorecard(run.run_dir, finished, sys.stdout, regressions=since, records=records, live_paths=live)


def exit_code(code: int, finished: Run) -> int:
    """torchcts's exit status from pytest's and the finished run (README.md, "Exit status")."""
    import pytest

    from torchcts.results.ledger.apply import verdict_exit

    if code == pytest.ExitCode.INTERRUPTED:
        return ExitCode.INTERRUPTED
    if code == pytest.ExitCode.USAGE_ERROR:
        return ExitCode.USAGE
    if code == pytest.ExitCode.INTERNAL_ERROR:
        return ExitCode.INTERNAL
    return verdict_exit(finished)  # failures; flaky under --repeat; under --strict-expectations also ledger problems


def execute(setup: RunSetup) -> int:
    """Run a prepared spec: open the run folder, run pytest, close the run, the exit status.

    Every way out closes the folder (run.json marked, reports written): an interrupt pytest did not
    catch (during the workers' start-up or their shutdown after [100%]) ends the run as interrupted,
    and one while closing waits for the close (interrupts_deferred)."""
    import pytest

    with interrupts_deferred("opening the run folder") as came:  # run.json, then the plan: both or none
        run = open_run(setup)
    recorder: Recorder | None = None
    code: int = pytest.ExitCode.INTERRUPTED
    try:
        if not came:
            code, recorder = run_pytest(run)
    except KeyboardInterrupt:  # SIGINT or SIGTERM outside pytest's own handling
        pass
    except BaseException:  # an internal error: the folder says the run stopped, then the traceback
        with interrupts_deferred("closing the run folder"), contextlib.suppress(Exception):
            finalize(run.run_dir, "interrupted", run.spec.manifest_arg)
        raise
    with interrupts_deferred("writing the run's reports") as came_late:
        finished = close_run(run, code, recorder)
    return ExitCode.INTERRUPTED if came or came_late else exit_code(code, finished)
