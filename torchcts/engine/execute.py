"""Running a prepared selection through pytest and closing the run folder."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torchcts
from torchcts.compat import build_info, describe_fallbacks, fallbacks_used
from torchcts.engine.setup import RunSetup
from torchcts.errors import EXIT_FAILURES, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from torchcts.results import rundir
from torchcts.results.finalize import finalize
from torchcts.results.plan import write_plan
from torchcts.results.records import skip_record

COLLECT_DIR = Path(__file__).parent / "collect"
# The only third-party pytest plugins a run loads (autoload is off), so whatever else is installed
# (randomizers, benchmark or coverage plugins) neither slows nor reorders a run; `-- -p NAME` adds one.
RUN_PLUGINS = ("xdist.plugin", "pytest_timeout")


def run_spec(setup: RunSetup, run_dir: Path, intent: list[str]) -> dict[str, Any]:
    """The initial run.json: everything a worker and a later `report` or `compare` needs."""
    return {
        "name": run_dir.name,
        "torchcts": torchcts.__version__,
        "torch": build_info(),
        "python": platform.python_version(),
        "os": platform.system(),
        "arch": platform.machine(),
        "device": setup.device.to_json(),
        "gate": setup.device.gate,
        "validation": setup.validation,
        "manifest": setup.manifest.to_json(),
        "manifest_hash": setup.manifest.hash(),
        "manifest_source": setup.manifest.source,
        "manifest_arg": setup.manifest_arg,
        "command": intent,
        "selection": setup.selection.to_json(),
        "started": rundir.utc_now(),
        "ended": None,
        "status": "running",
        "filtered": setup.result.filtered,
        "sharded_out": setup.result.sharded_out,
        "planned": len(setup.result.to_run),
        "strict_expectations": setup.strict_expectations,
        "rerun_failures": setup.rerun_failures,
        # Where this PyTorch lacked something and TorchCTS took a fallback (compat.FALLBACKS):
        # the controller's now (building the case list), the workers' added by finalize.
        "compat_fallbacks": describe_fallbacks(fallbacks_used()),
    }


def pytest_argv(run_dir: Path, results_root: Path, user_args: list[str], work_dir: Path | None = None,
                manifest_arg: str | None = None) -> list[str]:
    return [
        str(COLLECT_DIR / "torchcts"),
        *[arg for name in RUN_PLUGINS if importlib.util.find_spec(name.split(".")[0]) for arg in ("-p", name)],
        "-p", "torchcts.engine.plugin",
        f"--torchcts-run-dir={run_dir}",
        *([f"--torchcts-work-dir={work_dir}"] if work_dir else []),
        *([f"--torchcts-manifest-arg={manifest_arg}"] if manifest_arg else []),
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


def execute(
    setup: RunSetup,
    results_root: Path,
    intent: list[str],
    user_args: list[str],
    *,
    isolation: bool = True,
    timeout: float | None = None,
    warm: bool | None = None,
) -> int:
    import tempfile

    import pytest

    from torchcts.engine.isolation import pytest_extra_args

    rundir.WRITE_FAILURES.clear()
    run_dir = rundir.new_run_dir(results_root)
    extra = pytest_extra_args(user_args, isolation, timeout, len(setup.result.to_run))
    spec = run_spec(setup, run_dir, intent)
    from torchcts.engine.threads import describe, exported

    spec.update(isolation=isolation, timeout_s=timeout, threads=describe([*extra, *user_args]))
    try:
        rundir.write_json_atomic(run_dir / rundir.RUN_JSON, spec)
        rundir.point_latest(results_root, run_dir)
    except BaseException:  # a full or read-only disk: no bogus run folder is left behind
        import shutil

        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    writer = rundir.RecordWriter(run_dir)
    for d in setup.result.skipped:
        writer.append(skip_record(d.case, d.status, d.reason))
    writer.close()
    write_plan(run_dir, setup.result.to_run)

    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # see RUN_PLUGINS; workers and reruns inherit it
    from torchcts.engine.warm import plugins  # workers forked from a pre-imported server (engine/warm.py)

    warm_plugins = plugins(warm, isolation, setup.device.type, setup.manifest.backend_import)
    with (tempfile.TemporaryDirectory(prefix="torchcts-workers-") as work_dir, sigterm_as_interrupt(),
          exported([*extra, *user_args])):
        code = pytest.main(pytest_argv(run_dir, results_root, [*extra, *user_args], Path(work_dir), setup.manifest_arg),
                           plugins=warm_plugins)
        interrupted = code == pytest.ExitCode.INTERRUPTED
        if setup.rerun_failures and not interrupted:
            from torchcts.engine.rerun import rerun_failures

            rerun_failures(run_dir, setup.rerun_failures,
                           pytest_argv(run_dir, results_root, [*extra, *user_args], Path(work_dir), setup.manifest_arg))
    if rundir.WRITE_FAILURES:  # the file system refused a record (full, read-only): exit 2, one line
        raise rundir.WRITE_FAILURES[-1]
    run, records = finalize(run_dir, "interrupted" if interrupted else "complete", setup.manifest_arg)
    from torchcts.results.step_summary import append_step_summary

    append_step_summary(run_dir)  # GitHub Actions: the summary on the job's page

    from torchcts.results.compare import regressions_line
    from torchcts.results.scorecard import print_scorecard

    try:
        since = regressions_line(results_root, run_dir, records)
    except (OSError, ValueError, KeyError):  # an unreadable old run never spoils this one
        since = None
    from torchcts.results.scrub import scrub

    live = {scrub(p): p for p in (setup.manifest_arg, str(run_dir)) if p and scrub(p) != p}
    print_scorecard(run_dir, run, sys.stdout, regressions=since, records=records, live_paths=live)
    if interrupted:  # SIGINT or SIGTERM (engine/plugin.py: Recorder.pytest_sessionfinish)
        return EXIT_INTERRUPTED
    if code == pytest.ExitCode.USAGE_ERROR:
        return EXIT_USAGE
    if code == pytest.ExitCode.INTERNAL_ERROR:
        return EXIT_INTERNAL
    from torchcts.results.ledger import gate_failures

    if gate_failures(run):  # failures; under --strict-expectations also ledger problems and flaky
        return EXIT_FAILURES
    return EXIT_OK
