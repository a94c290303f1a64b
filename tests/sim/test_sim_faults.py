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
from helpers import command_server
from helpers.paths import HELPERS
from helpers.runs import latest_run, records, run_cli
from helpers.sim_fault_groups import AXIS, FAULTS, GROUPS, UNLISTED

from torchcts import compat
from torchcts.engine.selftest import ENV, SIM_MANIFEST, Outcome, judge, missing_cases, run_one
from torchcts.model.status import FAILURES
from torchcts.results.records import rundir


def test_sim_device_semantics():
    r = subprocess.run([sys.executable, str(HELPERS / "sim_semantics_check.py")], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_every_fault_misbehaves_only_when_planted():
    """Independent of the suites: each fault's bug is visible when planted and absent otherwise."""
    r = subprocess.run([sys.executable, str(HELPERS / "sim_fault_probes.py")], capture_output=True, text=True,
                       timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip().endswith("DONE"), r.stdout + r.stderr
    probed = {line.split()[0] for line in r.stdout.splitlines() if line.endswith(" ok")}
    assert probed | set(PROCESS_FAULTS) | UNLISTED | AXIS == set(FAULTS)


def test_clean_sim_passes_level1(tmp_path):
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--level", "1", "--no-isolation",
                "--", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = records(latest_run(tmp_path))
    # not_applicable: CPU, the reference, has no kernel (arange/linspace of bool and complex)
    assert recs and {rec["status"] for rec in recs} <= {"passed", "not_applicable"}
    assert sum(rec["status"] == "passed" for rec in recs) > 0.95 * len(recs)
    run = json.loads((latest_run(tmp_path) / "run.json").read_text())
    assert run["device"]["type"] == "sim" and run["manifest"]["backend_import"] == "torchcts.sim"


def test_fault_registry_is_well_formed():
    assert len(FAULTS) >= 15
    assert len({f["suite"] for f in FAULTS.values()}) >= 6
    for f in FAULTS.values():
        assert f["description"] and f["catches"], f["name"]
        assert all(g.split("/")[0] in (f["suite"], "opinfo", "operators") for g in f["catches"]), f["name"]
        if f["unlisted"] or f["axis"]:  # found by exploration or one axis: the plain `--op` run a user types
            assert f["selection"] == ["--op", f["op"]], f["name"]
        elif f["repeat"]:  # wrong only sometimes (sim/faults_flaky.py): that run, each case repeated
            assert f["selection"] == ["--op", f["op"], "--repeat", str(f["repeat"])], f["name"]
        else:
            assert f["selection"][:4] == ["--suite", f["suite"], "--level-exact", str(f["level"])]


# The sim claims compile on PyTorch 2.12+ only (compat.python_backend_compiles): elsewhere its compiler
# fault and compiler cases are left out (selftest lists the fault n/a).
COMPILES = compat.python_backend_compiles()
# ... and distributed on 2.12+ only (compat.gloo_has_every_collective: its c10d backend is gloo's).
COLLECTIVES = compat.gloo_has_every_collective()
# These need worker isolation: test_selftest_cli_end_to_end, test_selftest_catches_the_crash_heavy_fault
PROCESS_FAULTS = ("mul_complex128_segv", "sub_int16_hang", "reduce_float32_segv", "out_resize_segv",
                  "abs_illegal_address_sticky")
GROUPED = {name for g in GROUPS.values() for name in g["caught"]}  # type: ignore[attr-defined]


def test_every_fault_is_measured_somewhere():
    """A new fault must join a group, the CLI test, or the per-fault test below."""
    alone = [n for n in FAULTS if n not in GROUPED and n not in PROCESS_FAULTS and n not in UNLISTED | AXIS]
    assert all(FAULTS[n]["suite"] == "opinfo" for n in alone), alone


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_faults_are_caught_by_their_cases(group, tmp_path):
    caught: dict[str, str] = GROUPS[group]["caught"]  # type: ignore[assignment]
    controls: tuple[str, ...] = GROUPS[group]["controls"]  # type: ignore[assignment]
    if not COMPILES:
        caught = {n: c for n, c in caught.items() if FAULTS[n]["suite"] != "compiler_ops"}
        controls = tuple(c for c in controls if not c.startswith("compiler_ops/"))
    if not COLLECTIVES and group == "distributed":
        pytest.skip("the sim claims distributed on PyTorch 2.12+ only (2.7's gloo lacks AVG, reduce_scatter, alltoall)")
    for name, case in caught.items():
        assert any(fnmatch.fnmatchcase(case, g) for g in FAULTS[name]["catches"]), (name, case)
    selection = [a for case in (*caught.values(), *controls) for a in ("--case", case)]
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--no-isolation", "--timeout", "120",
                *selection, "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path, env={ENV: ",".join(caught)})
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    status = {rec["id"]: rec["status"] for rec in records(latest_run(tmp_path))}
    assert set(status) == {*caught.values(), *controls}
    for name, case in caught.items():
        assert status[case] in FAILURES, f"{name} was not caught by {case}: {status[case]}"
    assert {c: status[c] for c in controls} == dict.fromkeys(controls, "passed")


@pytest.mark.parametrize("name", sorted(n for n in FAULTS if n not in GROUPED | UNLISTED | AXIS and n not in PROCESS_FAULTS))
def test_fault_is_caught_by_its_case(name, tmp_path):
    """Faults aimed at suites built elsewhere (OpInfo): a focused run of their suite, op and dtype."""
    fault = FAULTS[name]
    why = missing_cases(fault["suite"], fault["level"])
    if why:
        pytest.skip(f"{why}: the '{fault['suite']}' suite (level {fault['level']}) must land before {name} "
                    "can be measured")
    out = run_one(name, fault["selection"], tmp_path / "results", fault=name, catches=tuple(fault["catches"]),
                  stop_first=True, case_timeout=60, run_timeout=600, isolation=False, launch=command_server.launch)
    assert out.detected, f"{name} went undetected: {out}"
    assert out.meant, f"{name} was caught by {out.first_case}, not by {fault['catches']}"


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

    def fake(name, *args, **kwargs):
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
    """The process-level faults, through the CLI with worker isolation: a SIGSEGV in one op is recorded
    `crashed` on its case, a hang `timeout` after `torchcts run --timeout`, and the table names both."""
    r = run_cli("selftest", "--no-clean", "--fault", "mul_complex128_segv", "--fault", "sub_int16_hang",
                "--timeout", "5", "--results-dir", "res", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {ln.split()[0]: ln.split()[1:5] for ln in r.stdout.splitlines() if ln.split()}
    assert rows["mul_complex128_segv"] == ["yes", "operators/elementwise/mul/complex128", "crashed", "yes"], r.stdout
    assert rows["sub_int16_hang"] == ["yes", "operators/elementwise/sub/int16", "timeout", "yes"], r.stdout
    assert rundir.latest_run(tmp_path / "res" / "selftest" / "mul_complex128_segv") is not None
    r = run_cli("selftest", "--list", cwd=tmp_path)
    assert r.returncode == 0 and all(name in r.stdout for name in FAULTS)


@pytest.mark.timeout(600)
def test_selftest_catches_the_crash_heavy_fault(tmp_path):
    """reduce_float32_segv (the crash budget's measurement, docs/speed.md): its first case crashes."""
    r = run_cli("selftest", "--no-clean", "--fault", "reduce_float32_segv", "--timeout", "60", "--results-dir", "res",
                cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    row = next(ln.split()[1:5] for ln in r.stdout.splitlines() if ln.startswith("reduce_float32_segv"))
    assert row[0] == "yes" and row[1].startswith("operators/reduction/sum/") and row[2:] == ["crashed", "yes"], r.stdout


DEPTH_FAULTS = ("index_add_ignores_offset", "cumsum_narrow_accumulator", "mm_k_tail", "cat_first_dtype",
                "dropout_scale_inverted", "copy_same_layout_skipped")
SURFACE_FAULTS = tuple(GROUPS["surfaces"]["caught"])  # type: ignore[arg-type]


@pytest.mark.parametrize("name", DEPTH_FAULTS + SURFACE_FAULTS)
def test_depth_fault_reached_by_a_plain_op_selection(name):
    """`torchcts run --device sim --manifest <sim> --op <op>` (no other selection) plans the case that
    catches the fault (the run itself: tests above, docs/depth.md and docs/coverage.md); for the
    depth faults OpInfo's own cases of the op are planned beside it: the bug class is one they miss."""
    from torchcts.cases.registry import iter_cases
    from torchcts.engine.selection import select
    from torchcts.manifest.load import load_manifest
    from torchcts.model.selection import Selection

    fault = FAULTS[name]
    if fault["suite"] == "compiler_ops" and not COMPILES:
        pytest.skip("the sim claims compile on PyTorch 2.12+ only")
    caught = GROUPS["depth" if name in DEPTH_FAULTS else "surfaces"]["caught"][name]  # type: ignore[index]
    planned = {c.id for c in select(iter_cases(), load_manifest(SIM_MANIFEST), Selection(ops=[fault["op"]])).to_run}
    assert caught in planned, (name, fault["op"])
    assert any(fnmatch.fnmatchcase(caught, g) for g in fault["catches"])
    assert name in SURFACE_FAULTS or any(case.startswith("opinfo/") for case in planned), (name, fault["op"])



@pytest.mark.timeout(600)
def test_selftest_catches_the_crash_storm_fault(tmp_path):
    """out_resize_segv (issue 40 item 2: a crash storm across ops, bench/crash.py --storm): every op's
    out= resize crashes; the first failing case is an out_variants case, `crashed`."""
    r = run_cli("selftest", "--no-clean", "--fault", "out_resize_segv", "--timeout", "60", "--results-dir", "res",
                cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    row = next(ln.split()[1:5] for ln in r.stdout.splitlines() if ln.startswith("out_resize_segv"))
    assert row[0] == "yes" and row[1].startswith("out_variants/") and row[2:] == ["crashed", "yes"], r.stdout
