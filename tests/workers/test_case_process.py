"""Cases in forked children after a run's first crash (workers/case_process.py, issue 30 item 1).

A crash then costs a fork, not a replacement worker: after the first crash (whose worker xdist
replaces), the replacement runs every case in a child of its own; a crash or a hang ends that
child, is recorded `crashed` or `timeout` with the same evidence as a worker's death, and the
worker goes on with a new child. Verdicts do not change: a wrong value is `failed`, a raise or a
`sys.exit` in a case `error`, a pass `passed`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
from helpers.paths import TESTS
from helpers.runs import latest_run, records, run_cli

from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.workers.case_process import fork_refusal
from torchcts.workers.outcome import FAILED, PASSED, SKIPPED, CaseFailed, CaseOutcome

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not os.sys.platform.startswith("linux"),
                                reason="forked cases need Linux")


def test_after_a_crash_cases_run_in_forked_children_and_a_crash_costs_no_worker(tmp_path):
    log = tmp_path / "notes.jsonl"
    env = {"TORCHCTS_EXTRA_SUITES": "forks=helpers.planted_forks", "PLANTED_FORKS_LOG": str(log), "CI": "true",
           "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--device", "cpu", "--suite", "forks", "--timeout", "6", "--no-crash-budget",
                "--", "-n", "1", "-p", "no:benchmark", cwd=tmp_path, env=env, timeout=300)
    out = r.stdout[-3000:] + r.stderr[-3000:]
    assert r.returncode == 1, out
    recs = {rec["id"].split("/")[1]: rec for rec in records(latest_run(tmp_path))}
    status = {k: v["status"] for k, v in recs.items()}
    assert status == {"a_segv": "crashed", "b_note": "passed", "c_imports": "passed", "d_segv": "crashed",
                      "e_note": "passed", "f_hang": "timeout", "g_wrong": "failed", "h_raises": "error",
                      "i_exit": "error", "j_note": "passed"}, status
    lines = [json.loads(line) for line in log.read_text().splitlines()]  # in the order the cases ran
    first_worker = next(n["pid"] for n in lines if n["case"] == "a_segv")  # the case ran in its worker
    later = [n for n in lines if n["case"] != "a_segv"]
    # The first crash kills a worker, which xdist replaces; from then on every case runs in a child of
    # that one replacement (xdist may reorder the queue after a crash: no assumption on the order).
    worker = later[0]["ppid"]
    assert worker != first_worker and {n["ppid"] for n in later} == {worker}, lines
    assert all(n["pid"] != worker for n in later)
    # One child until it dies: a crash or a hang costs a new child, and that child ran nothing after.
    for dead in ("d_segv", "f_hang"):
        i = max(i for i, n in enumerate(lines) if n["case"] == dead)
        assert all(n["pid"] != lines[i]["pid"] for n in lines[i + 1:]), lines
    children = list(dict.fromkeys(n["pid"] for n in later))
    assert 2 <= len(children) <= 3, lines  # sys.exit in a case (i_exit) is its error, not its child's end
    # The worker imports what a dead child had imported before it forks the next one.
    i = next(i for i, n in enumerate(lines) if n["case"] == "c_imports")
    after = [n for n in lines[i + 1:] if n["pid"] != lines[i]["pid"]]
    assert after and all(n["marker"] for n in after), lines
    assert not any(n["marker"] for n in lines[:i]), lines
    crash = recs["d_segv"]
    assert crash["signal"] == "SIGSEGV" and "d_segv" in crash["output_tail"]
    assert re.match(r"its process \(forked from worker gw\d+\) died \(SIGSEGV\) while running this case; "
                    r"the worker went on$", crash["message"]), crash["message"]
    assert recs["a_segv"]["message"].startswith("worker gw0 died (SIGSEGV)")
    hang = recs["f_hang"]
    assert hang["timeout_s"] == 6 and 5.5 < hang["duration_s"] < 40, hang
    assert "time.sleep(600)" in hang["output_tail"] and "was ended; the worker went on" in hang["message"]
    assert recs["g_wrong"]["mismatch"]["max_abs_error"] == pytest.approx(0.5)
    assert "planted backend error in a forked case" in recs["h_raises"]["message"]
    assert recs["h_raises"]["exception"] == "RuntimeError" and "h_raises" in recs["h_raises"]["traceback"]
    assert recs["i_exit"]["message"].startswith("SystemExit")
    assert recs["j_note"]["dispatched"] and recs["j_note"]["worker"] == crash["worker"] != recs["a_segv"]["worker"]
    assert "repro: torchcts run --device cpu --case forks/d_segv/float32" in r.stdout


def test_a_case_outcome_crosses_processes_whole():
    record = CaseRecord(id="s/x/float32", suite="s", status=Status.FAILED, message="max abs error 0.5",
                        mismatch={"max_abs_error": 0.5}, dispatched=["aten::add.Tensor"])
    for outcome in (CaseOutcome(record, FAILED, "max abs error 0.5"), CaseOutcome(record, SKIPPED, "not applicable: x"),
                    CaseOutcome(record, PASSED)):
        back = CaseOutcome.from_json(json.loads(json.dumps(outcome.to_json())))
        assert back.record == record and (back.kind, back.message) == (outcome.kind, outcome.message)
    with pytest.raises(CaseFailed, match="max abs error"):
        CaseOutcome.from_json(CaseOutcome(record, FAILED, "max abs error 0.5").to_json()).raise_for_pytest()
    with pytest.raises(pytest.skip.Exception, match="not applicable"):
        CaseOutcome(record, SKIPPED, "not applicable: x").raise_for_pytest()
    assert CaseOutcome.from_json({"record": record.to_json(), "kind": "exploded"}).kind == FAILED


def _state(device: str, backend: str | None) -> SimpleNamespace:
    manifest = SimpleNamespace(backend_import=backend)
    return SimpleNamespace(spec=SimpleNamespace(manifest=manifest, device_type=device))


def test_only_a_fork_safe_backend_in_a_worker_that_ran_nothing_forks(monkeypatch):
    assert fork_refusal(_state("cpu", None), ran_here=False) is None
    assert fork_refusal(_state("sim", "torchcts.sim"), ran_here=False) is None
    assert "not known to survive a fork" in fork_refusal(_state("cuda", None), ran_here=False)
    assert "not known to survive a fork" in fork_refusal(_state("npu", "torch_npu"), ran_here=False)
    assert "not known to survive a fork" in fork_refusal(_state("cpu", "some_cpu_plugin"), ran_here=False)
    # A case leaves state a fork breaks (autograd's device threads, OpenMP's pool): a worker that
    # ran cases keeps running them itself
    assert "ran cases itself" in fork_refusal(_state("sim", "torchcts.sim"), ran_here=True)
    monkeypatch.setenv("TORCHCTS_CASE_PROCESSES", "0")
    from torchcts import settings

    settings.reload()
    try:
        assert fork_refusal(_state("cpu", None), ran_here=False) == "TORCHCTS_CASE_PROCESSES=0"
    finally:
        monkeypatch.delenv("TORCHCTS_CASE_PROCESSES")
        settings.reload()


PROBE = """
import torch, torchcts.sim
from torchcts.workers.case_process import CaseProcess, ForkRefused
child = CaseProcess(lambda case_id: None)
child._start()
print("before a device backward: forked", flush=True)
child.stop()
x = torch.ones(2, requires_grad=True, device="sim")
torch.autograd.grad((x * 2).sum(), x)  # starts autograd's device threads
try:
    child._start()
    print("after: forked")
except ForkRefused as exc:
    print("after: refused:", exc)
"""


def test_a_child_that_cannot_run_autograd_refuses_and_the_worker_runs_its_cases_itself(tmp_path):
    """After a backward on a device, PyTorch's forked children cannot run any backward: a child
    says so before its first case (a backward check would else skip every sample and pass)."""
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), os.environ.get("PYTHONPATH", "")])})
    assert "before a device backward: forked" in r.stdout, r.stdout + r.stderr
    assert "after: refused: autograd cannot run in a forked child of this worker: Unable to handle autograd's " \
           "threading" in r.stdout, r.stdout + r.stderr


class _Channel:
    def __init__(self, closed: bool) -> None:
        self.closed = closed

    def isclosed(self) -> bool:
        return self.closed

    def send(self, item: object) -> None:
        raise OSError("cannot send (already closed?)")


def test_a_send_to_a_worker_a_crash_killed_does_not_end_the_run():
    """pytest-xdist's steal request to a worker that just died ended a crash-heavy run as an
    INTERNALERROR (505 cases not_run): dropped when the worker is gone, raised otherwise."""
    from xdist.workermanage import WorkerController

    from torchcts.workers.isolation import tolerate_dead_workers

    tolerate_dead_workers()
    tolerate_dead_workers()  # once only: not wrapped twice
    worker = object.__new__(WorkerController)
    worker.log = lambda *a: None
    worker.channel = _Channel(closed=True)
    worker.send_steal([1, 2])
    worker.send_runtest_some([3])
    worker.channel = _Channel(closed=False)  # alive (no process to ask): a real failure
    with pytest.raises(OSError):
        worker.send_steal([1])
