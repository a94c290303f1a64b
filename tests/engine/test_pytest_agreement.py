"""pytest's own output agrees with TorchCTS (issue 22, item 4): an expected failure is pytest's xfailed,
`-x` stops at the first failure that counts, the exit codes are the documented ones (SIGINT: 130),
and no internal path or assertion-rewrite warning is printed on every run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers.paths import REPO, TESTS
from helpers.runs import latest_run, records, run_cli, start_hanging_run

from torchcts.results.records import rundir

PLANTED_ENV = {
    "TORCHCTS_EXTRA_SUITES": "planted=helpers.planted",
    "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]),
}
MANIFEST = '''
import torch
manifest = {
    "manifest_version": 1, "device_name": "cpu",
    "supported_dtypes": {torch.float32: True},
    "capabilities": {"inference": True, "training": False, "rng": False, "device_api": False, "multi_device": False},
    "expectations": [
        {"match": "planted/e_raises/*", "status": "xfail", "reason": "kernel missing, BUG-7",
         "signature": "RuntimeError: planted backend error*"},
        {"match": "planted/f_slow_pass/*", "status": "xfail", "reason": "was broken"},
    ],
}
'''
# In plan order: a_ok passes, e_raises fails as the ledger expects, f_slow_pass passes although
# expected to fail (xpassed), h_wrong_value fails for real, i_ok/* pass.
SELECTION = ("--case", "planted/a_ok/*", "--case", "planted/e_raises/*", "--case", "planted/f_slow_pass/*",
             "--case", "planted/h_wrong_value/*", "--case", "planted/i_ok/*")


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "manifest.py").write_text(MANIFEST)
    return run_cli("run", "--device", "cpu", *SELECTION, *args, cwd=tmp_path, env=PLANTED_ENV, timeout=300)


def _check_plain_output(out: str) -> None:
    assert "rootdir:" not in out and "configfile:" not in out
    assert "PytestAssertRewriteWarning" not in out
    assert str(REPO / "torchcts") not in out  # no internal install path in node ids


@pytest.mark.parametrize("workers", ["0", "1"])
def test_expected_failure_is_xfailed_and_x_stops_at_the_first_real_failure(tmp_path, workers):
    r = _run(tmp_path, "--", "-x", "-n", workers, "-p", "no:benchmark")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-3000:]
    _check_plain_output(out)
    assert "1 failed, 1 passed, 1 xfailed, 1 xpassed" in out, out[-2000:]
    assert "FAILED torchcts::planted/h_wrong_value/float32" in out
    assert "planted/e_raises/float32 ____" not in out  # not in the FAILURES section
    assert "FAILED torchcts::planted/e_raises" not in out
    statuses = {rec["id"]: rec["status"] for rec in records(latest_run(tmp_path))}
    assert statuses == {"planted/a_ok/float32": "passed", "planted/e_raises/float32": "xfailed",
                        "planted/f_slow_pass/float32": "xpassed", "planted/h_wrong_value/float32": "failed"}
    run = json.loads((latest_run(tmp_path) / "run.json").read_text())
    # -x stopped it on purpose: not "interrupted", not exit 130; planted cases left without a result are
    # never a "complete" run (issue 40)
    assert run["status"] == "incomplete" and run["totals"].get("not_run")


def test_expected_failures_alone_exit_0_and_strict_xpass_fails_in_pytest_too(tmp_path):
    (tmp_path / "manifest.py").write_text(MANIFEST)
    base = ("run", "--device", "cpu", "--case", "planted/e_raises/*", "--case", "planted/f_slow_pass/*")
    r = run_cli(*base, "--", "-n", "0", "-p", "no:benchmark", cwd=tmp_path, env=PLANTED_ENV, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "1 xfailed, 1 xpassed" in r.stdout and not re.search(r"\d+ failed|^FAILED ", r.stdout, re.M)
    r = run_cli(*base, "--strict-expectations", "--", "-n", "0", "-p", "no:benchmark",
                cwd=tmp_path, env=PLANTED_ENV, timeout=300)
    assert r.returncode == 1
    assert "1 failed, 1 xfailed" in r.stdout and "[XPASS(strict)] expectations[1]" in r.stdout


def test_sigint_exits_130_and_keeps_the_finished_records(tmp_path):
    """Ctrl-C (SIGINT to the process group) during a hanging case: exit 130, run.json `interrupted`,
    the records finished before it kept; not 0 (a false clean) and not 1/2/3 (no verdict)."""
    proc = start_hanging_run(tmp_path, PLANTED_ENV)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            latest = rundir.latest_run(tmp_path / "results")
            cases = latest / "cases.jsonl" if latest is not None else None
            if cases is not None and cases.is_file() and cases.read_text().strip():
                break
            time.sleep(0.2)
        else:
            pytest.fail("the run never recorded its passing case")
        time.sleep(1.0)  # z_hang is running now
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, out[-3000:]
    run = json.loads((latest_run(tmp_path) / "run.json").read_text())
    assert run["status"] == "interrupted"
    assert {r["id"]: r["status"] for r in records(latest_run(tmp_path))}["planted/a_ok/float32"] == "passed"


@pytest.mark.parametrize("workers", ["0", "1"])
def test_pytest_k_deselection_is_filtered_not_a_failure(tmp_path, workers):
    """`-- -k` is the user's selection: the cases it drops are `filtered` (exit 0 on passing cases),
    never `not_run`, which would fail a correct backend's run."""
    (tmp_path / "manifest.py").write_text(MANIFEST)
    r = run_cli("run", "--device", "cpu", "--case", "planted/a_ok/*", "--case", "planted/i_ok/*",
                "--", "-k", "a_ok", "-n", workers, cwd=tmp_path, env=PLANTED_ENV, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    recs = records(latest_run(tmp_path))
    by_status = {rec["id"]: rec["status"] for rec in recs}
    assert {s for i, s in by_status.items() if i.startswith("planted/a_ok/")} == {"passed"}
    dropped = {s for i, s in by_status.items() if i.startswith("planted/i_ok/")}
    assert dropped == {"filtered"}, by_status


def test_the_record_rides_the_report_and_never_reaches_junitxml(tmp_path):
    """Workers ship the typed record on pytest's report (its serialisation hooks), not in
    user_properties, which pytest's own --junitxml writes out as <property> elements."""
    (tmp_path / "manifest.py").write_text(MANIFEST)
    xml = tmp_path / "pytest-junit.xml"
    r = run_cli("run", "--device", "cpu", "--case", "planted/a_ok/*", "--case", "planted/e_raises/*",
                "--", "-n", "1", "-p", "no:benchmark", f"--junitxml={xml}", cwd=tmp_path, env=PLANTED_ENV, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    text = xml.read_text()
    assert "torchcts::planted/e_raises/float32" in text or "planted/e_raises/float32" in text
    assert "torchcts_record" not in text and "<property" not in text
    recs = {rec["id"]: rec for rec in records(latest_run(tmp_path))}
    assert recs["planted/e_raises/float32"]["status"] == "xfailed"  # judged in the worker, shipped typed
    assert recs["planted/e_raises/float32"]["expectation"]["reason"] == "kernel missing, BUG-7"
    assert recs["planted/a_ok/float32"]["worker"] == "gw0"
