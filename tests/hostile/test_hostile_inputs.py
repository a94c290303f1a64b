"""Hostile and broken inputs (issue 17): generated files never run data, records are never lost,
the user's data or environment gets exit 2 with one line, never exit 3.

Run folders are crafted by hand here (run.json, plan.jsonl, cases.jsonl), as a downloaded CI
artifact could be; every generated script is executed to show that nothing in the data runs.
"""

from __future__ import annotations

import ast
import errno
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.crafted import HOSTILE, HOSTILE_NAME, assert_nothing_ran, case_json, failed, fake_run
from helpers.paths import REPO
from helpers.runs import run_cli

from torchcts.manifest.load import tomllib
from torchcts.manifest.templates import validation_manifest
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.results.records import rundir

# --- 1. generated files: one quoting layer per format ------------------------------------------------


def test_repro_script_from_a_crafted_plan_runs_no_data(workdir, cli):
    case_id = "operators/elementwise/add/" + HOSTILE
    run_dir = fake_run(workdir, HOSTILE_NAME, [failed(case_id)], plan=[case_json(case_id)])
    assert cli(["repro", case_id, "--run", str(run_dir), "-o", "out"]) == 0
    script = workdir / "out" / "repro.py"
    doc = ast.get_docstring(ast.parse(script.read_text()))
    from torchcts.results.repro.script import _HEADER

    # the template's own lines, plus those of the id, the run name and the message (all HOSTILE)
    header_lines = _HEADER.split('"""')[1].count("\n") + 3 * HOSTILE.count("\n")
    assert doc.count("\n") <= header_lines and "\x1b" not in doc and "pathlib.Path(" in doc  # payload is text, inside
    proc = subprocess.run([sys.executable, str(script)], cwd=workdir, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # cpu vs cpu: every sample matches
    assert_nothing_ran(workdir)
    # the default folder of a crafted id stays inside the run folder
    assert cli(["repro", case_id, "--run", str(run_dir)]) == 0
    assert [p.parent.parent.parent for p in run_dir.rglob("repro.py")] == [run_dir]


def test_repro_refuses_an_op_expression_that_is_not_a_name(workdir):
    from torchcts.cases.repro_builders import ReproSpec
    from torchcts.errors import UsageError
    from torchcts.model.case import Case
    from torchcts.results.repro.script import ReproTarget, render_script

    target = ReproTarget(Case.from_json(case_json("a")), "cpu", validation_manifest(), None, None, workdir)
    with pytest.raises(UsageError, match="not a dotted name"):
        render_script(target, ReproSpec("torch.add; import os", [], 0.0, 0.0))


@pytest.mark.parametrize("fmt", ["py", "toml"])
def test_expectations_update_output_runs_no_data(workdir, cli, fmt):
    fake_run(workdir, HOSTILE_NAME + "\nexpectations = 1", [failed("operators/elementwise/add/" + HOSTILE)])
    out = workdir / f"proposed.{fmt}"
    assert cli(["expectations", "update", "--output", str(out)]) == 0
    text = out.read_text()
    assert "\x1b" not in text
    if fmt == "py":
        proc = subprocess.run([sys.executable, "-c", f"exec(open({str(out)!r}).read()); print(len(expectations))"],
                              cwd=workdir, capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout.strip() == "1", proc.stderr
    else:
        data = tomllib.loads(text)
        assert list(data) == ["expectations"] and len(data["expectations"]) == 1
    assert_nothing_ran(workdir)


def test_reports_quote_every_record_field(workdir, cli, capsys):
    bad_id = "operators/x/" + HOSTILE
    run_dir = fake_run(workdir, "r1", [failed(bad_id, traceback=HOSTILE, suite=HOSTILE, dtype=HOSTILE)],
                       plan=[case_json(bad_id), case_json("operators/never/" + HOSTILE)], status="interrupted")
    assert cli(["report", "--triage"]) == 1  # a failure and a not_run case
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "red" in out  # escape sequences stripped, text kept
    html = (run_dir / "report.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)" in html and "\x1b" not in html
    junit = (run_dir / "junit.xml").read_text()
    ET.fromstring(junit.encode())  # control characters would make it invalid XML
    md = (run_dir / "summary.md").read_text()
    outside_code = re.sub(r"(`+).*?\1", "", md)  # inside a code span, <script> is literal text
    assert "\x1b" not in md and "<script>" not in outside_code and "&lt;script" not in md
    for line in md.splitlines():  # the payload's newlines never start a line of their own
        assert not line.startswith(("import pathlib", '"""$(')), line
    assert "not_run" in junit and "not_run" in md and "not_run" in html


# --- 3. one scrubber ---------------------------------------------------------------------------------


def test_scrub_reduces_any_path_and_address():
    from torchcts.results.records.scrub import scrub

    ids = {"alice", "alice-box"}
    cases = {
        'File "/opt/checkouts/mybackend/ops.py", line 3': 'File "<path:ops.py>", line 3',
        "see file:///home/alice/notes.txt": "see <path:notes.txt>",
        r"share \\fileserver\builds\log.txt": "share <path:log.txt>",
        "loaded ../../secret/kernels.so": "loaded <path:kernels.so>",
        "D:\\work\\x.py failed": "<path:x.py> failed",
        "host=alice-box user=alice": "host=<redacted> user=<redacted>",
        "peer 10.20.30.40:29500 and fe80::1ff:fe23:4567:890a": "peer <ip>:29500 and <ip>",
        "nic 00:1a:2b:3c:4d:5e": "nic <mac>",
        "mail jdoe@example.com": "mail <redacted>",
    }
    for text, expected in cases.items():
        assert scrub(text, ids) == expected, text
    kept = ["operators/core/zeros/float32", "aten::add.Tensor", "c10::Half", "torch 2.13.0", "x[::2] 1/2",
            "https://github.com/pytorch/pytorch/issues/1", "<site-packages>/torch/nn/x.py", "max abs error 1e-05"]
    for text in kept:
        assert scrub(text, ids) == text


def test_records_and_reports_never_hold_identity(workdir, cli, monkeypatch):
    from torchcts.results.records import scrub as scrub_mod

    monkeypatch.setattr(scrub_mod, "_default_identities", lambda: frozenset({"alice-box", "alice"}))
    run_dir = workdir / "results" / "r"
    run_dir.mkdir(parents=True)
    writer = rundir.RecordWriter(run_dir)
    message = "backend says host=alice-box user=alice at /srv/checkout/backend/k.py from 192.168.1.7"
    writer.append(CaseRecord.from_json(failed("a/b", message=message)))
    writer.close()
    line = (run_dir / "cases.jsonl").read_text()
    for leak in ("alice", "/srv/checkout", "192.168"):
        assert leak not in line
    fake = fake_run(workdir, "r2", [failed("a/c", message=message)])  # unscrubbed, as if crafted
    assert cli(["report"]) == 1  # a failed case: the verdict
    for name in ("summary.md", "report.html", "junit.xml"):
        text = (fake / name).read_text()
        assert "alice" not in text and "/srv/checkout" not in text and "192.168" not in text, name


def test_evidence_leak_check_covers_every_identity_form():
    from torchcts.evidence.privacy import leaks

    for text in ("file:///home/alice/x.json", r"\\server\share\x", "../../etc/x", "10.0.0.7",
                 "2001:db8::ff00:42:8329", "00-1A-2B-3C-4D-5E", "/opt/x/y"):
        assert leaks({"m": text}, identities=set()), text
    assert leaks({"m": "aten::add.Tensor on cuda, 3/4 differ, torch 2.13.0"}, identities=set()) == []


# --- 2. evidence store ---------------------------------------------------------------------------------


def _store(tmp_path: Path) -> Path:
    from torchcts.evidence import store as st

    store = tmp_path / "store"
    store.mkdir()
    st.append(store, st.SOURCES, [{"id": "s1"}])
    st.append(store, "cpu.jsonl", [{"gate": "cpu", "n": i} for i in range(4)])
    st.write_index(store)
    return store


def test_torn_tail_is_refused_before_any_append(tmp_path):
    from torchcts.errors import UsageError
    from torchcts.evidence import store as st

    store = _store(tmp_path)
    path = store / "cpu.jsonl"
    path.write_bytes(path.read_bytes()[:-7])  # a collect cut short by a full disk
    before = path.read_bytes()
    with pytest.raises(UsageError, match="torn line.*verify-evidence"):
        st.append(store, "cpu.jsonl", [{"gate": "cpu", "n": 9}])
    assert path.read_bytes() == before


def test_append_is_cut_back_when_the_disk_fails(tmp_path, monkeypatch):
    from torchcts.evidence import store as st

    store = _store(tmp_path)
    before = (store / "cpu.jsonl").read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        st.append(store, "cpu.jsonl", [{"gate": "cpu", "n": 9}])
    assert (store / "cpu.jsonl").read_bytes() == before


def test_two_collections_in_one_second_get_distinct_sources():
    from torchcts.backends.devices import resolve_device
    from torchcts.evidence.sources import make_source

    device = resolve_device("cpu")
    assert make_source(device, "2026-01-01T00:00:00Z")["id"] != make_source(device, "2026-01-01T00:00:00Z")["id"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_verify_is_anchored_to_git_history(tmp_path, cli, capsys):
    from torchcts.evidence import store as st
    from torchcts.evidence.verify import verify_store

    store = tmp_path / "store"
    shutil.copytree(REPO / "evidence" / "backends", store)
    rc = cli(["coverage", "verify-evidence", str(store)])
    assert rc == 0 and "not in a git repository" in capsys.readouterr().err
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "store")
    _git(tmp_path, "commit", "-qm", "store")
    assert cli(["coverage", "verify-evidence", str(store)]) == 0
    # cut the tail and re-chain a different record: valid by itself, but not an append
    lines = st.read_lines(store / "cpu.jsonl")
    last = json.loads(lines[-1])
    last.pop("prev")
    last["result"] = {**last["result"], "status": "passed"}
    (store / "cpu.jsonl").write_text("".join(ln + "\n" for ln in lines[:-2]))
    st.append(store, "cpu.jsonl", [last])
    st.write_index(store)
    assert verify_store(store, history=False) == []  # a consistent store by itself
    capsys.readouterr()
    assert cli(["coverage", "verify-evidence", str(store)]) == 1
    assert "does not extend its committed version" in capsys.readouterr().out
    _git(tmp_path, "commit", "-qam", "rewrite")  # committing the rewrite does not launder it
    assert cli(["coverage", "verify-evidence", str(store)]) == 1
    assert "rewrites lines committed in" in capsys.readouterr().out


# --- 4. nothing lost -----------------------------------------------------------------------------------


def test_unreadable_and_unknown_records_are_counted(workdir, cli, capsys):
    run_dir = fake_run(workdir, "r", [{"id": "a/ok", "status": "passed", "suite": "a"},
                                      {"id": "a/odd", "status": "wobbly", "suite": "a"}])
    with open(run_dir / "cases.jsonl", "ab") as fh:
        fh.write(b'{"id": "a/garbled", "status": "fai\n[1, 2]\n\xff\xfe\n"just a string"\n{"status": "failed"}\n')
    assert cli(["report"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "5 unreadable records" in err
    run = json.loads((run_dir / "run.json").read_text())
    assert run["unreadable_records"] == 5 and run["totals"] == {"passed": 1, "error": 1}
    assert "5 unreadable records" in (run_dir / "summary.md").read_text()
    assert "5 unreadable records" in (run_dir / "report.html").read_text()
    from torchcts.results.ledger.apply import gate_failures

    assert gate_failures(Run.from_json(run))  # never a clean run


def test_the_one_jsonl_reader_gives_every_line_its_number_and_value_or_problem(tmp_path):
    from torchcts.results.records.jsonl import read_jsonl

    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n\n  \n[2]\n{"torn": \n\xff\xfe\n"s"')  # blank lines keep their numbers
    got = [(line.number, line.value, line.problem) for line in read_jsonl(path)]
    assert got == [(1, {"a": 1}, None), (4, [2], None), (5, None, "not JSON (a torn or garbled line)"),
                   (6, None, "not UTF-8 text"), (7, "s", None)]


def test_a_damaged_plan_line_is_a_usage_error_naming_it(workdir):
    from torchcts.errors import UsageError
    from torchcts.results.records.plan import read_plan

    run_dir = fake_run(workdir, "r", [], plan=[case_json("a/one")])
    with open(run_dir / "plan.jsonl", "ab") as fh:
        fh.write(b'{"id": "a/torn", "suite\n')
    with pytest.raises(UsageError, match=r"^r/plan.jsonl line 2 is not a case \(JSONDecodeError\): the run folder"):
        read_plan(run_dir)


def test_selftest_reports_unreadable_lines_never_drops_them(workdir):
    """A clean sim run whose plan.jsonl or cases.jsonl has lines it cannot read is not called clean."""
    from torchcts.cli.selftest import print_table
    from torchcts.engine.selftest import judge

    run_dir = fake_run(workdir, "r", [{"id": "a/one", "status": "passed", "suite": "a"}],
                       plan=[case_json("a/one"), case_json("a/two")])
    with open(run_dir / "plan.jsonl", "ab") as fh:
        fh.write(b'{"id": "a/thr\n')
    with open(run_dir / "cases.jsonl", "ab") as fh:
        fh.write(b"\xff\n")
    out = judge("clean", run_dir, 1, 1.0)
    assert out.planned == 2 and not out.detected
    assert out.note == "2 unreadable line(s) (plan.jsonl line 3: not JSON (a torn or garbled line))"
    buf = io.StringIO()
    print_table([out], buf)
    assert "(clean)  FAILED" in buf.getvalue() and "note: clean: 2 unreadable line(s)" in buf.getvalue()


def test_records_of_the_wrong_types_are_reported_not_crashed_on(workdir, cli):
    fake_run(workdir, "r", [{"id": "a/x", "status": "failed", "duration_s": "slow", "mismatch": [1],
                             "requires": 5, "message": {"m": 1}, "suite": 3}])
    assert cli(["report", "--triage"]) == 1  # reported (a failed case), not crashed on


def test_failed_merge_leaves_no_run_folder(workdir, cli, monkeypatch):
    """A merge that fails half-way (a full disk) leaves nothing behind; run.json never says complete."""
    import torchcts.results.records.merge as merge_module

    shard = {"selection": {}}
    for i in (1, 2):
        d = fake_run(workdir, f"s{i}", [{"id": f"a/{i}", "status": "passed"}])
        spec = json.loads((d / "run.json").read_text())
        spec["selection"] = {**shard["selection"], "shard": [i, 2]}
        (d / "run.json").write_text(json.dumps(spec))
    before = sorted(p.name for p in (workdir / "results").iterdir())

    def broken(run_dir, status):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(merge_module, "finalize", broken)
        assert cli(["merge", "s1", "s2"]) == 2
    assert sorted(p.name for p in (workdir / "results").iterdir()) == before
    assert cli(["merge", "s1", "s2"]) == 0
    merged = rundir.resolve_run(None, workdir / "results")
    assert json.loads((merged / "run.json").read_text())["status"] == "complete"


# --- 5. exit 2, one line, for the user's environment and data ------------------------------------------


def _one_line_exit_2(r: subprocess.CompletedProcess) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def test_environment_and_data_problems_exit_2(tmp_path):
    (tmp_path / "afile").write_text("x")
    _one_line_exit_2(run_cli("run", "--device", "cpu", "--case", "operators/core/zeros/float32",
                             "--results-dir", "afile", cwd=tmp_path))
    (tmp_path / "results" / "latest").mkdir(parents=True)
    _one_line_exit_2(run_cli("run", "--device", "cpu", "--case", "operators/core/zeros/float32", cwd=tmp_path))
    for value in ("nan", "inf"):
        _one_line_exit_2(run_cli("run", "--device", "cpu", "--timeout", value, cwd=tmp_path))
    run_dir = fake_run(tmp_path / "t", "r", [{"id": "a", "status": "passed"}])
    (run_dir / "run.json").write_text((run_dir / "run.json").read_text()[:40])  # truncated
    _one_line_exit_2(run_cli("report", "--results-dir", str(tmp_path / "t" / "results"), cwd=tmp_path))
    (tmp_path / "m.py").write_text("import os\nos._exit(0)\nmanifest = {}\n")
    _one_line_exit_2(run_cli("check-manifest", "m.py", cwd=tmp_path))


@pytest.mark.parametrize("err", [errno.EROFS, errno.ENOSPC, errno.EACCES])
def test_file_system_errors_exit_2(workdir, cli, capsys, monkeypatch, err):
    def refuse(*a, **k):
        raise OSError(err, os.strerror(err), "results/x")

    monkeypatch.setattr(rundir.Path, "mkdir", refuse)
    assert cli(["run", "--device", "cpu", "--suite", "operators", "--case", "operators/core/zeros/float32"]) == 2
    captured = capsys.readouterr().err
    errors = [ln for ln in captured.splitlines() if not ln.startswith("torchcts: note:")]
    assert len(errors) == 1 and os.strerror(err) in errors[0], captured


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_while_recording_is_kept_for_the_cli(tmp_path):
    """Inside pytest an OSError would read as an internal error: the writer keeps it for exit 2."""
    writer = rundir.RecordWriter(tmp_path)
    writer._fh.close()
    writer._fh = open("/dev/full", "w", encoding="utf-8")  # noqa: SIM115 - every write: ENOSPC
    assert writer.failure is None
    with pytest.raises(OSError):
        writer.append(CaseRecord(id="a", status="passed"))
    assert writer.failure is not None and writer.failure.errno == errno.ENOSPC


def test_cache_entry_of_the_wrong_shape_is_a_miss(tmp_path, monkeypatch):
    import marshal

    from torchcts.cases import cache

    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path))
    path = tmp_path / "x.marshal"
    fields = cache.FIELDS
    for bad in ((fields, [("id",) * len(fields)], []), (fields, 5, []), [1, 2], {"a": 1}, (fields, [(1, 2)], []),
                (fields, [], [3])):
        path.write_bytes(marshal.dumps(bad))
        assert cache._load(path) is None, bad
    built = cache.cached_cases("x-suite", lambda: [])
    assert built == []


# --- 6. mps never forgives a crash ---------------------------------------------------------------------


def test_mps_refuses_known_crash_and_flaky_crashes(tmp_path):
    import datetime as dt

    from torchcts.results.ledger.annotate import RecordAnnotator
    from torchcts.results.ledger.apply import apply, gate_failures, ledger_report

    entries = [{"match": "a/*", "status": "known_crash", "reason": "r"}]
    crash = {"id": "a/x", "status": "crashed", "message": "signal SIGSEGV"}
    today = dt.date(2026, 1, 1)
    assert apply(CaseRecord.from_json(crash), entries, today, device="cuda").status == "xfailed"
    on_mps = apply(CaseRecord.from_json(crash), entries, today, device="mps")
    assert on_mps.status == "crashed" and "cannot forgive" in on_mps.expectation["note"]
    report = ledger_report(entries, [on_mps], today, "mps")
    assert report["invalid"] and "invalid on mps" in report["invalid"][0]["reason"]
    assert gate_failures(Run(totals={"crashed": 1}, ledger=report))
    # a crash that passes on a rerun stays a crash on mps (flaky elsewhere)
    for device, expected in (("mps", "crashed"), ("cuda", "flaky")):
        run_dir = fake_run(tmp_path / device, "r", [crash], device=device)
        out = RecordAnnotator(rundir.read_run(run_dir), run_dir, attempt=2)(CaseRecord(id="a/x", status="passed"))
        assert out.status == expected
