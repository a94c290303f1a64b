"""The simulated device: clean it passes, and each planted fault is caught by the case meant to.

Every run is a subprocess (the sim renames PrivateUse1 for the whole process; faults crash and
hang) with a focused selection, so each takes a few seconds and the set parallelises under -n.
This process never imports torchcts.sim: the fault list comes from `fault_catalog()` (a child).
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import latest_run, records, run_cli

from torchcts.engine.selftest import SIM_MANIFEST, Outcome, fault_catalog, judge, missing_cases, run_one

HERE = Path(__file__).parent
FAULTS = {f["name"]: f for f in fault_catalog()}


def test_sim_device_semantics():
    r = subprocess.run([sys.executable, str(HERE / "sim_semantics_check.py")], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_every_fault_misbehaves_only_when_planted():
    """Independent of the suites: each fault's bug is visible when planted and absent otherwise."""
    r = subprocess.run([sys.executable, str(HERE / "sim_fault_probes.py")], capture_output=True, text=True,
                       timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip().endswith("DONE"), r.stdout + r.stderr
    probed = {line.split()[0] for line in r.stdout.splitlines() if line.endswith(" ok")}
    assert probed | {"mul_complex128_segv", "sub_int16_hang"} == set(FAULTS)


def test_clean_sim_passes_level1(tmp_path):
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--level", "1", "--", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = records(latest_run(tmp_path))
    assert recs and {rec["status"] for rec in recs} == {"passed"}
    run = json.loads((latest_run(tmp_path) / "run.json").read_text())
    assert run["device"]["type"] == "sim" and run["manifest"]["backend_import"] == "torchcts.sim"


def test_fault_registry_is_well_formed():
    assert len(FAULTS) >= 15
    assert len({f["suite"] for f in FAULTS.values()}) >= 6
    for f in FAULTS.values():
        assert f["description"] and f["catches"], f["name"]
        assert all(g.split("/")[0] in (f["suite"], "opinfo", "operators") for g in f["catches"]), f["name"]
        assert f["selection"][:4] == ["--suite", f["suite"], "--level-exact", str(f["level"])]


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_is_caught_by_its_case(name, tmp_path):
    fault = FAULTS[name]
    why = missing_cases(fault["suite"], fault["level"])
    if why:
        pytest.skip(f"{why}: the '{fault['suite']}' suite (level {fault['level']}) must land before {name} "
                    "can be measured")
    out = run_one(name, fault["selection"], tmp_path / "results", fault=name, catches=tuple(fault["catches"]),
                  stop_first=True, case_timeout=15, run_timeout=600)
    assert out.detected, f"{name} went undetected: {out}"
    assert any(fnmatch.fnmatchcase(out.first_case, g) for g in fault["catches"]), (
        f"{name} was caught by {out.first_case}, not by {fault['catches']}")


def _write_run(run_dir: Path, plan: list[str], recs: list[tuple[str, str]]) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / "plan.jsonl").write_text("".join(json.dumps({"id": c}) + "\n" for c in plan))
    (run_dir / "cases.jsonl").write_text("".join(json.dumps({"id": c, "status": s}) + "\n" for c, s in recs))


def test_judge_reads_failures_crashes_and_clean_runs(tmp_path):
    _write_run(tmp_path / "a", ["x/1", "x/2", "x/3"], [("x/1", "passed"), ("x/2", "failed")])
    out = judge("f", tmp_path / "a", 1, 1.0, ("x/2",))
    assert out.detected and out.first_case == "x/2" and out.status == "failed" and out.meant
    # killed by SIGSEGV after x/1: the crash is the first planned case without a record
    _write_run(tmp_path / "b", ["x/1", "x/2", "x/3"], [("x/1", "passed")])
    out = judge("f", tmp_path / "b", -11, 1.0, ("y/*",))
    assert out.detected and out.status == "crashed" and out.first_case == "x/2" and not out.meant
    _write_run(tmp_path / "c", ["x/1"], [("x/1", "passed")])
    assert not judge("clean", tmp_path / "c", 0, 1.0).detected
    out = judge("f", tmp_path / "c", 2, 1.0)
    assert not out.detected and "usage or internal" in out.note


def test_selftest_exits_1_when_a_fault_is_missed(cli, monkeypatch, tmp_path, capsys):
    import torchcts.engine.selftest as st

    def fake(name, *args, **kwargs):  # noqa: ANN001,ANN202
        return Outcome(name, name == "abs_zero_dim", first_case="operators/elementwise/abs/int8",
                       status="failed", meant=True, seconds=0.5)

    monkeypatch.setattr(st, "run_one", fake)
    monkeypatch.setattr(st, "fault_catalog", lambda: list(FAULTS.values()))
    base = ["selftest", "--no-clean", "--results-dir", str(tmp_path)]
    assert cli([*base, "--fault", "abs_zero_dim"]) == 0
    assert "abs_zero_dim" in capsys.readouterr().out
    assert cli([*base, "--fault", "abs_zero_dim", "--fault", "neg_vector_tail"]) == 1
    table = capsys.readouterr().out
    assert "neg_vector_tail" in table and "NO" in table


def test_selftest_cli_end_to_end(tmp_path):
    # the crash fault: the run dies by SIGSEGV mid-case and the table still names the case
    r = run_cli("selftest", "--no-clean", "--fault", "mul_complex128_segv", "--results-dir", "res", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("mul_complex128_segv"))
    assert line.split()[1:5] == ["yes", "operators/elementwise/mul/complex128", "crashed", "yes"], line
    assert (tmp_path / "res" / "selftest" / "mul_complex128_segv" / "latest").is_file()
    r = run_cli("selftest", "--list", cwd=tmp_path)
    assert r.returncode == 0 and all(name in r.stdout for name in FAULTS)
