"""Crash attribution (issue 48 item 5): a crash that lands in the next, innocent case is rerun alone.

The planted suite (tests/helpers/planted_async.py) has a case that passes but leaves a thread that
writes a driver's assertion to fd 2 and aborts the process from a native thread once the next case
has started, as PoCL does: the run's crash lands in `b_innocent` with no stack in its tail. Each
suspect then runs alone in a fresh process: the abort follows `a_async_abort`, which gets the crash
(with the driver's text), and `b_innocent` gets its own verdict, each record saying so.
"""

from __future__ import annotations

import os
import re

import pytest
from helpers.paths import TESTS
from helpers.runs import latest_run, records, run_cli

from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.workers.attribution import Alone, Suspicion, ambiguous, attribute
from torchcts.workers.isolation import CASE_MARK, FRESH_MARK, STDERR_HEADER, earlier_cases
from torchcts.workers.outcome import CaseOutcome

ENV = {
    "TORCHCTS_EXTRA_SUITES": "asyncabort=helpers.planted_async",
    "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]),
}
ASSERTION = "planted-driver: queue.c:42: flush_queue: Assertion `q->pending == 0' failed."
A, B, C = (f"asyncabort/{name}/float32" for name in ("a_async_abort", "b_innocent", "c_ok"))


def test_an_asynchronous_abort_is_attributed_to_the_case_that_left_it(tmp_path):
    r = run_cli("run", "--device", "cpu", "--suite", "asyncabort", "--timeout", "120",
                "--", "-n", "1", "-p", "no:benchmark", cwd=tmp_path, env=ENV, timeout=500)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-3000:]  # a crash is a failure, whoever it belongs to
    lines = records(latest_run(tmp_path))
    first = {}
    for rec in lines:
        first.setdefault(rec["id"], rec)
    final = {rec["id"]: rec for rec in lines}
    # In the run the crash landed in the innocent case, its tail with no stack, but the driver's
    # text on fd 2 is kept in the crashed record.
    assert first[B]["status"] == "crashed" and first[B]["signal"] == "SIGABRT", first[B]
    assert ASSERTION in first[B]["output_tail"], first[B]["output_tail"]
    assert "running 2 suspect(s) alone" in out
    a, b = final[A], final[B]
    assert a["status"] == "crashed" and a["signal"] == "SIGABRT", a
    assert ASSERTION in a["output_tail"] and f"landed in {B}" in a["message"], a
    assert a["attribution"] == {"landed_in": B, "belongs_to": A, "alone": {A: "crashed", B: "passed"}}
    assert a["repro"].endswith(f"--case {A}")
    assert b["status"] == "passed" and f"the crash belongs to {A}" in b["message"], b
    assert b["attribution"]["belongs_to"] == A
    assert final[C]["status"] == "passed"


def test_ambiguous_tails_are_those_without_the_case_threads_stack():
    assert ambiguous("") and ambiguous(None)
    assert ambiguous("Fatal Python error: Aborted\n\n\nExtension modules: torch._C (total: 1)")
    main = ('Fatal Python error: Segmentation fault\n\nStack (most recent call first):\n'
            '  File "/x/kernels.py", line 3 in bad_kernel\n  File "/x/runner.py", line 9 in run_case\n')
    assert not ambiguous(main)  # the case's own code was running: its crash
    thread = ('Fatal Python error: Aborted\n\nStack (most recent call first):\n'
              '  File "/x/driver.py", line 3 in <lambda>\n'
              '  File "/usr/lib/python3.11/threading.py", line 1045 in _bootstrap_inner\n'
              '  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap\n')
    assert ambiguous(thread)  # another thread's stack: work left behind by an earlier case
    assert not ambiguous("#0  0x00007f in kernel_foo () at foo.cc:12\n#1  0x00007f in bar () at bar.cc:3")
    assert ambiguous(f"Fatal Python error: Aborted\n{STDERR_HEADER}\n{main}")  # stderr is not the stack


def test_earlier_cases_are_those_of_the_same_process():
    log = "".join(f"\n{CASE_MARK}{i}.0 torchcts::{name}\n" if name != "-" else f"\n{FRESH_MARK}\n"
                  for i, name in enumerate(["-", "w", "x", "-", "y", "z", "crashed", "later"]))
    assert earlier_cases(log, "torchcts::crashed", 2) == ["torchcts::y", "torchcts::z"]
    assert earlier_cases(log, "torchcts::crashed", 5) == ["torchcts::y", "torchcts::z"]  # x ran in a dead child
    assert earlier_cases(log, "torchcts::y", 2) == []  # the first case of its process: nothing to blame
    assert earlier_cases(log, "torchcts::never_started", 2) == []  # not in the log: no one is blamed
    assert earlier_cases(log, None, 1) == ["torchcts::later"]  # died between cases


def _case(name: str) -> Case:
    return Case(id=f"s/{name}/float32", suite="s", level=1, runner="m:f", ops=("aten::x",), dtype="float32")


def test_a_crash_is_never_turned_into_a_pass_without_a_culprit():
    cases = {c.id: c for c in map(_case, ("a", "b"))}
    crash = CaseRecord.from_case(cases["s/b/float32"], status=Status.CRASHED, signal="SIGABRT", message="died")
    passed = {cid: Alone(cid, CaseOutcome(CaseRecord.from_case(c, status=Status.PASSED))) for cid, c in cases.items()}
    [kept] = attribute([Suspicion(["s/a/float32"], crash)], passed, cases)
    assert kept.status == Status.CRASHED and kept.attribution["belongs_to"] is None
    assert "neither it nor s/a/float32 crashed" in kept.message
    again = {**passed, "s/b/float32": Alone("s/b/float32", died={"signal": "SIGABRT", "exit_code": -6})}
    [own] = attribute([Suspicion(["s/a/float32"], crash)], again, cases)
    assert own.status == Status.CRASHED and own.attribution["belongs_to"] == "s/b/float32"
    assert "it crashed again alone" in own.message


def test_a_crash_that_an_earlier_case_left_is_blamed_on_it():
    """The crashed case passes alone and an earlier one crashes alone: the earlier one gets the crash
    (its signal, its stderr), the crashed one its own verdict from its run alone, both saying so."""
    cases = {c.id: c for c in map(_case, ("a", "b", "c"))}
    a, b, c = cases
    crash = CaseRecord.from_case(cases[c], status=Status.CRASHED, signal="SIGABRT", message="died", worker="gw0")
    alone = {a: Alone(a, CaseOutcome(CaseRecord.from_case(cases[a], status=Status.PASSED))),
             b: Alone(b, died={"signal": "SIGABRT", "exit_code": -6}, stderr="queue.c:42: Assertion failed"),
             c: Alone(c, CaseOutcome(CaseRecord.from_case(cases[c], status=Status.PASSED, message="ok")))}
    suspicions = [Suspicion([a, b], crash)]
    assert suspicions[0].landed_in == c  # computed from the crash record
    out = {r.id: r for r in attribute(suspicions, alone, cases)}
    assert set(out) == {b, c}  # a passed alone and the crash is not its: its record stands
    culprit, innocent = out[b], out[c]
    assert culprit.status == Status.CRASHED and culprit.signal == "SIGABRT" and culprit.worker == "alone"
    assert culprit.output_tail == f"{STDERR_HEADER}\nqueue.c:42: Assertion failed"
    assert f"the crash that landed in {c}" in culprit.message
    assert culprit.attribution == {"landed_in": c, "belongs_to": b,
                                   "alone": {a: "passed", b: "crashed", c: "passed"}}
    assert innocent.status == Status.PASSED and innocent.worker == "alone"
    assert innocent.message.startswith("ok; ") and f"the crash belongs to {b}" in innocent.message
    assert innocent.attribution["belongs_to"] == b and innocent.attribution["landed_in"] == c
    # A worker that died between cases (no crash record): the culprit is blamed, no case is cleared.
    [between] = attribute([Suspicion([a, b])], alone, cases)
    assert between.id == b and "a worker that died between cases" in between.message
    assert between.attribution["landed_in"] is None


POISON_ENV = {**ENV, "TORCHCTS_EXTRA_SUITES": "poison=helpers.planted_poison"}


@pytest.mark.parametrize("forked", [False, True], ids=["worker", "forked-child"])
def test_a_poisoned_device_is_found_by_the_canary_and_its_worker_replaced(tmp_path, forked):
    """Each case passes, then leaves the sim's device broken (every later op raises): the first failure
    after it is noted as the poisoned device's and the worker (or, after a crash, its forked child)
    replaced, so of four cases two pass (without the canary one passed and three failed)."""
    env = {**POISON_ENV, **({"PLANTED_POISON_FORKED": "1"} if forked else {})}
    r = run_cli("run", "--device", "sim", "--manifest", "torchcts:sim/manifest.py", "--suite", "poison",
                "--timeout", "120", "--", "-n", "1", "-p", "no:benchmark", cwd=tmp_path, env=env, timeout=400)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]  # the failures that met the poison stay
    final = {rec["id"]: rec for rec in records(latest_run(tmp_path))}
    victims = [final[f"poison/b_victim/{i}/float32"] for i in range(4)]
    failed = [v for v in victims if v["status"] != "passed"]
    assert len(failed) == 2, [(v["id"], v["status"], v.get("message")) for v in victims]
    for bad in failed:
        assert bad["status"] == "error" and "failed a canary" in bad["message"] and "device lost" in bad["message"]
        assert bad["attribution"]["process_replaced"] is True and "device lost" in bad["attribution"]["canary"]
    if forked:  # the retired child's end is no crash of the case after it
        assert final["poison/a0_segv/float32"]["status"] == "crashed"
        assert [v["status"] for v in final.values()].count("crashed") == 1


def test_a_device_poisoned_again_and_again_retires_workers_and_crashes_no_case(tmp_path):
    """The sim's planted sticky error (abs_illegal_address_sticky: abs makes an illegal memory
    access, after which every device op of the process fails, as CUDA's does): every abs case fails
    and leaves its worker's device poisoned, so the canary retires a worker after each one, with two
    workers at once. Two retirements before either replacement is up put two rescheduled cases at the
    front of the queue, and a replacement retires before the second: a case rescheduled twice, once
    recorded `crashed` (exit code 87) though it never ran. No case may be recorded crashed: each is
    its own failure (the illegal access), the canary's note on it, and every retirement only
    reschedules the next case (the terminal counts them `rescheduled`, never `failed`)."""
    dtypes = ("float32", "float64", "int32", "int64", "float16", "int16")
    r = run_cli("run", "--device", "sim", "--manifest", "torchcts:sim/manifest.py", "--suite", "operators",
                "--level-exact", "1", "--op", "abs", *(a for d in dtypes for a in ("--dtype", d)), "--timeout", "120",
                "--", "-p", "no:benchmark", cwd=tmp_path, timeout=600,
                env={"TORCHCTS_SIM_FAULT": "abs_illegal_address_sticky", "TORCHCTS_WORKERS": "2"})
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-3000:]  # each abs case is the backend's failure
    final = {rec["id"]: rec for rec in records(latest_run(tmp_path))}
    assert set(final) == {f"operators/elementwise/abs/{d}" for d in dtypes}, sorted(final)
    assert [rec["id"] for rec in final.values() if rec["status"] == "crashed" or rec.get("exit_code") == 87] == []
    for rec in final.values():
        assert rec["status"] == "error" and "illegal memory access" in rec["message"], rec
        assert "failed a canary" in rec["message"] and rec["attribution"]["process_replaced"] is True, rec
    # pytest's summary: the six cases failed, each retirement's crash item rescheduled (at least two)
    summary = re.search(r"=+ (\d+) failed, (\d+) rescheduled in ", r.stdout)
    assert summary and summary.group(1) == str(len(dtypes)) and int(summary.group(2)) >= 2, r.stdout[-2000:]


def test_the_canary_judges_only_a_device_that_passed_it_first():
    from torchcts.workers.canary import Canary

    canary = Canary()
    canary.before("cpu")
    record = CaseRecord(id="x", status=Status.ERROR, message="boom")
    canary.after(record, True, "cpu")
    assert canary.works and canary.poisoned is None and record.message == "boom"  # cpu still adds
    canary.after(record, True, "no_such_device")  # the canary itself cannot run there: poisoned
    assert canary.poisoned and "failed a canary" in record.message
    fresh = Canary()
    fresh.before("no_such_device")  # never worked: never judges
    other = CaseRecord(id="y", status=Status.ERROR, message="boom")
    fresh.after(other, True, "no_such_device")
    assert fresh.poisoned is None and other.message == "boom"


def test_a_storm_of_suspicions_settles_at_most_the_cap(monkeypatch, tmp_path, capsys):
    """Each suspicion costs fresh processes: past MAX_SUSPICIONS the crashes keep their records."""
    from torchcts.workers import attribution

    asked: list[list[str]] = []
    monkeypatch.setattr(attribution, "run_alone", lambda run_dir, ids, timeout_s, corpus, solo: asked.append(ids) or {})
    monkeypatch.setattr(attribution, "attribute", lambda suspicions, alone, plan: [])
    many = [attribution.Suspicion([f"torchcts::e{i}"], CaseRecord(id=f"torchcts::c{i}"))
            for i in range(attribution.MAX_SUSPICIONS + 3)]
    assert attribution.settle(tmp_path, many, judge=lambda r: r, plan={}, timeout_s=1, corpus=None,
                              solo="torchcts.engine.solo") == []
    assert len(asked) == 1 and len(asked[0]) == 2 * attribution.MAX_SUSPICIONS
    assert "torchcts::c0" in asked[0] and f"torchcts::c{attribution.MAX_SUSPICIONS}" not in asked[0]
    assert "3 more kept as recorded" in capsys.readouterr().out
