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
from conftest import latest_run, records, run_cli

from torchcts.cases.model import Case
from torchcts.engine.crash_budget import BUDGET_FILE, BudgetReader, CrashBudget, family_of
from torchcts.results.records import CaseRecord
from torchcts.results.statuses import Status

TESTS = Path(__file__).resolve().parent
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
