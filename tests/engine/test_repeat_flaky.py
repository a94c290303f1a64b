"""`run --repeat N` (issue 50 item 4): each case N times, a pass rate per case, `flaky` when some
repeats fail, a failure of the run; proven with a planted sim fault wrong once in 64 launches of a
configuration (sim/faults_flaky.py), which a run without --repeat misses."""

from __future__ import annotations

import io
import json

import pytest
from helpers.runs import latest_run, records, run_cli

from torchcts.engine.repeat import run_repeated
from torchcts.engine.selftest import ENV, SIM_MANIFEST
from torchcts.engine.spec import RunSpec
from torchcts.errors import ExitCode, UsageError
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import FAILURES, Status
from torchcts.results.ledger.apply import gate_failures, verdict_exit
from torchcts.results.reports.html import render_html
from torchcts.results.reports.repeat_rate import MAX_REPEAT, pass_rate, repeated, repro_repeat
from torchcts.results.reports.repeats import combine, flaky_under_repeat
from torchcts.results.reports.scorecard import print_scorecard
from torchcts.results.reports.summary import render_markdown, totals
from torchcts.results.repro.commands import record_repro
from torchcts.results.triage.clusters import cluster_key
from torchcts.workers.outcome import FAILED, PASSED, SKIPPED, CaseOutcome

SIM = ["--device", "sim", "--manifest", str(SIM_MANIFEST)]
FAULT = "hypot_stale_every_64th"


def _rec(status: str, message: str | None = None, duration: float = 0.5) -> CaseRecord:
    return CaseRecord(id="opinfo/hypot/float32/forward", suite="opinfo", level=2, ops=["hypot"], dtype="float32",
                      status=Status(status), message=message, duration_s=duration)


# --- one record from N runs (results/reports/repeats.py: combine) ---------------------------------------

def test_every_repeat_passing_is_passed_with_its_rate():
    out = combine([_rec("passed") for _ in range(4)])
    assert (out.status, out.repeats, out.repeat_passes) == (Status.PASSED, 4, 4)
    assert out.duration_s == 2.0  # what the case cost the run: every repeat's time


def test_some_repeats_failing_is_flaky_with_rate_and_first_failure():
    runs = [_rec("passed"), _rec("failed", "values differ: got 7 expected 6"), _rec("passed"),
            _rec("error", "RuntimeError: stale"), _rec("passed")]
    out = combine(runs)
    assert out.status == Status.FLAKY and (out.repeat_passes, out.repeats) == (3, 5)
    assert out.message.startswith("failed 2 of 5 repeats (2, 4); repeat 2: values differ")
    assert out.first_failure["status"] == "failed" and out.first_failure["signature"]
    assert pass_rate(out) == "3/5" and out.is_failure and out.status in FAILURES


def test_every_repeat_failing_stays_failed_with_rate_zero():
    runs = [_rec("failed", f"values differ {i}") for i in range(3)]
    out = combine(runs)
    assert (out.status, out.repeats, out.repeat_passes) == (Status.FAILED, 3, 0)
    assert out.message == "values differ 0"  # one run's message: a ledger signature still matches it
    assert repro_repeat(out) is None  # one run reproduces it


# --- the engine's loop (engine/repeat.py) -------------------------------------------------------

def _outcomes(kinds: list[str]):
    made = iter(kinds)
    calls: list[int] = []

    def once() -> CaseOutcome:
        calls.append(1)
        kind = next(made)
        if kind == "pass":
            return CaseOutcome(_rec("passed"))
        if kind == "skip":
            return CaseOutcome(_rec("not_applicable", "no kernel"), SKIPPED, "no kernel")
        if kind == "pytest":  # an in-process timeout: pytest's own exception, no verdict
            return CaseOutcome(CaseRecord(id="x"), FAILED, "", KeyboardInterrupt())
        return CaseOutcome(_rec("failed", "values differ"), FAILED, "values differ", AssertionError("values differ"))
    return once, calls


def test_run_repeated_flaky_is_a_pytest_failure_carrying_the_rate():
    once, calls = _outcomes(["pass", "fail", "pass"])
    out = run_repeated(once, 3)
    assert len(calls) == 3 and out.kind == FAILED and out.record.status == Status.FLAKY
    assert isinstance(out.error, AssertionError) and pass_rate(out.record) == "2/3"


def test_run_repeated_all_passing_and_once():
    once, calls = _outcomes(["pass"] * 5)
    out = run_repeated(once, 5)
    assert out.kind == PASSED and out.record.repeats == 5 and len(calls) == 5
    once, calls = _outcomes(["pass"])
    out = run_repeated(once, 1)  # no --repeat: the one run's record, no rate fields
    assert out.record.repeats is None and len(calls) == 1


def test_run_repeated_stops_at_no_verdict_and_at_pytests_own_exception():
    once, calls = _outcomes(["skip", "pass"])
    assert run_repeated(once, 5).kind == SKIPPED and len(calls) == 1
    once, calls = _outcomes(["pass", "pytest", "pass"])
    out = run_repeated(once, 3)  # a timeout in repeat 2 is the case's outcome, not hidden by repeat 1
    assert len(calls) == 2 and isinstance(out.error, KeyboardInterrupt) and out.record.status is None


# --- the record's typed fields --------------------------------------------------------------------

def test_record_round_trips_with_its_rate():
    rec = combine([_rec("passed"), _rec("failed", "values differ")])
    data = rec.to_json()
    assert (data["repeats"], data["repeat_passes"], data["status"]) == (2, 1, "flaky")
    assert CaseRecord.from_json(data).to_json() == data
    assert CaseRecord.from_text(rec.to_text()) == rec
    assert CaseRecord.from_json(json.loads(json.dumps(data))).repeat_passes == 1


def test_crafted_rate_fields_are_coerced_and_refused():
    rec = CaseRecord.from_json({"id": "a", "status": "flaky", "repeats": "10", "repeat_passes": True})
    assert rec.repeats is None and rec.repeat_passes is None and repeated(rec) is None
    for n, passes in ((10, 11), (MAX_REPEAT + 1, 1), (1, 1), (10, -1)):
        rec = CaseRecord.from_json({"id": "a", "status": "flaky", "repeats": n, "repeat_passes": passes})
        assert repeated(rec) is None and repro_repeat(rec) is None, (n, passes)


def test_flaky_repro_line_carries_repeat():
    run = Run.from_json({"device": {"type": "sim"}, "validation": False, "manifest": {"semantic_level": 8}})
    flaky = combine([_rec("passed"), _rec("failed", "values differ")] * 5)
    assert record_repro(flaky, run, None).endswith("--case opinfo/hypot/float32/forward --repeat 10")
    failed = combine([_rec("failed", "values differ")] * 3)
    assert "--repeat" not in record_repro(failed, run, None)


# --- exit status and reports -------------------------------------------------------------------

def test_flaky_fails_a_repeat_run_not_only_a_strict_one():
    repeat_run = Run(totals={"passed": 5, "flaky": 1}, repeat=10)
    assert gate_failures(repeat_run) == ["1 flaky"] and verdict_exit(repeat_run) == ExitCode.FAILURES
    rerun_flaky = Run(totals={"passed": 5, "flaky": 1})  # --rerun-failures' pass on rerun: unchanged
    assert gate_failures(rerun_flaky) == [] and verdict_exit(rerun_flaky) == ExitCode.OK


def test_reports_list_flaky_cases_with_their_rates(tmp_path):
    recs = [combine([_rec("passed"), _rec("failed", "values differ")] * 2 + [_rec("passed")] * 6),
            _rec("passed").copy(id="opinfo/hypot/float32/method", repeats=10, repeat_passes=10)]
    run = Run.from_json({"name": "r", "device": {"type": "sim"}, "status": "complete", "totals": totals(recs), "repeat": 10})
    md = render_markdown(run, recs)
    assert "## Flaky under --repeat (1)" in md
    assert "- `opinfo/hypot/float32/forward`: passed 8 of 10 repeats (--repeat)" in md
    assert "method" not in md.split("## Flaky under --repeat")[1].split("##")[0]
    page = render_html(run, recs)
    assert "id='flaky-section'" in page and "<td class='num'>8/10</td>" in page
    out = io.StringIO()
    print_scorecard(tmp_path, run, out, records=recs)
    assert "flaky under --repeat (1): opinfo/hypot/float32/forward 8/10" in out.getvalue()
    assert flaky_under_repeat(recs) == recs[:1]
    # a --rerun-failures pass in a --repeat run (every repeat of the rerun passed): not flaky under --repeat
    rerun = recs[1].copy(status=Status.FLAKY, attempt=2)
    assert flaky_under_repeat([rerun]) == [] and cluster_key(rerun)[0].startswith("flaky (passed on rerun)")
    assert cluster_key(recs[0])[0].startswith("flaky under --repeat: ")


def test_run_spec_carries_repeat_through_run_json(tmp_path):
    from torchcts.cli.common import run_spec
    from torchcts.cli.main import build_parser
    from torchcts.engine.execute import open_run
    from torchcts.engine.setup import prepare
    from torchcts.results.records import rundir

    argv = ["run", "--validation", "--op", "add", "--dtype", "float32", "--level", "1", "--repeat", "7",
            "--results-dir", str(tmp_path / "res")]
    args = build_parser().parse_args(argv)
    args.argv, args.pytest_args = argv, []
    opened = open_run(prepare(run_spec(args)))
    run = rundir.read_run(opened.run_dir)
    assert run.repeat == 7 and RunSpec.from_run(run).repeat == 7
    for bad in (0, MAX_REPEAT + 1):  # a hand-edited run.json: once
        assert RunSpec.from_json({**run.to_json(), "repeat": bad}).repeat == 1
    with pytest.raises(UsageError, match="repeat has the wrong type"):
        RunSpec.from_json({**run.to_json(), "repeat": "10"})
    assert RunSpec.from_json({k: v for k, v in run.to_json().items() if k != "repeat"}).repeat == 1  # older run


# --- the flag ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "-3", str(MAX_REPEAT + 1), "ten", "2.5"])
def test_bad_repeat_is_one_line_exit_2(value, tmp_path):
    r = run_cli("run", *SIM, "--case", "operators/elementwise/neg/float32", "--repeat", value, cwd=tmp_path)
    assert r.returncode == ExitCode.USAGE, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--repeat" in lines[0], r.stderr
    assert not (tmp_path / "results").exists()  # refused before any run folder


# --- end to end on the sim -----------------------------------------------------------------------

def _statuses(tmp_path):
    return {rec["id"]: rec for rec in records(latest_run(tmp_path))}


def _dirs(tmp_path, *names):
    for name in names:
        (tmp_path / name).mkdir()


@pytest.mark.timeout(900)
def test_fault_wrong_once_in_64_launches_is_flaky_under_repeat_and_missed_without(tmp_path):
    """The plain `--op` run passes with the fault planted (no configuration reaches its 64th launch);
    the run with --repeat 10 records cases flaky with their rates and exits 1. That run leaves
    exploration off (--explore 0) only to keep the test short: the full command catches it too
    (tests/sim/test_sim_faults.py: test_fault_is_caught_by_its_case runs the fault's selection,
    `--op hypot --repeat 10`; docs/sim.md has its measurement)."""
    env = {ENV: FAULT}
    _dirs(tmp_path, "plain", "rep")
    plain = run_cli("run", *SIM, "--op", "hypot", "--", "-q", cwd=tmp_path / "plain", env=env)
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr[-2000:]
    assert {r["status"] for r in _statuses(tmp_path / "plain").values()} <= {"passed", "not_applicable"}

    r = run_cli("run", *SIM, "--op", "hypot", "--explore", "0", "--repeat", "10", "--", "-q",
                cwd=tmp_path / "rep", env=env)
    assert r.returncode == ExitCode.FAILURES, r.stdout[-3000:] + r.stderr[-2000:]
    recs = _statuses(tmp_path / "rep")
    flaky = {i: rec for i, rec in recs.items() if rec["status"] == "flaky"}
    assert flaky and not any(rec["status"] in ("failed", "error") for rec in recs.values())
    assert any(i.startswith("opinfo/hypot/") for i in flaky)
    for rec in flaky.values():
        assert rec["repeats"] == 10 and 0 < rec["repeat_passes"] < 10
        assert rec["repro"].endswith(" --repeat 10") and f"{ENV}={FAULT}" in rec["repro"]
    passed = [rec for rec in recs.values() if rec["status"] == "passed"]
    assert passed and all((rec["repeats"], rec["repeat_passes"]) == (10, 10) for rec in passed)
    run_dir = latest_run(tmp_path / "rep")
    assert json.loads((run_dir / "run.json").read_text())["repeat"] == 10
    summary = (run_dir / "summary.md").read_text()
    some = next(iter(flaky.values()))
    assert f"`{some['id']}`: passed {some['repeat_passes']} of 10 repeats" in summary
    assert "id='flaky-repeats'" in (run_dir / "report.html").read_text()
    assert "<failure" in (run_dir / "junit.xml").read_text()
    assert "flaky under --repeat" in r.stdout


def test_clean_sim_passes_with_repeat_and_all_fail_stays_failed(tmp_path):
    cases = ["operators/elementwise/neg/float32", "operators/elementwise/abs/float32"]
    selection = [a for c in cases for a in ("--case", c)]
    _dirs(tmp_path, "clean", "bad")
    r = run_cli("run", *SIM, *selection, "--repeat", "3", "--no-isolation", "--", "-q", cwd=tmp_path / "clean")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    recs = _statuses(tmp_path / "clean")
    assert {i: (x["status"], x["repeats"], x["repeat_passes"]) for i, x in recs.items()} == \
        dict.fromkeys(cases, ("passed", 3, 3))
    # a fault wrong on every call: failed in every repeat, so failed (rate 0/3), never flaky
    r = run_cli("run", *SIM, *selection, "--repeat", "3", "--no-isolation", "--", "-q", cwd=tmp_path / "bad",
                env={ENV: "neg_vector_tail"})
    assert r.returncode == ExitCode.FAILURES, r.stdout[-3000:] + r.stderr[-2000:]
    recs = _statuses(tmp_path / "bad")
    neg = recs["operators/elementwise/neg/float32"]
    assert (neg["status"], neg["repeats"], neg["repeat_passes"]) == ("failed", 3, 0)
    assert "--repeat" not in neg["repro"]
    assert recs["operators/elementwise/abs/float32"]["status"] == "passed"


def test_a_crash_in_any_repeat_is_the_case_crash(tmp_path):
    """A repeat that kills the worker is the case's crash, as without --repeat (engine/isolation.py)."""
    case = "operators/elementwise/mul/complex128"
    r = run_cli("run", *SIM, "--case", case, "--repeat", "3", "--timeout", "120", "--", "-q", cwd=tmp_path,
                env={ENV: "mul_complex128_segv"})
    assert r.returncode == ExitCode.FAILURES, r.stdout[-3000:] + r.stderr[-2000:]
    assert _statuses(tmp_path)[case]["status"] == "crashed"


def test_a_hang_in_a_repeat_is_the_case_timeout_its_limit_per_repeat(tmp_path):
    """A repeat past the time limit is the case's `timeout`; --timeout is per repeat, so the case's
    one pytest item may take N times it (engine/plugin.py: pytest_runtest_protocol)."""
    case = "operators/elementwise/sub/int16"
    r = run_cli("run", *SIM, "--case", case, "--repeat", "2", "--timeout", "3", "--", "-q", cwd=tmp_path,
                env={ENV: "sub_int16_hang"})
    assert r.returncode == ExitCode.FAILURES, r.stdout[-3000:] + r.stderr[-2000:]
    rec = _statuses(tmp_path)[case]
    assert rec["status"] == "timeout" and rec["timeout_s"] == 6, rec


def test_fresh_state_between_repeats_reseeds_and_empties_the_device(monkeypatch):
    """What a repeat starts from: the generators reseeded and the device synchronised and its cache
    emptied (engine/repeat.py: fresh_state); a backend module without them is no error."""
    from types import SimpleNamespace

    import torch

    from torchcts.engine.repeat import SEED, fresh_state

    calls: list[str] = []
    module = SimpleNamespace(synchronize=lambda: calls.append("synchronize"),
                             empty_cache=lambda: calls.append("empty_cache"))
    monkeypatch.setattr(torch, "fakedev", module, raising=False)
    torch.manual_seed(SEED + 7)
    torch.rand(3)
    fresh_state(SimpleNamespace(type="fakedev"))
    assert calls == ["synchronize", "empty_cache"] and torch.initial_seed() == SEED
    first = torch.rand(3)
    fresh_state("fakedev")
    assert torch.equal(torch.rand(3), first)  # the same draws after every reset
    monkeypatch.setattr(torch, "fakedev", SimpleNamespace(), raising=False)
    fresh_state("fakedev")  # nothing to call: no error
