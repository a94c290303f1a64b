"""issue 53, daily use round 3: what a newcomer tripped on (Ctrl-C at the wrong moment, warm-up
blamed on a case, a typo's wall of names, CI logs, the HTML page, and the smaller edges)."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from helpers.crafted import fake_run
from helpers.paths import TESTS
from helpers.runs import latest_run, run_cli
from helpers.stderr import sole_stderr_line

from torchcts import compat
from torchcts.engine import execute as ex
from torchcts.engine import progress as P
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run

README = TESTS.parent / "README.md"
ONE_CASE = "operators/elementwise/add/float32"


def _run_json(root: Path) -> dict:
    return json.loads((latest_run(root) / "run.json").read_text())


# -- 1. every exit path of a run closes its folder ----------------------------------------------

def test_an_interrupt_pytest_did_not_catch_still_closes_the_run(workdir, cli, monkeypatch, capsys):
    """Ctrl-C during the workers' start-up or their shutdown after [100%] escaped pytest: run.json
    said `running`, no reports, exit 130. Now the run is closed as interrupted."""
    def interrupted(run):  # noqa: ANN001,ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(ex, "run_pytest", interrupted)
    assert cli(["run", "--validation", "--case", ONE_CASE]) == 130
    spec = _run_json(workdir)
    assert spec["status"] == "interrupted" and spec["ended"], spec
    assert spec["totals"] == {"not_run": 1}  # the planned case is listed, not silently dropped
    assert {"report.html", "summary.md", "junit.xml"} <= {p.name for p in latest_run(workdir).iterdir()}
    assert "run interrupted" in capsys.readouterr().out


def test_an_interrupt_while_the_folder_is_closed_waits_for_the_close(workdir, cli, monkeypatch, capsys):
    real = ex.finalize

    def finalize_hit_by_ctrl_c(*args, **kwargs):  # noqa: ANN002,ANN003,ANN202
        os.kill(os.getpid(), signal.SIGINT)  # the user presses Ctrl-C right after [100%]
        return real(*args, **kwargs)

    monkeypatch.setattr(ex, "finalize", finalize_hit_by_ctrl_c)
    # the handler the test process started with (a shell's background job starts with SIGINT ignored)
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert cli(["run", "--validation", "--case", ONE_CASE]) == 130
    finally:
        after = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, before)
    spec = _run_json(workdir)
    assert spec["status"] == "complete" and spec["totals"] == {"passed": 1}  # every case had run
    assert (latest_run(workdir) / "report.html").is_file()
    assert "writing the run's reports first" in capsys.readouterr().err
    assert after is signal.default_int_handler  # put back


def test_report_on_a_folder_left_running_says_what_happened(workdir, cli, capsys):
    from torchcts.model.case import Case

    plan = [Case(f"a/{i}", "a", 1, "helpers.observed_cases:tan_and_backward").to_json() for i in (1, 2)]
    fake_run(workdir, "killed", [{"id": "a/1", "status": "passed"}], plan=plan, status="running")
    assert cli(["report"]) == 1  # a planned case without a result
    captured = capsys.readouterr()
    assert "killed was never closed (run.json said `running`, no end time)" in captured.err
    assert "run interrupted" in captured.out and "1 planned cases have no result" in captured.out


# -- 2. warm-up is the worker's ------------------------------------------------------------------

def warming_case(ctx, dtype) -> None:  # noqa: ANN001 - a case body (ctx, dtype)
    """A worker's first case, during which the worker imports a database once (compat.WARMUP_S)."""
    time.sleep(0.3)
    compat.WARMUP_S["test database"] = compat.WARMUP_S.get("test database", 0.0) + 0.3
    ctx.assert_close(torch.ones(2), torch.ones(2))


def test_a_workers_warm_up_is_charged_to_the_worker_not_its_first_case(tmp_path, monkeypatch):
    from helpers.run_state import run_state

    from torchcts.engine.one_case import run_one
    from torchcts.model.case import Case
    from torchcts.results.reports.scorecard import print_scorecard

    monkeypatch.setattr(compat, "WARMUP_S", {})
    case = Case("warm/first/float32", "warm", 1, f"{__name__}:warming_case", {"dtype": "float32"}, dtype="float32")
    record = run_one(case, run_state(tmp_path), None).record
    assert record.status == "passed", record.message
    assert record.warmup_s == pytest.approx(0.3, abs=0.01)
    assert record.duration_s < 0.25, record.duration_s  # the case's own time, the warm-up left out
    assert CaseRecord.from_json(record.to_json()).warmup_s == record.warmup_s  # it travels to the controller
    slow = CaseRecord(id="x/slow/float32", status="passed", duration_s=0.2, worker="main")
    out = io.StringIO()
    run = Run.from_json({"name": "r", "status": "complete", "totals": {"passed": 2}})
    print_scorecard(tmp_path, run, out, records=[record, slow])
    text = out.getvalue()
    assert "slowest: x/slow/float32 0.20s, warm/first/float32" in text
    assert "worker warm-up (the OpInfo database import, not in the case times): main 0.30s" in text


def test_only_the_first_opinfo_database_import_is_warm_up(monkeypatch):
    monkeypatch.setattr(compat, "WARMUP_S", {})
    compat.op_db()
    compat.op_db()  # imported: nothing more to charge
    assert set(compat.WARMUP_S) <= {"OpInfo database"}
    first = compat.WARMUP_S.get("OpInfo database", 0.0)
    compat.op_db()
    assert compat.WARMUP_S.get("OpInfo database", 0.0) == first


# -- 3. coverage report RUN uses the run's backend ------------------------------------------------

def test_coverage_report_of_a_sim_run_counts_as_with_its_manifest(tmp_path):
    run_dir = fake_run(tmp_path, "simrun", [{"id": "operators/elementwise/add/float32", "status": "passed",
                                             "dispatched": ["aten::add.Tensor"]}], device="sim")
    spec = json.loads((run_dir / "run.json").read_text())
    spec["manifest"].update(device_name="sim", backend_import="torchcts.sim")
    (run_dir / "run.json").write_text(json.dumps(spec))
    plain = run_cli("coverage", "report", "results/latest", cwd=tmp_path, timeout=300)
    given = run_cli("coverage", "report", "results/latest", "--manifest", "torchcts:sim/manifest.py", cwd=tmp_path,
                    timeout=300)
    assert plain.returncode == given.returncode == 0, plain.stderr[-2000:] + given.stderr[-2000:]
    headline = [line for line in plain.stdout.splitlines() if "implementable aten overloads" in line]
    assert headline and headline == [line for line in given.stdout.splitlines()
                                     if "implementable aten overloads" in line], plain.stdout + given.stdout


# -- 4. a fresh `git init` folder is an evidence store ---------------------------------------------

def test_a_fresh_git_repository_can_be_the_evidence_store(tmp_path):
    from torchcts.errors import UsageError
    from torchcts.evidence import store as st

    repo = tmp_path / "evidence"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("")
    assert st.open_store(repo) == repo
    (repo / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="non-empty folder without an evidence index"):
        st.open_store(repo)


def test_a_foreign_store_folder_is_refused_before_the_oracles_run(tmp_path, monkeypatch):
    from torchcts.errors import UsageError
    from torchcts.evidence import collect

    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.setattr(collect, "plan", lambda req: pytest.fail("planned (and ran oracles) before checking --store"))
    with pytest.raises(UsageError, match="non-empty folder"):
        collect.collect(SimpleNamespace(store=str(tmp_path)))


# -- 5 and 11 (merge): one "filtered" count, totals in one order ----------------------------------

def test_one_filtered_count_with_each_part_named_and_totals_in_the_run_order(tmp_path):
    from torchcts.results.reports.scorecard import print_scorecard

    records = [CaseRecord(id=f"a/{i}", status="passed") for i in range(2)]
    records += [CaseRecord(id=f"k/{i}", status="filtered") for i in range(63)]
    records.append(CaseRecord(id="c/1", status="not_claimed"))
    # run.json's keys come back sorted by name (as `merge` and `report` read them)
    run = Run.from_json({"name": "r", "status": "complete", "filtered": 46809,
                                "totals": {"filtered": 63, "not_claimed": 1, "passed": 2}})
    out = io.StringIO()
    print_scorecard(tmp_path, run, out, records=records)
    (totals,) = [line for line in out.getvalue().splitlines() if line.startswith("totals:")]
    assert totals == ("totals: passed 2, not_claimed 1; filtered 46872 (46809 outside the selection: other levels, "
                      "suites, ops, dtypes; 63 deselected by pytest's -k/-m/--lf)"), totals
    assert totals.count("filtered") == 1


# -- 6. a typo gets its closest name ----------------------------------------------------------------

def test_a_sim_fault_typo_is_one_line_with_the_closest_name(tmp_path):
    r = run_cli("run", "--device", "sim", "--manifest", "torchcts:sim/manifest.py", "--op", "add", cwd=tmp_path,
                env={"TORCHCTS_SIM_FAULT": "abs_zero_dimm"}, timeout=300)
    assert r.returncode == 2
    assert r.stderr.strip() == "torchcts: error: TORCHCTS_SIM_FAULT: unknown fault 'abs_zero_dimm': did you mean 'abs_zero_dim'?"


def test_selftest_fault_and_option_typos_name_the_fix(cli, capsys):
    assert cli(["selftest", "--fault", "abs_zero_dimm", "--no-clean"]) == 2
    assert sole_stderr_line(capsys) == ("torchcts: error: --fault 'abs_zero_dimm' names no planted fault: "
                                       "did you mean 'abs_zero_dim'?")
    assert cli(["selftest", "--fault", "nope", "--no-clean"]) == 2
    line = sole_stderr_line(capsys)
    assert line.endswith("`torchcts selftest --list` lists them") and "add_fp16_ulp" not in line
    with pytest.raises(SystemExit) as done:
        cli(["run", "--devcie", "cpu"])
    assert done.value.code == 2
    assert sole_stderr_line(capsys) == ("torchcts: error: unrecognized argument --devcie: did you mean '--device'? "
                                       "(see 'torchcts run --help')")
    with pytest.raises(SystemExit):
        cli(["coverage", "report", "--lst-unobserved"])
    assert sole_stderr_line(capsys).endswith("did you mean '--list-unobserved'? (see 'torchcts coverage report --help')")


# -- 7. a crash repro prints its stack -------------------------------------------------------------

def test_a_repro_script_that_crashes_prints_the_stack(tmp_path, monkeypatch):
    from torchcts.cases import repro_builders
    from torchcts.cases.repro_builders import ReproSpec
    from torchcts.manifest.templates import cpu_manifest
    from torchcts.model.case import Case
    from torchcts.results.repro.script import ReproTarget, write_repro

    def build(case, manifest, record, sample=None):  # noqa: ANN001,ANN202
        return ReproSpec("torch.add", [{"args": [torch.ones(2), torch.ones(2)], "kwargs": {}, "describe": {}}],
                         1e-5, 1e-6)

    monkeypatch.setitem(repro_builders.BY_RUNNER, "tests.fake:*", build)
    case = Case(id="planted/crash/float32", suite="planted", level=1, runner="tests.fake:crash", dtype="float32")
    folder = write_repro(ReproTarget(case, "cpu", cpu_manifest(), None, None, tmp_path / "repro"))
    backend = tmp_path / "backend"
    backend.mkdir()
    (backend / "crashing_backend.py").write_text("import ctypes\n\ndef boom():\n    ctypes.string_at(0)\n\nboom()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(backend), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, str(folder / "repro.py"), "--import", "crashing_backend"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in r.stderr and 'crashing_backend.py", line 4 in boom' in r.stderr


# -- 8. CI logs ----------------------------------------------------------------------------------

def test_ci_progress_lines_wait_for_pytests_line_of_dots_to_end():
    clock, out, column = SimpleNamespace(t=1000.0), [], [0]
    p = P.Progress(100, tty=False, write=out.append, clock=lambda: clock.t, column=lambda: column[0])
    clock.t += P.PERIOD_S
    p.tick()
    assert out == ["[torchcts] starting the workers (100 cases planned, none started yet), 15s in\n"]
    p.started("a/1")
    p.finished("a/1", failure=False)
    column[0] = 12  # pytest is writing a line of dots
    clock.t += P.PERIOD_S
    p.tick()
    column[0] = 30
    clock.t += 1
    p.tick()
    p.line_ended()
    assert len(out) == 1  # due, but pytest is mid-line and still writing
    column[0] = 0  # pytest ended its line ("[ 12%]\n") with the result it just wrote
    clock.t += 0.1
    p.line_ended()
    assert len(out) == 2 and out[1].startswith("[torchcts] 1/100 cases") and not out[1].startswith("\n")
    p.line_ended()
    assert len(out) == 2  # once per period
    column[0] = 40  # a line of dots stands still for a whole period: every running case is stuck
    p.started("a/2")
    clock.t += P.PERIOD_S
    p.tick()
    clock.t += P.PERIOD_S
    p.tick()
    assert len(out) == 3 and out[2].startswith("\n[torchcts] 1/100 cases")  # said, on a line of its own
    clock.t += P.PERIOD_S
    p.tick()
    assert len(out) == 4 and out[3].startswith("[torchcts] ")  # no blank line after our own


@pytest.mark.parametrize(("status", "letter"),
                         [("not_applicable", "n"), ("not_claimed", "c"), ("pending", "p"), ("not_run", "-")])
def test_a_case_without_a_verdict_has_its_own_letter_not_skips(monkeypatch, status, letter):
    from torchcts.engine import plugin

    monkeypatch.setattr(plugin, "record_of", lambda report: CaseRecord(id="x", status=status))
    report = SimpleNamespace(when="call", skipped=True)
    assert plugin.pytest_report_teststatus(report, None) == (status, letter, status.upper())


# -- 9. show-skips reads the device from the manifest ---------------------------------------------

def test_show_skips_takes_the_device_from_the_manifest(workdir, cli, capsys):
    assert cli(["show-skips", "--manifest", "torchcts:sim/manifest.py", "--op", "add", "--level", "1"]) == 0
    assert "cases would run" in capsys.readouterr().out
    assert cli(["show-skips", "--op", "add"]) == 2  # no manifest here: nothing names a device
    line = sole_stderr_line(capsys)
    assert "no --device given and no manifest here names one" in line and "non-interactive" not in line


# -- 10. the HTML page ---------------------------------------------------------------------------

def test_the_page_wraps_commands_at_spaces_orders_got_expected_and_keeps_filtered_small():
    from torchcts.results.reports.html import CSS, render_html

    rule = re.search(r"code\.repro\{([^}]*)\}", CSS).group(1)
    assert "break-all" not in rule and "word-break:keep-all" in rule and "overflow-wrap:normal" in rule
    failed = CaseRecord(id="opinfo/neg/int32/forward", status="failed", suite="opinfo", level=3, dtype="int32",
                        message="values differ: got -19, expected 19",
                        mismatch={"first_actual": -19, "first_expected": 19, "first_index": [0]})
    run = Run.from_json({"name": "r", "status": "complete", "filtered": 47037, "device": {"type": "cpu"}})
    page = render_html(run, [failed, CaseRecord(id="a/1", status="passed")])
    assert "got <code>-19</code>, expected <code>19</code>" in page
    assert ">filtered</div>" not in page  # no tile
    assert "<p class='meta' id='filtered'>filtered 47037 (outside the selection" in page


# -- 11. the smaller edges -----------------------------------------------------------------------

def test_check_manifest_warns_on_the_placeholder_reason(workdir, cli, capsys):
    (workdir / "torchcts.toml").write_text(
        'manifest_version = 1\ndevice_name = "cpu"\n[supported_dtypes]\nfloat32 = true\n'
        '[capabilities]\ninference = true\ntraining = false\nrng = false\ndevice_api = false\nmulti_device = false\n'
        f'[[expectations]]\nmatch = "{ONE_CASE}"\nstatus = "xfail"\nreason = "TODO: why it fails (x)"\n'
        f'[[expectations]]\nmatch = "operators/elementwise/mul/float32"\nstatus = "xfail"\nreason = "known"\n')
    assert cli(["check-manifest", "--no-import"]) == 0
    out = capsys.readouterr().out
    assert f"warning: expectations[0] ({ONE_CASE}): its reason is still the placeholder 'TODO: why it fails'" in out
    assert "expectations[1]" not in out


def test_triage_cuts_its_example_at_a_word():
    from torchcts.results.triage.clusters import render_text

    message = "values differ: " + " ".join(f"word{i}" for i in range(60))
    text = render_text([CaseRecord(id="opinfo/neg/float32/forward", status="failed", message=message)])
    (example,) = [line for line in text.splitlines() if "e.g." in line]
    shown = example.split(": ", 1)[1]
    assert shown.endswith("...") and shown[:-3].split()[-1] in message.split()


def test_warm_all_with_none_running_names_no_checkout(cli, capsys, monkeypatch):
    from torchcts.workers import warm

    monkeypatch.setattr(warm, "statuses", lambda: [])
    assert cli(["warm", "--all"]) == 0
    assert capsys.readouterr().out.strip() == "torchcts: no warm worker server is running"


def test_a_results_dir_error_names_the_path_as_typed(workdir, cli, capsys):
    assert cli(["report", "--results-dir", "/proc/nope"]) == 2
    assert "'/proc/nope'" in sole_stderr_line(capsys)
    assert cli(["run", "--validation", "--case", ONE_CASE, "--results-dir=/proc/nope"]) == 2
    assert "--results-dir /proc/nope cannot be created" in sole_stderr_line(capsys)


def test_the_readme_states_no_test_count_that_goes_stale():
    text = README.read_text()
    assert not re.search(r"\(\d[\d,]* tests[;)]", text), "the README's test count: say how to get it instead"
    assert "python -m pytest --collect-only -q tests | tail -1" in text


def test_a_case_id_typo_compares_only_the_ids_one_part_away():
    """difflib over every case id took 5 of a `--case` typo's 6 seconds; the closest id is still found."""
    from torchcts.engine.selection import _closest, near

    ids = [f"opinfo/op{i}/{dt}/{kind}" for i in range(2000) for dt in ("float32", "int64")
           for kind in ("forward", "backward", "out")] + ["operators/elementwise/add/float32"]
    pool = near("opinfo/op7/float32/forwrd", ids)
    assert "opinfo/op7/float32/forward" in pool and len(pool) < 10, len(pool)
    assert len(near("opinfo/op7", ids)) == 12000  # no id one part away: the suite's ids
    assert near("abs", ids) == ids  # not path-like: all
    assert _closest("oprators/elementwise/add/float32", ids) == " (closest: operators/elementwise/add/float32)"
