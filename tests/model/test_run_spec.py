"""The run spec (engine/spec.py): built and checked once from the flags, written as run.json, read
back typed by the run's processes; execute's steps and who builds the Recorder (engine/session.py)."""

from __future__ import annotations

import errno
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from torchcts.cli.common import run_spec
from torchcts.cli.main import build_parser
from torchcts.errors import UsageError
from torchcts.model.record import CaseRecord

# run.json's keys when a run opens: reports, compare, merge and users read these names.
OPEN_KEYS = {
    "name", "torchcts", "torch", "python", "os", "arch", "device", "gate", "validation", "manifest",
    "manifest_hash", "manifest_source", "manifest_arg", "command", "selection", "started", "ended",
    "status", "filtered", "sharded_out", "planned", "strict_expectations", "rerun_failures",
    "compat_fallbacks", "isolation", "timeout_s", "threads", "crash_budget", "explore",
    "expectations_outside_selection", "repeat",
}


def _spec(argv: list[str], pytest_args: list[str] | None = None):
    args = build_parser().parse_args(argv)
    args.argv, args.pytest_args = argv, pytest_args or []
    return run_spec(args)


def _opened(tmp_path: Path, *flags: str):
    from torchcts.engine.execute import open_run
    from torchcts.engine.setup import prepare

    argv = ["run", "--op", "add", "--dtype", "float32", "--level", "1", "--results-dir", str(tmp_path / "res"),
            "--timeout", "0", "--rerun-failures", "2", *flags]
    return open_run(prepare(_spec(argv, ["-q"])))


def test_every_flag_of_the_spec_is_checked_where_it_is_built(tmp_path):
    spec = _spec(["run", "--validation", "--timeout", "12.5", "--rerun-failures", "3", "--no-isolation",
                  "--no-warm", "--strict-expectations", "--op", "mul", "--results-dir", str(tmp_path / "r")], ["-x"])
    assert (spec.timeout_s, spec.rerun_failures, spec.isolation, spec.warm) == (12.5, 3, False, False)
    assert spec.strict_expectations and spec.validation and spec.selection.ops == ["mul"]
    assert spec.results_dir == tmp_path / "r" and spec.pytest_args == ["-x"]
    assert spec.command[0] == "run" and str(tmp_path) not in " ".join(spec.command)  # paths as base names
    assert _spec(["run", "--validation", "--timeout", "0"]).timeout_s is None  # 0: no limit
    assert _spec(["run", "--validation"]).crash_budget == 3  # workers/crash_budget.py: DEFAULT_LIMIT
    assert _spec(["run", "--validation", "--crash-budget", "5"]).crash_budget == 5
    assert _spec(["run", "--validation", "--no-crash-budget"]).crash_budget is None
    a_file = tmp_path / "file"
    a_file.write_text("x")
    bad = ([["--timeout", "nan"], "--timeout"], [["--timeout", "-1"], "--timeout"],
           [["--rerun-failures", "-1"], "--rerun-failures"], [["--results-dir", str(a_file / "sub")], "--results-dir"],
           [["--max-samples", "0"], "--max-samples"], [["--crash-budget", "0"], "--crash-budget"],
           [["--crash-budget", "2", "--no-crash-budget"], "--no-crash-budget"])
    for flags, named in bad:
        with pytest.raises(UsageError, match=named):
            _spec(["run", "--validation", *flags])
    # show-skips writes nothing: its --results-dir is not checked (as before the spec)
    assert _spec(["show-skips", "--validation", "--results-dir", str(a_file / "sub")]).timeout_s is None


def test_run_json_is_the_spec_and_reads_back_typed(tmp_path):
    from torchcts.engine.spec import RunSpec
    from torchcts.model.device import DeviceInfo
    from torchcts.model.manifest import Manifest
    from torchcts.model.selection import Selection
    from torchcts.results.records import rundir

    opened = _opened(tmp_path, "--validation")
    outcome = rundir.read_run(opened.run_dir)  # typed (model/run.py); its JSON is the file's, exactly
    run = outcome.to_json()
    assert run == json.loads((opened.run_dir / rundir.RUN_JSON).read_text())
    assert set(run) == OPEN_KEYS
    assert (outcome.status, outcome.ended, outcome.planned) == ("running", None, opened.spec.planned)
    assert (run["status"], run["ended"], run["timeout_s"], run["rerun_failures"]) == ("running", None, None, 2)
    assert run["crash_budget"] == 3 and RunSpec.from_json({**run, "crash_budget": None}).crash_budget is None
    from torchcts.cases.explore.budget import default_depth

    assert run["explore"] == default_depth(1) == 0  # --level 1: that level's default depth (no exploring)
    assert run["planned"] == opened.spec.planned > 0 and run["name"] == opened.run_dir.name
    spec = RunSpec.from_json(run)
    assert isinstance(spec.selection, Selection) and spec.selection.ops == ["add"]
    assert isinstance(spec.manifest, Manifest) and spec.manifest.hash() == run["manifest_hash"]
    assert isinstance(spec.device, DeviceInfo) and spec.device_type == "cpu" and spec.validation
    assert json.loads(json.dumps(spec.to_json(), default=str)) == run  # exact round trip, facts kept
    run["totals"] = {"passed": 1}  # finalize's keys travel along
    assert RunSpec.from_json(run).to_json()["totals"] == {"passed": 1}
    for broken in ({**run, "device": {"kind": "cpu"}}, {**run, "manifest": {"device_name": "cpu", "nope": 1}}):
        with pytest.raises(UsageError, match="does not describe a run"):
            RunSpec.from_json(broken)


def test_workers_read_the_spec_and_the_live_manifest(tmp_path, monkeypatch, cli):
    from torchcts.engine.plugin import RunState
    from torchcts.results.records import rundir

    monkeypatch.chdir(tmp_path)
    assert cli(["init", "--template", "minimal"]) == 0
    manifest = str(tmp_path / "manifest.py")
    opened = _opened(tmp_path, "--device", "cpu", "--manifest", manifest)
    assert opened.spec.manifest_arg == manifest  # the controller's spec: as given
    written = rundir.read_run(opened.run_dir).manifest_arg
    assert written != manifest and not os.path.isabs(written)  # run.json keeps it scrubbed
    worker = RunState(opened.run_dir, manifest)  # a worker gets the live one with --torchcts-manifest-arg
    assert worker.spec.manifest_arg == manifest and worker.spec.selection.dtypes == ["float32"]
    assert worker.spec.timeout_s is None and worker.spec.rerun_failures == 2 and worker.strict is False
    argv = shlex.split(worker.repro(CaseRecord(id="x/y", status="failed")))  # quoted where scrubbing would hide it
    assert argv[argv.index("--manifest") + 1] == manifest
    assert RunState(opened.run_dir).spec.manifest_arg == written


def test_pytest_without_the_controllers_recorder_is_refused(tmp_path):
    """The Recorder is built by whoever calls pytest.main (engine/session.py), never by the plugin:
    a bare `pytest --torchcts-run-dir` would run cases and record nothing."""
    from torchcts.engine.execute import pytest_argv

    opened = _opened(tmp_path, "--validation")
    argv = pytest_argv(opened.run_dir, tmp_path / "res", ["-p", "no:cacheprovider"])
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    r = subprocess.run([sys.executable, "-m", "pytest", *argv], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == pytest.ExitCode.USAGE_ERROR, r.stdout + r.stderr
    assert "torchcts run" in r.stderr
    assert not (opened.run_dir / "cases.jsonl").read_text().count('"passed"')


def test_a_sessions_recorder_is_built_from_the_argv_its_workers_read(tmp_path):
    """The controller and each rerun process (`python -m torchcts.engine.session`) build their Recorder
    from pytest's argv: the attempt, the workers' log folder and the live --manifest arrive one way."""
    from torchcts.engine.execute import pytest_argv
    from torchcts.engine.session import build_recorder, option

    argv = ["x::a", "--torchcts-run-dir=/r", "--torchcts-attempt=2", "-q", "--torchcts-attempt=3"]
    assert option(argv, "--torchcts-attempt") == "3" and option(argv, "--torchcts-run-dir") == "/r"
    assert option(argv, "--torchcts-work-dir") is None
    opened = _opened(tmp_path, "--validation")
    argv = pytest_argv(opened.run_dir, tmp_path / "res", ["-q"], tmp_path / "w", "my dir/m.py")
    first = build_recorder(argv)
    assert first.judge.annotate.attempt == 1 and first.work_dir == tmp_path / "w"
    assert first.state.spec.manifest_arg == "my dir/m.py" and first.state.spec.planned == opened.spec.planned
    first.writer.close()
    rerun = build_recorder([*argv, "--torchcts-attempt=2"])  # engine/rerun.py appends it
    assert rerun.judge.annotate.attempt == 2
    rerun.writer.close()
    with pytest.raises(UsageError, match="--torchcts-run-dir"):
        build_recorder(["-q"])


def test_close_run_raises_the_write_the_recorder_could_not_make(tmp_path):
    """No module-level flag: the Recorder's writer keeps the file system's refusal, close_run raises
    it (the CLI's one-line exit 2) before finalising a run with records missing."""
    from types import SimpleNamespace

    from torchcts.engine.execute import close_run, exit_code

    opened = _opened(tmp_path, "--validation")
    refused = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "cases.jsonl")
    recorder = SimpleNamespace(writer=SimpleNamespace(failure=refused))
    with pytest.raises(OSError) as info:
        close_run(opened, 0, recorder)
    assert info.value is refused
    assert json.loads((opened.run_dir / "run.json").read_text())["status"] == "running"  # not finalised
    from torchcts.model.run import Run

    none = Run()
    assert exit_code(pytest.ExitCode.INTERRUPTED, none) == 130 and exit_code(pytest.ExitCode.USAGE_ERROR, none) == 2
    assert exit_code(pytest.ExitCode.INTERNAL_ERROR, none) == 3
    assert exit_code(pytest.ExitCode.OK, Run(totals={"passed": 3})) == 0
    assert exit_code(pytest.ExitCode.TESTS_FAILED, Run(totals={"passed": 3, "failed": 1})) == 1
