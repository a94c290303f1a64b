"""End to end on a planted-fault "backend" (tests/helpers/ledger_faults.py, device cpu):
the ledger, strict expectations, flake detection by rerun, triage, and a standalone repro script.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import HELPERS
from helpers.runs import latest_run, records, run_cli

ADD = "operators/elementwise/add/float32"

MANIFEST = '''
import torch
manifest = {
    "manifest_version": 1, "device_name": "cpu", "backend_import": "ledger_faults",
    "supported_dtypes": {torch.float32: True},
    "capabilities": {"inference": True, "training": False, "rng": False, "device_api": False, "multi_device": False},
    "expectations": [
        {"match": "operators/elementwise/sub/*", "status": "xfail", "reason": "no sub kernel yet",
         "tracker": "BUG-1", "expires": "2020-01-01", "signature": "missing_kernel"},
        {"match": {"op": "add", "dtype": torch.float32}, "status": "xfail", "reason": "add used to raise",
         "signature": "RuntimeError: device lost*"},
        {"match": "operators/elementwise/mul/float32", "status": "xfail", "reason": "was broken"},
        {"match": {"op": "abs", "dtype": "float64"}, "status": "xfail", "reason": "not selected"},
    ],
}
'''


def _pythonpath(*extra: str) -> str:
    return os.pathsep.join([*extra, *filter(None, [os.environ.get("PYTHONPATH")])])


def _final(run_dir: Path) -> dict[str, dict]:
    return {r["id"]: r for r in records(run_dir)}  # later records supersede


def _run_script(script: Path, cwd: Path, faults: dict[str, str]) -> subprocess.CompletedProcess:
    """Run the repro with only the helper dir on the path and torchcts made unimportable."""
    code = ("import sys, runpy; sys.modules['torchcts'] = None; "
            f"runpy.run_path({str(script)!r}, run_name='__main__')")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", str(cwd)),
           "PYTHONPATH": str(HELPERS), **faults}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_faulty_backend_ledger_strict_flaky_triage_and_repro(tmp_path, monkeypatch, cli, capsys):
    (tmp_path / "manifest.py").write_text(MANIFEST)
    faults = {"LEDGER_FAULTS_WRONG": "add", "LEDGER_FAULTS_MISSING": "sub,abs",
              "LEDGER_FAULTS_FLAKY": f"neg:{tmp_path / 'neg-failed-once'}"}
    r = run_cli("run", "--device", "cpu", "--suite", "operators", "--dtype", "float32", "--level-exact", "1",
                "--rerun-failures", "1", "--strict-expectations", "--", "-q",
                cwd=tmp_path, env={**faults, "PYTHONPATH": _pythonpath(str(HELPERS))})
    assert r.returncode == 1, r.stdout + r.stderr
    run_dir = latest_run(tmp_path)
    final = _final(run_dir)
    status = {k.split("/")[2]: v["status"] for k, v in final.items() if k.startswith("operators/elementwise/")}
    assert status == {"add": "failed", "sub": "xfailed", "mul": "xpassed", "neg": "flaky", "abs": "error"}

    # a different signature stays failed, with the ledger's note; the expired entry still forgives
    assert "expects signature 'RuntimeError: device lost*'" in final[ADD]["expectation"]["note"]
    sub = final["operators/elementwise/sub/float32"]["expectation"]
    assert sub["reason"] == "no sub kernel yet" and sub["tracker"] == "BUG-1" and sub["expired"] is True
    # reruns append; the rerun's record supersedes; a pass on rerun is flaky with its first failure
    neg_records = [x for x in records(run_dir) if x["id"] == "operators/elementwise/neg/float32"]
    assert [x["status"] for x in neg_records] == ["error", "flaky"]
    assert neg_records[1]["first_failure"]["signature"] == "RuntimeError: transient device fault at <addr> (stream <n>)"
    assert final[ADD]["attempt"] == 2 and final[ADD]["repro_script"] == f"torchcts repro {ADD} --run results/{run_dir.name}"

    run = json.loads((run_dir / "run.json").read_text())
    assert run["strict_expectations"] is True and run["reruns"] == [{"attempt": 2, "cases": 3, "passed": 1}]
    assert [x["entry"] for x in run["ledger"]["expired"]] == [0]
    # entry 3 names abs on float64, outside this float32 selection: counted, never an unmatched failure
    assert run["ledger"]["unmatched"] == [] and run["ledger"]["outside_selection"] == 1
    assert run["ledger"]["xpassed"] == [{"id": "operators/elementwise/mul/float32", "entry": 2}]
    assert "strict expectations: the run fails on" in r.stdout and "UNMATCHED" not in r.stdout
    assert "4 entries (1 for cases outside this selection)" in r.stdout
    summary = (run_dir / "summary.md").read_text()
    assert "## Triage" in summary and "missing kernel: aten::abs.Tensor" in summary

    monkeypatch.chdir(tmp_path)
    assert cli(["report", "--triage"]) == 1  # the run has failures: report exits by its verdict
    out = capsys.readouterr().out
    assert "triage: 3 failing cases in 3 clusters" in out and "mismatch in aten::add: values differ" in out
    assert "scorecard" not in out and out.startswith("triage:")  # only the clusters

    # the standalone repro of the mismatch: only torch and the backend import, in an empty folder
    assert cli(["repro", ADD, "--run", run_dir.name]) == 0
    script = run_dir / "repro" / "operators__elementwise__add__float32" / "repro.py"
    assert cli(["report", str(Path("results") / "latest")]) == 1  # the link (or file) names the run (it failed)
    assert "href='repro/operators__elementwise__add__float32/repro.py'" in (run_dir / "report.html").read_text()
    assert "torchcts" not in script.read_text().split('"""', 2)[2].replace(ADD, "")
    empty = tmp_path / "empty"
    empty.mkdir()
    broken = _run_script(script, empty, {"LEDGER_FAULTS_WRONG": "add"})
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "MISMATCH output: values differ: 1/1 elements differ" in broken.stdout
    assert "atol 1e-05, rtol 1.3e-06" in broken.stdout
    fixed = _run_script(script, empty, {})
    assert fixed.returncode == 0 and "all samples match" in fixed.stdout, fixed.stdout + fixed.stderr


def test_negative_rerun_count_is_a_usage_error(cli, capsys):
    assert cli(["run", "--device", "cpu", "--rerun-failures", "-1"]) == 2
    assert "--rerun-failures" in capsys.readouterr().err
