"""Planted misbehaviour: segfault, os._exit, hang, raise, wrong value, slow pass (docs/internals.md, "How a run flows").

The run must finish, record each with the right status and evidence, keep the other cases
intact, exit 1, and leave a run folder with no host identity or absolute path in it.
"""

from __future__ import annotations

import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from helpers.paths import TESTS
from helpers.runs import latest_run, records, run_cli, start_hanging_run
from helpers.suite_runs import PLANTED_ENV

from torchcts.results.records import rundir


def test_planted_run(tmp_path):
    """One run (worker start-ups are the cost), every check on it; xdist would split a shared fixture."""
    cwd = tmp_path
    r = run_cli("run", "--device", "cpu", "--suite", "planted", "--timeout", "8", "--", "-p", "no:benchmark",
                cwd=cwd, env=PLANTED_ENV, timeout=300)
    run = latest_run(cwd)
    planted_run = r, run, {rec["id"]: rec for rec in records(run)}
    check_each_misbehaviour_gets_its_status(planted_run)
    check_crash_and_timeout_evidence(planted_run)
    check_artifacts_written(planted_run)
    check_run_folder_has_no_host_identity(planted_run)


def check_each_misbehaviour_gets_its_status(planted_run):
    r, run, recs = planted_run
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    status = {k: v["status"] for k, v in recs.items()}
    assert status["planted/b_segfault/float32"] == "crashed"
    assert status["planted/g_exit/float32"] == "crashed"
    assert status["planted/d_hang/float32"] == "timeout"
    assert status["planted/e_raises/float32"] == "error"
    assert status["planted/h_wrong_value/float32"] == "failed"
    # the others, including those a replaced worker ran after a crash, are not blamed
    passing = [k for k in status if "_ok" in k or "slow_pass" in k]
    assert len(passing) == 7 and all(status[k] == "passed" for k in passing), status
    assert len(recs) == 12


def check_crash_and_timeout_evidence(planted_run):
    _, run, recs = planted_run
    seg = recs["planted/b_segfault/float32"]
    assert seg["signal"] == "SIGSEGV" and "Segmentation fault" in seg["output_tail"]
    assert "b_segfault" in seg["output_tail"]  # the tail shows where it crashed
    assert seg["duration_s"] < 3 and seg["repro"].endswith("--case planted/b_segfault/float32")
    # when it started, from the dead process's start marker: the run's timeline places its crashes
    passed_at = [r["started_at"] for r in recs.values() if r["status"] == "passed"]
    assert min(passed_at) - 120 < seg["started_at"] < max(passed_at) + 120
    ex = recs["planted/g_exit/float32"]
    assert ex["exit_code"] == 7 and "exit code 7" in ex["message"]
    hang = recs["planted/d_hang/float32"]
    assert hang["timeout_s"] == 8 and 7.5 < hang["duration_s"] < 40
    assert "time.sleep(600)" in hang["output_tail"]
    slow = recs["planted/f_slow_pass/float32"]
    assert slow["duration_s"] >= 1.0
    wrong = recs["planted/h_wrong_value/float32"]
    assert wrong["mismatch"]["max_abs_error"] == pytest.approx(0.5)
    spec = json.loads((run / "run.json").read_text())
    assert spec["status"] == "complete" and spec["isolation"] is True
    assert spec["totals"] == {"passed": 7, "failed": 1, "error": 1, "crashed": 2, "timeout": 1}


def check_artifacts_written(planted_run):
    r, run, _ = planted_run
    for name in ("run.json", "cases.jsonl", "junit.xml", "summary.md", "report.html", "plan.jsonl"):
        assert (run / name).is_file(), name
    assert "TorchCTS scorecard" in r.stdout and "by capability" not in r.stdout  # planted cases need none
    assert "repro: torchcts run --device cpu --case planted/b_segfault/float32" in r.stdout


def _identity_strings(cwd: Path) -> list[str]:
    found = [str(Path.home()), str(cwd), str(cwd.resolve()), tempfile.gettempdir(), str(TESTS.parent)]
    host = socket.gethostname()
    if len(host) >= 4:  # a two-letter host name would match ordinary words
        found.append(host)
    found.append(f"/{getpass.getuser()}/")
    return [s for s in found if s and s != "/"]


def check_run_folder_has_no_host_identity(planted_run):
    _, run, _ = planted_run
    cwd = run.parent.parent
    needles = _identity_strings(cwd)
    for path in run.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            for needle in needles:
                assert needle not in text, f"{path.name} contains {needle!r}"
    plan = (run / "plan.jsonl").read_text()
    assert "/" not in "".join(json.loads(line)["runner"] for line in plan.splitlines())


def test_in_process_timeout_and_error(tmp_path):
    """`--no-isolation`: pytest-timeout interrupts the hung case in-process; it is still `timeout`."""
    r = run_cli("run", "--device", "cpu", "--no-isolation", "--timeout", "2", "--case", "planted/d_hang/*",
                "--case", "planted/e_raises/*", "--case", "planted/a_ok/*", "--", "-p", "no:benchmark",
                cwd=tmp_path, env=PLANTED_ENV, timeout=120)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    recs = {rec["id"]: rec["status"] for rec in records(latest_run(tmp_path))}
    assert recs == {"planted/d_hang/float32": "timeout", "planted/e_raises/float32": "error",
                    "planted/a_ok/float32": "passed"}
    assert json.loads((latest_run(tmp_path) / "run.json").read_text())["isolation"] is False


def wait_for_records(root: Path, count: int, seconds: float = 120) -> None:
    """Until the latest run under root has `count` records (the run is in its hang by then)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if rundir.latest_run(root / "results") is not None:
            cases = latest_run(root) / "cases.jsonl"
            if cases.is_file() and len(cases.read_text().splitlines()) >= count:
                return
        time.sleep(0.2)
    pytest.fail(f"the run never recorded {count} cases")


def test_killed_run_keeps_records_and_report_rebuilds(tmp_path):
    env = {**os.environ, "CI": "true", **PLANTED_ENV, "PLANTED_HANG_LAST": "1"}
    args = [sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--timeout", "120",
            "--case", "planted/a_ok/*", "--case", "planted/i_ok/*", "--case", "planted/z_hang/*",
            "--", "-p", "no:benchmark", "-n", "1"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_records(tmp_path, 5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    run = latest_run(tmp_path)
    assert json.loads((run / "run.json").read_text())["status"] == "running"
    kept = records(run)
    assert len(kept) == 5 and {r["status"] for r in kept} == {"passed"}
    r = run_cli("report", cwd=tmp_path)
    assert r.returncode == 1, r.stderr  # a not_run case: report exits by the verdict, as run would
    spec = json.loads((run / "run.json").read_text())
    # the planned case that never finished is listed as not_run, in every report (SPEC: nothing lost)
    assert spec["status"] == "interrupted" and spec["totals"] == {"passed": 5, "not_run": 1}
    assert "run interrupted" in r.stdout and "1 planned cases have no result (not_run)" in r.stdout
    for name in ("junit.xml", "summary.md", "report.html"):
        text = (run / name).read_text()
        assert "not_run" in text and "planted/z_hang/float32" in text, name
    assert len(records(run)) == 5  # report never rewrites the records


def test_sigterm_finalises_like_ctrl_c(tmp_path):
    """A cancelled CI job sends SIGTERM: the run folder is finalised as interrupted, with reports."""
    proc = start_hanging_run(tmp_path, PLANTED_ENV)
    try:
        wait_for_records(tmp_path, 1)
        time.sleep(1.0)  # the hang has started
        proc.send_signal(signal.SIGTERM)  # the controller only, as `timeout` or a CI runner does
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, out
    run = latest_run(tmp_path)
    spec = json.loads((run / "run.json").read_text())
    assert spec["status"] == "interrupted" and spec["totals"] == {"passed": 1, "not_run": 1}, spec["totals"]
    for name in ("junit.xml", "summary.md", "report.html"):
        assert "planted/z_hang/float32" in (run / name).read_text(), name
