"""The crash budget (issue 30 item 1): a crash signature seen N times in an op family is not re-run.

Planted crashes (tests/helpers/planted_crashes.py) on real xdist workers: family crashy_a crashes
five times with one signature, crashy_b twice with two. With `--crash-budget 2` crashy_a stops
after two crashes and its other cases are `not_run`, each saying why; crashy_b's two signatures
each have their own budget, so both run; the run still fails. `--no-crash-budget` runs every case.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.paths import TESTS
from helpers.runs import latest_run, records, run_cli

from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.workers.crash_budget import BUDGET_FILE, BudgetReader, CrashBudget, family_of, scope_of

ENV = {
    "TORCHCTS_EXTRA_SUITES": "crashy=helpers.planted_crashes",
    "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]),
}
A_SIGNATURE = "SIGSEGV at planted_crashes.py:_kernel_a_bad_pointer < planted_crashes.py:a_segv"


def _run(tmp_path: Path, *flags: str) -> tuple[int, str, dict[str, dict]]:
    r = run_cli("run", "--device", "cpu", "--suite", "crashy", "--timeout", "120", *flags,
                "--", "-n", "2", "-p", "no:benchmark", cwd=tmp_path, env=ENV, timeout=400)
    return r.returncode, r.stdout + r.stderr, {rec["id"]: rec for rec in records(latest_run(tmp_path))}


def test_the_budget_stops_a_family_after_n_crashes_with_one_signature(tmp_path):
    code, out, recs = _run(tmp_path, "--crash-budget", "2")
    assert code == 1, out[-3000:]  # the crashes fail the run; not_run fails it too
    a = {k: v for k, v in recs.items() if k.startswith("crashy/a_segv/")}
    status = sorted(v["status"] for v in a.values())
    assert len(a) == 5 and set(status) == {"crashed", "not_run"}, status
    assert status.count("crashed") >= 2 and status.count("not_run") >= 1, status
    for rec in a.values():
        if rec["status"] == "not_run":
            assert "op family 'crashy_a/float32'" in rec["message"] and "after 2 crashes" in rec["message"]
            assert A_SIGNATURE in rec["message"] and "--no-crash-budget" in rec["message"]
            assert rec["repro"].endswith(f"--case {rec['id']}")
    # Different signatures in one family do not share a budget: one crash each, both run.
    assert recs["crashy/b_segv/float32"]["status"] == recs["crashy/b_exit/float32"]["status"] == "crashed"
    assert recs["crashy/c_ok/float32"]["status"] == "passed"
    run = json.loads((latest_run(tmp_path) / "run.json").read_text())
    assert run["crash_budget"] == 2 and run["totals"]["not_run"] == status.count("not_run")
    assert "not_run" in run["totals"] and run["totals"]["crashed"] == status.count("crashed") + 2
    assert "the crash budget stopped their op family" in out
    summary = (latest_run(tmp_path) / "summary.md").read_text()
    assert "crash budget stopped op family" in summary


def test_no_crash_budget_runs_every_case(tmp_path):
    code, out, recs = _run(tmp_path, "--no-crash-budget", "--case", "crashy/a_segv/*")
    assert code == 1, out[-3000:]
    assert len(recs) == 5 and all(v["status"] == "crashed" for v in recs.values()), recs
    assert json.loads((latest_run(tmp_path) / "run.json").read_text())["crash_budget"] is None


def _case(op: str, dtype: str = "float32", opinfo: str | None = None) -> Case:
    return Case(id=f"s/{op}/{dtype}", suite="s", level=1, runner="m:f", ops=(op,), dtype=dtype,
                params={"op": opinfo} if opinfo else {})


def _crash(case: Case, func: str, status: Status = Status.CRASHED) -> CaseRecord:
    tail = f'Stack (most recent call first):\n  File "/x/kernels.py", line 3 in {func}\n'
    return CaseRecord.from_case(case, status=status, signal="SIGSEGV", output_tail=tail)


def test_budget_counts_per_family_and_signature_and_skips_ledger_forgiven_crashes(tmp_path):
    """Unit view: the controller's count, the file, the workers' reading of it."""
    budget, reader = CrashBudget(tmp_path, 2), BudgetReader(tmp_path)
    mul32, mul64 = _case("aten::mul.Tensor"), _case("aten::mul.Tensor", "complex128")
    div = _case("aten::div.Tensor", opinfo="div")
    assert family_of(mul32) == "mul/float32" and family_of(div) == "div/float32"
    budget.crashed(mul32, _crash(mul32, "k1"))
    budget.crashed(mul32, _crash(mul32, "k2"))  # another signature: its own count
    budget.crashed(mul32, _crash(mul32, "k1", Status.XFAILED))  # forgiven by the ledger: not counted
    in_cpu = _crash(mul32, "k1")
    in_cpu.attribution = {"reference": "run.py:reference_call"}  # CPU's death or not: its run alone says
    budget.crashed(mul32, in_cpu)
    budget.crashed(mul32, in_cpu)
    assert reader.stops(mul32) is None and not (tmp_path / BUDGET_FILE).exists()
    budget.crashed(mul32, _crash(mul32, "k1"))
    stop = reader.stops(mul32)
    assert stop and "'mul/float32' after 2 crashes" in stop and "kernels.py:k1" in stop
    assert reader.stops(mul64) is None and reader.stops(div) is None  # other dtype, other op
    (tmp_path / BUDGET_FILE).write_text("{not json")
    assert BudgetReader(tmp_path).stops(mul32) is None  # unreadable: run every case


@pytest.mark.parametrize("bad", [[], {"families": []}, {"families": {"x": 1}}])
def test_a_malformed_budget_file_runs_every_case(tmp_path, bad):
    (tmp_path / BUDGET_FILE).write_text(json.dumps(bad))
    assert BudgetReader(tmp_path).stops(_case("aten::x")) is None


def _op_case(op: str, kind: str, suite: str = "opinfo") -> Case:
    return Case(id=f"{suite}/{op}/float32/{kind}", suite=suite, level=2, runner="m:f", ops=(f"aten::{op}",),
                dtype="float32", kind=kind, params={"op": op})


def test_a_crash_cluster_across_op_families_stops_its_scope(tmp_path):
    """Issue 40 item 2, unit view: one signature crashing the `out` cases of two ops stops the scope's
    other cases (every op's), while a cluster that hits a small share of its scope does not."""
    budget, reader = CrashBudget(tmp_path, 2), BudgetReader(tmp_path)
    outs = [_op_case(f"op{i}", "out") for i in range(6)]
    forwards = [_op_case(f"op{i}", "forward") for i in range(6)]
    for case in forwards[:5]:  # a crash in one forward case of five: 20%, below the share
        budget.crashed(case, CaseRecord.from_case(case, status=Status.PASSED))
    budget.crashed(forwards[5], _crash(forwards[5], "resize"))
    budget.crashed(outs[0], _crash(outs[0], "resize"))
    assert reader.stops(outs[2]) is None  # one family so far
    budget.crashed(outs[1], _crash(outs[1], "resize"))
    stop = reader.stops(outs[4])
    assert stop and "crash cluster" in stop and "'opinfo/<op>/<dtype>/out'" in stop and "2 of its 2 cases" in stop
    assert "op0/float32, op1/float32" in stop and "--no-crash-budget" in stop
    assert reader.stops(forwards[0]) is None  # the forward scope: 2 crashes of 7 finished cases
    assert BudgetReader(tmp_path, obey_families=False).stops(outs[4]) is None  # a rerun runs what it reruns
    assert CrashBudget(tmp_path / "x", 0).limit == 0  # --no-crash-budget: nothing is counted


def test_one_crash_signature_across_dtypes_and_ops_is_one_storm(tmp_path):
    """Issue 48 item 5, unit view: OpenReg's out= resize crash was stopped once per dtype (7 storms of
    3-5 crashes); the scope masks the dtype, so crashes of two ops in two dtypes stop every dtype."""
    budget, reader = CrashBudget(tmp_path, 3), BudgetReader(tmp_path)

    def out(op: str, dtype: str) -> Case:
        return Case(id=f"opinfo/{op}/{dtype}/out", suite="opinfo", level=2, runner="m:f", ops=(f"aten::{op}",),
                    dtype=dtype, kind="out", params={"op": op})

    assert scope_of(out("add", "float64")) == scope_of(out("mul", "int32")) == "opinfo/<op>/<dtype>/out"
    for case in (out("add", "float32"), out("add", "float64"), out("mul", "int32")):
        budget.crashed(case, _crash(case, "resize_output"))
    for dtype in ("float16", "bfloat16", "complex64", "int64"):
        stop = reader.stops(out("sub", dtype))
        assert stop and "crash cluster" in stop and "add/float32, add/float64, mul/int32" in stop, stop
    assert reader.stops(_op_case("sub", "forward")) is None  # another kind of case runs on


def test_an_op_that_hung_gets_a_short_limit_for_its_later_cases(tmp_path):
    """Issue 40 item 3, unit view: after a timeout of sort, sort's other cases (every dtype) get
    HANG_FACTOR x their estimated cost, at least HANG_FLOOR_S, never more than the run's limit."""
    from torchcts.engine.shard import estimated_cost
    from torchcts.workers.crash_budget import HANG_FLOOR_S

    budget, reader = CrashBudget(tmp_path, 3), BudgetReader(tmp_path)
    first, later, other = _op_case("sort", "forward"), _op_case("sort", "out"), _op_case("topk", "forward")
    later16 = Case(id="opinfo/sort/int16/forward", suite="opinfo", level=2, runner="m:f", ops=("aten::sort",),
                   dtype="int16", kind="forward", params={"op": "sort"})
    assert reader.hang_limit(later, 300.0, estimated_cost) is None
    record = CaseRecord.from_case(first, status=Status.TIMEOUT, message="exceeded the 300 s timeout", timeout_s=300.0)
    budget.hung(first, record)
    short = reader.hang_limit(later, 300.0, estimated_cost)
    assert short is not None and HANG_FLOOR_S <= short < 300.0
    assert reader.hang_limit(later16, 300.0, estimated_cost) is not None  # every dtype of the op
    assert reader.hang_limit(other, 300.0, estimated_cost) is None  # another op: the run's limit
    assert reader.hang_limit(later, HANG_FLOOR_S / 2, estimated_cost) is None  # never above the run's own limit
    note = CaseRecord.from_case(later, status=Status.TIMEOUT, message="exceeded the 3 s timeout")
    budget.hang_note(later, note)
    assert "a short limit: op sort hung earlier in this run (opinfo/sort/float32/forward" in note.message
    assert BudgetReader(tmp_path, obey_families=False).hang_limit(later, 300.0, estimated_cost) is None


STORM_ENV = {**ENV, "TORCHCTS_EXTRA_SUITES": "storm=helpers.planted_storm"}


def test_a_crash_storm_across_ops_is_stopped_and_fails_the_run(tmp_path):
    """Issue 40 item 2 on real workers: the storm suite's out= cases crash one bug across eight op
    families; after the budget the rest are not_run naming the cluster, the fine cases pass."""
    r = run_cli("run", "--device", "cpu", "--suite", "storm", "--timeout", "120", "--crash-budget", "2",
                "--", "-n", "1", "-p", "no:benchmark", cwd=tmp_path, env=STORM_ENV, timeout=400)
    recs = {rec["id"]: rec for rec in records(latest_run(tmp_path))}
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    outs = [v for k, v in recs.items() if k.startswith("storm/out/")]
    status = [v["status"] for v in outs]
    assert len(outs) == 8 and set(status) == {"crashed", "not_run"} and 2 <= status.count("crashed") < 8, status
    stopped = [v for v in outs if v["status"] == "not_run"]
    assert all("crash cluster" in v["message"] and "'storm/out/<op>/<dtype>'" in v["message"] for v in stopped)
    assert all(v["status"] == "passed" for k, v in recs.items() if k.startswith("storm/fine/"))
    # Issue 48 item 5: the same bug in four dtypes of two ops is one storm, stopped once (it was one
    # storm per dtype: every one of the eight crashed, two families per dtype).
    wide = [v for k, v in recs.items() if k.startswith("storm/wide/")]
    status = [v["status"] for v in wide]
    assert len(wide) == 8 and status.count("crashed") <= 4 and status.count("not_run") >= 4, status
    assert all("'storm/wide/<op>/<dtype>'" in v["message"] for v in wide if v["status"] == "not_run")


HANG_ENV = {"TORCHCTS_SIM_FAULT": "sub_int16_hang"}
HUNG = ("operators/elementwise/sub/int16", "opinfo/sub/int16/forward", "opinfo/sub/int16/method")


def test_later_cases_of_a_hung_op_time_out_after_seconds(tmp_path):
    """Issue 40 item 3 on real workers: the sim's int16 sub never returns; the first case times out at
    the run's limit, the later ones at the short limit, each still `timeout`, naming the first."""
    args = [a for case in HUNG for a in ("--case", case)]
    r = run_cli("run", "--device", "sim", "--manifest", "torchcts:sim/manifest.py", *args, "--timeout", "20",
                "--", "-n", "1", "-p", "no:randomly", cwd=tmp_path, env=HANG_ENV, timeout=400)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    recs = [rec for rec in records(latest_run(tmp_path)) if rec["status"] != "filtered"]
    assert [rec["status"] for rec in recs] == ["timeout"] * 3, [(x["id"], x["status"]) for x in recs]
    limits = sorted(rec["timeout_s"] for rec in recs)
    assert limits[-1] == 20 and limits[0] < 20 and limits[1] < 20, limits
    short = [rec for rec in recs if rec["timeout_s"] < 20]
    assert all("a short limit: op sub hung earlier in this run" in rec["message"] for rec in short)
