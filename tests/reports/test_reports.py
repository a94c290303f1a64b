"""Reports rebuilt from records: junit.xml, report.html, compare, scrubbing, crash-log parsing."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.paths import REPO
from helpers.runs import run_cli

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.oracle.mismatch import Mismatch
from torchcts.results.records import rundir
from torchcts.results.records.artifacts import write_artifacts
from torchcts.results.records.scrub import scrub
from torchcts.results.reports.compare import compare_records
from torchcts.results.reports.html import render_html
from torchcts.results.reports.html_charts import excess
from torchcts.results.reports.junit import render_junit
from torchcts.workers.isolation import CASE_MARK, TIMEOUT_MARK, parse_log, pytest_extra_args


def rec(cid: str, status: str, **extra) -> CaseRecord:
    suite, _, rest = cid.partition("/")
    return CaseRecord.from_json({"id": cid, "suite": suite, "level": 2, "dtype": rest.rsplit("/", 1)[-1],
                                 "status": status, "duration_s": 0.01, "requires": ["autograd"], **extra})


RUN = {"name": "20260101T000000Z-abc123", "device": {"type": "cpu", "gate": "cpu"}, "gate": "cpu",
       "status": "complete", "torch": {"torch": "2.13.0"}, "filtered": 3, "manifest_hash": "h1", "validation": False}
RECORDS = [
    rec("opinfo/add/float32", "passed", info={"max_abs_error": 1e-7}),
    rec("opinfo/add/float16", "failed", message="values differ <b>",
        mismatch={"max_abs_error": 0.25, "max_rel_error": 0.1, "mismatched": 3, "total": 10},
        repro="torchcts run --device cpu --case opinfo/add/float16"),
    rec("opinfo/mul/float32", "crashed", signal="SIGSEGV", message="worker died", output_tail="Fatal Python error"),
    rec("opinfo/mul/float16", "timeout", message="exceeded"),
    rec("strides/clone/float32", "not_claimed", message="float64 not claimed"),
    rec("strides/clone/float16", "xfailed"),
]


def test_junit_counts_and_no_host():
    root = ET.fromstring(render_junit(Run.from_json(RUN), RECORDS))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    op = suites["opinfo"]
    assert (op.get("tests"), op.get("failures"), op.get("errors")) == ("4", "1", "2")
    assert suites["strides"].get("skipped") == "1"
    crashed = next(c for c in root.iter("testcase") if c.get("name") == "opinfo/mul/float32")
    assert crashed.find("error").get("type") == "crashed" and "SIGSEGV" in crashed.find("error").text
    assert all("hostname" not in el.attrib for el in root.iter())


def test_html_is_self_contained_and_escaped():
    page = render_html(Run.from_json(RUN), RECORDS)
    assert "values differ &lt;b&gt;" in page
    assert "http://" not in page and "https://" not in page and "src=" not in page
    assert page.count("<tr data-status=") == 3  # failed, crashed, timeout
    assert "id='matrix'" in page and "id='by-level'" in page and "function applyFilter" in page
    assert "hsl(0," in page  # opinfo/float16: 0 of 2 passed, coloured red
    assert "torchcts run --device cpu --case opinfo/add/float16" in page


def test_compare_new_failures_fixes_precision():
    old = [rec("a/x/float32", "passed", info={"max_abs_error": 1e-6}), rec("a/y/float32", "failed"),
           rec("a/z/float32", "passed", info={"max_abs_error": 1e-6}), rec("a/w/float32", "crashed")]
    new = [rec("a/x/float32", "failed", mismatch={"max_abs_error": 1e-3}), rec("a/y/float32", "passed"),
           rec("a/z/float32", "passed", info={"max_abs_error": 2.5e-6}), rec("a/w/float32", "timeout"),
           rec("a/v/float32", "error")]
    c = compare_records(old, new)
    assert [x.id for x in c.new_failures] == ["a/x/float32", "a/v/float32"]
    assert [x.id for x in c.fixes] == ["a/y/float32"]
    assert [x.id for x in c.changed_failures] == ["a/w/float32"]
    assert {x.id for x in c.precision} == {"a/x/float32", "a/z/float32"}
    assert compare_records(old, new, common_only=True).new_failures[0].id == "a/x/float32"
    assert not compare_records(old, old).new_failures


def _fake_run(root: Path, name: str, records: list[CaseRecord]) -> Path:
    run = root / name
    run.mkdir(parents=True)
    rundir.write_json_atomic(run / rundir.RUN_JSON, {**RUN, "name": name})
    writer = rundir.RecordWriter(run)
    for r in records:
        writer.append(r)
    writer.close()
    (run / "plan.jsonl").write_text("")  # every run writes its plan (here: nothing left to run)
    return run


def test_compare_cli_exit_status(tmp_path):
    _fake_run(tmp_path / "results", "r1", [rec("a/x/float32", "passed"), rec("a/y/float32", "failed")])
    _fake_run(tmp_path / "results", "r2", [rec("a/x/float32", "failed", message="boom"), rec("a/y/float32", "passed")])
    r = run_cli("compare", "r1", "r2", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert "new failures: 1" in r.stdout and "a/x/float32: passed -> failed: boom" in r.stdout
    assert "fixes: 1" in r.stdout
    r = run_cli("compare", "r2", "r2", cwd=tmp_path)
    assert r.returncode == 0 and "new failures: 0" in r.stdout
    r = run_cli("compare", "r1", "nope", cwd=tmp_path)
    assert r.returncode == 2 and "no run at 'nope'" in r.stderr


def test_a_later_record_of_a_case_wins(tmp_path):
    run = _fake_run(tmp_path, "r", [rec("a/x/float32", "passed"), rec("a/y/float32", "passed"),
                                    rec("a/x/float32", "crashed", message="died after its checks")])
    assert [(r.id, r.status) for r in rundir.final_records(run)] == [("a/y/float32", "passed"),
                                                                            ("a/x/float32", "crashed")]


def test_records_are_appended_not_rewritten(tmp_path):
    run = _fake_run(tmp_path, "r", [rec("a/x/float32", "passed")])
    before = (run / "cases.jsonl").read_bytes()
    w = rundir.RecordWriter(run)
    w.append(rec("a/y/float32", "failed", message=f"at {os.getcwd()}/kernel.py and {Path.home()}/x"))
    after = (run / "cases.jsonl").read_bytes()
    w.close()
    assert after.startswith(before) and after.count(b"\n") == 2
    assert os.getcwd() not in after.decode() and str(Path.home()) + "/" not in after.decode()


def test_scrub_paths():
    text = f"File \"{Path(__file__).resolve()}\", line 3\n{sys.prefix}/lib/x.py {Path.home()}/y"
    out = scrub(text)
    assert str(Path.home()) not in out and sys.prefix not in out and "line 3" in out


def test_crash_log_blames_the_running_case():
    log = (f"{CASE_MARK}100.0 torchcts::a\nnoise from a\n"
           f"{CASE_MARK}105.5 torchcts::b\nFatal Python error: Segmentation fault\n"
           f"  File \"/x/site-packages/_pytest/runner.py\", line 1 in call\n  File \"b.py\", line 3 in b\n")
    info = parse_log(log, "torchcts::b")
    assert info["start"] == 105.5 and info["timeout"] is None and info["started"]
    assert parse_log(log, "torchcts::never_ran")["started"] is False  # rescheduled, never blamed
    assert "noise from a" not in info["tail"] and "b.py" in info["tail"] and "_pytest" not in info["tail"]
    hung = parse_log(f"{CASE_MARK}7.0 torchcts::c\n{TIMEOUT_MARK}3.0\nstack\n", "torchcts::c")
    assert hung["timeout"] == 3.0 and hung["start"] == 7.0


def test_a_crash_names_the_sample_it_died_in(tmp_path):
    """A crash's record names its sample as a failure's does: the case's context notes each sample it
    turns to in the worker's sample file (workers/isolation.py: sample_noter) before the device's
    call; the dead case's own note is the one (an explore crash named none: pytorch_ocl's softmax of
    an empty tensor was found by hand). A note never fails the case, and another case's is no one's."""
    import torch

    from torchcts.cases.context import CaseContext
    from torchcts.manifest.templates import validation_manifest
    from torchcts.model.case import Case
    from torchcts.workers.isolation import crash_record, log_path, sample_noter, sample_path

    log = log_path(tmp_path, "gw0")
    log.write_text(f"{CASE_MARK}100.0 torchcts::a\nFatal Python error: Segmentation fault\n")
    case = Case("opinfo/softmax/int32/explore", "opinfo", 5, "m:f")
    ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest(), case=case,
                      on_sample=sample_noter(tmp_path, "gw0", case.id))
    ctx.describe(op="softmax")  # no sample: nothing noted
    assert not sample_path(tmp_path, "gw0").exists()
    ctx.describe(sample_index=3, sample="(Tensor[0] int32, 0)\nsecond line", recipe="empty", repro="torchcts run ...")
    ctx.describe(sample_index=4, sample="(Tensor[2, 0] int32, 1)", recipe="empty, dim 1")
    started, record = crash_record(case, log.read_text(), tmp_path, "gw0", "torchcts::a", {"signal": "SIGSEGV"})
    assert started and record.status == "crashed" and "Segmentation fault" in record.output_tail
    assert record.info == {"sample_index": 4, "sample": "(Tensor[2, 0] int32, 1)", "recipe": "empty, dim 1",
                           "repro": "torchcts run ..."}
    other = Case("opinfo/softmax/int32/forward", "opinfo", 5, "m:f")  # the note is explore's, not forward's
    assert crash_record(other, log.read_text(), tmp_path, "gw0", "torchcts::a", {"signal": "SIGSEGV"})[1].info is None
    sample_noter(tmp_path / "gone", "gw0", case.id)({"sample": "x"})  # a note that cannot be written: no error


def test_isolation_arguments():
    assert pytest_extra_args([], True, 300, 10)[:2] == ["-n", "1"]
    assert pytest_extra_args([], True, 300, 10_000)[:2] == ["-n", str(os.cpu_count() or 1)]
    assert "--timeout=300" in pytest_extra_args([], True, 300, 10)
    assert not any(a == "-n" for a in pytest_extra_args(["-n", "0"], True, 300, 10))
    # The user's own worker count still lets every case crash its worker (xdist's default: 4 per worker).
    assert pytest_extra_args(["-n", "2"], True, 300, 10) == ["--max-worker-restart=26", "--timeout=300"]
    assert pytest_extra_args(["-n2", "--max-worker-restart=1"], True, 300, 10) == ["--timeout=300"]
    assert not any("restart" in a for a in pytest_extra_args(["-n", "0"], True, 300, 10))
    assert not any(a == "-n" for a in pytest_extra_args([], False, 300, 10))
    assert pytest_extra_args(["--timeout=5"], False, 300, 10) == []
    # work stealing unless the user chose a distribution mode
    assert "--dist=worksteal" in pytest_extra_args([], True, 300, 10)
    assert not any(a.startswith("--dist") for a in pytest_extra_args(["--dist", "loadfile"], True, 300, 10))


CLAIMS = {"supported_dtypes": {"float32": True, "float16": True, "bfloat16": False, "int8": False}}
SUM = "(Tensor[4, 5] float16 strides=(1, 4), dim=1, keepdim=True)"
TRIAGE_RECORDS = [
    rec("opinfo/sum/float32", "passed", op="sum"),
    *[rec(f"opinfo/sum/float16/{kind}", "failed", op="sum", kind=kind, dtype="float16",
          message="values differ",
          info={"sample": SUM.replace("dim=1", f"dim={i}"), "sample_index": i,
                "tolerance": {"category": "reduction", "atol": 1e-3, "rtol": 1e-3}},
          mismatch={"what": "values differ", "max_abs_error": 0.5, "max_rel_error": 0.25, "atol": 1e-3,
                    "rtol": 1e-3, "mismatched": 2, "total": 20, "first_index": [0, 1], "first_expected": 2.0,
                    "first_actual": 2.5},
          repro=f"torchcts run --device cpu --case 'opinfo/sum/float16/{kind}' --sample {i}",
          repro_script=f"torchcts repro opinfo/sum/float16/{kind} --run results/r")
      for i, kind in enumerate(("forward", "method"))],
    rec("opinfo/exp/float32", "error", op="exp", message="NotImplementedError: Could not run 'aten::exp' with "
        "arguments from the 'cpu' backend <script>alert(1)</script>"),
    rec("opinfo/sum/bfloat16", "not_claimed", message="bfloat16 not claimed"),
    rec("opinfo/sum/int8", "not_claimed", message="int8 not claimed"),
]


def test_report_groups_failures_by_cluster_with_what_to_act_on(tmp_path):
    from torchcts.results.reports import html
    from torchcts.results.repro.script import SCRIPT, safe_name

    script = tmp_path / "repro" / safe_name("opinfo/sum/float16/forward") / SCRIPT
    script.parent.mkdir(parents=True)
    script.write_text("# repro")
    page = render_html(Run.from_json({**RUN, "manifest": CLAIMS}), TRIAGE_RECORDS, tmp_path)
    # clusters largest first, each naming what its failures share
    assert page.index("mismatch in sum: values differ") < page.index("missing kernel: aten::exp")
    assert "shared by all 2: <b>dtype float16, input shape [4, 5], non-contiguous, keepdim=True</b>" in page
    assert "dim=0" not in page.split("shared by all 2:", 1)[1].split("</div>", 1)[0]  # what differs is left out
    # the sample, expected vs actual, error metrics and tolerance of each failure
    assert "sample 0: (Tensor[4, 5] float16 strides=(1, 4), dim=0, keepdim=True)" in page
    assert "got <code>2.5</code>, expected <code>2.0</code>" in page and "max abs <b>0.5</b>" in page
    assert "tolerance: atol 0.001 · rtol 0.001 (reduction)" in page
    # a copy button per command; the script folder's link where `torchcts repro` wrote one
    assert "data-copy='torchcts run --device cpu --case &#x27;opinfo/sum/float16/forward&#x27; --sample 0'" in page
    assert f"href='repro/{safe_name('opinfo/sum/float16/forward')}/repro.py'" in page
    assert "data-copy='torchcts repro opinfo/sum/float16/method --run results/r'" in page
    # the matrix has a column per claimed dtype; the unclaimed ones are one line
    matrix = page.split("id='matrix'", 1)[1].split("</table>", 1)[0]
    assert "<th>float16</th>" in matrix and "<th>float32</th>" in matrix and "bfloat16" not in matrix
    unclaimed = page.split("id='unclaimed-dtypes'", 1)[1].split("</p>", 1)[0]
    assert "none of whose cases ran (cases): " in unclaimed and "int8 (1)" in unclaimed and "bfloat16 (1)" in unclaimed
    # charts: pass rate per suite and level, and the worst error per op against its tolerance
    assert "<svg id='suite-chart'" in page and "<svg id='level-chart'" in page
    assert "<svg id='error-chart'" in page and "500 x tol" in page
    assert excess(Mismatch.from_json({"max_abs_error": float("inf"), "atol": 1e-4})) == float("inf")  # off the scale, not "exact"
    assert excess(Mismatch.from_json({"max_abs_error": 38.0, "atol": 0.0, "rtol": 0.0})) is None  # exact: any difference fails
    assert excess(Mismatch.from_json({"max_abs_error": 0.5, "atol": 0.0, "max_rel_error": 0.2, "rtol": 0.1})) == 2.0
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)" in page
    meta = page.split("<div class='meta'>", 1)[1].split("</div>", 1)[0]  # run.json without these fields
    assert "torchcts  · complete ·  →  · manifest h1" in meta and "None" not in meta
    # another part of the report adds its own section with one call
    saved = list(html.SECTIONS)
    try:
        html.add_section(html.Section("coverage", "Coverage", lambda report: f"{len(report.records)} records"),
                         before="matrix-section")
        page = render_html(Run.from_json(RUN), TRIAGE_RECORDS)
        assert "<section id='coverage'><h2>Coverage</h2>6 records</section>" in page
        assert page.index("id='coverage'") < page.index("id='matrix'")
    finally:
        html.SECTIONS[:] = saved


def test_report_renders_in_headless_chromium(tmp_path):
    """The page in a real browser: a screenshot, its script ran, nothing on the console. Opened as
    a user would, `scripts/render_report.py results/latest`; in CI (CI=true) it never skips."""
    if shutil.which("chromium") is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true but chromium is missing: .ci/run installs it (apt-get install -y chromium)")
        pytest.skip("chromium not installed (apt-get install -y chromium); CI runs this test")
    results = tmp_path / "results"
    run = _fake_run(results, "r", TRIAGE_RECORDS)
    write_artifacts(run, Run.from_json({**RUN, "name": "r", "manifest": CLAIMS}), TRIAGE_RECORDS)
    rundir.point_latest(results, run)
    script = REPO / "scripts" / "render_report.py"
    r = subprocess.run([sys.executable, str(script), "results/latest", "--out", str(tmp_path / "shot.png")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "script ran: yes; failure rows: 3; clusters: 2; filter says: 3 of 3 shown" in r.stdout
    assert "console messages: 0" in r.stdout
    shot = (tmp_path / "shot.png").read_bytes()
    assert shot.startswith(b"\x89PNG") and len(shot) > 10_000
    # the filter: a case id shows its row only; a cluster's shared argument shows all its rows
    for query, want in (("float16/forward", "1 of 3 shown"), ("input shape [4, 5]", "2 of 3 shown")):
        page = (run / "report.html").read_text().replace("<input id='q'", f"<input id='q' value='{query}'")
        (tmp_path / "filtered.html").write_text(page)
        r = subprocess.run([sys.executable, str(script), str(tmp_path / "filtered.html")], capture_output=True,
                           text=True, timeout=180)
        assert r.returncode == 0 and f"filter says: {want}" in r.stdout, (query, r.stdout)
    # the console check is real: a page whose script throws is caught
    (tmp_path / "bad.html").write_text("<html><body><script>document.body.dataset.x=1; notDefined();</script>")
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "bad.html")], capture_output=True, text=True,
                       timeout=180)
    assert r.returncode == 1 and "Uncaught ReferenceError: notDefined is not defined" in r.stdout, r.stdout


def test_scorecard_sections_and_regressions_since_previous(tmp_path):
    import io

    from torchcts.results.reports.compare import regressions_line
    from torchcts.results.reports.scorecard import print_scorecard

    root = tmp_path / "results"
    _fake_run(root, "20260101T000000Z-aaaaaa", [rec("a/x/float32", "passed"), rec("a/y/float32", "failed")])
    other = _fake_run(root, "20260101T000001Z-bbbbbb", [rec("a/x/float32", "passed")])
    rundir.write_json_atomic(other / rundir.RUN_JSON, {**RUN, "manifest_hash": "other claims"})  # not comparable
    new = _fake_run(root, "20260102T000000Z-cccccc", [rec("a/x/float32", "crashed", message="died"),
                                                      rec("a/y/float32", "passed")])
    focused = _fake_run(root, "20260101T000002Z-dddddd", [rec("a/y/float32", "failed")])
    rundir.write_json_atomic(focused / rundir.RUN_JSON, {**RUN, "selection": {"ops": ["y"]}})  # another selection
    line = regressions_line(root, new)
    assert line.startswith("since 20260101T000000Z-aaaaaa: 1 new failure, 1 fix, 0 changed failures, "
                           "0 precision regressions (new: a/x/float32)")
    # the line is `torchcts compare` in brief: the command it names prints the same counts
    command = shlex.split(line.rsplit("(torchcts compare ", 1)[1].rstrip(")"))  # as a shell reads it
    r = run_cli("compare", *command, cwd=tmp_path)
    assert r.returncode == 1 and "1 new failure, 1 fix, 0 changed failures, 0 precision regressions" in r.stdout
    out = io.StringIO()
    print_scorecard(new, Run.from_json({**RUN, "totals": {"crashed": 1, "passed": 1}}), out, regressions=line)
    text = out.getvalue()
    assert "by capability:" in text and "autograd" in text and "crashed=1" in text
    from torchcts.results.records.scrub import scrub

    # the terminal is scrubbed: absolute run paths (tmp_path here) print as placeholders
    assert "CRASHED  a/x/float32: died" in text and "slowest:" in text and scrub(line) in text


def test_negative_timeout_is_a_usage_error(tmp_path):
    r = run_cli("run", "--device", "cpu", "--timeout", "-1", cwd=tmp_path)
    assert r.returncode == 2 and "--timeout must be 0" in r.stderr and not (tmp_path / "results").exists()


def test_not_run_cases_and_the_slowest_are_listed_in_every_report(tmp_path):
    """Planned cases without a result never vanish: summary.md and report.html list each by id."""
    from torchcts.results.reports.summary import render_markdown

    records = [*RECORDS, rec("opinfo/sub/float32", "not_run"), rec("opinfo/div/float32", "passed", duration_s=9.5)]
    md, page = render_markdown(Run.from_json(RUN), records), render_html(Run.from_json(RUN), records)
    assert "## Not run (1)" in md and "- `opinfo/sub/float32`" in md
    assert "<h2>Not run</h2><p>1 cases: planned" in page
    assert "<ul id='not-run'><li><code>opinfo/sub/float32</code></li></ul>" in page
    slow = page.split("id='slowest'", 1)[1]
    assert slow.index("opinfo/div/float32") < slow.index("opinfo/add/float32") and "9.500" in slow


def test_latest_is_a_link_or_a_file_and_every_command_takes_both(tmp_path, monkeypatch, cli):
    results = tmp_path / "results"
    old, new = (_fake_run(results, name, [rec("a/x/float32", "passed")]) for name in ("r1", "r2"))
    rundir.point_latest(results, new)
    assert os.readlink(results / "latest") == "r2" and (results / "latest" / "run.json").is_file()
    monkeypatch.chdir(tmp_path)
    for form in ("link", "file"):
        want = new if form == "link" else old
        for ref, root in (("results/latest", results), ("latest", results), (None, results), ("results", results)):
            assert rundir.resolve_run(ref, root).resolve() == want, (form, ref)  # the run's own folder
        assert cli(["report", "results/latest"]) == 0 and (want / "report.html").is_file()
        assert cli(["compare", "r1", "results/latest"]) == 0
        assert cli(["expectations", "update", "results/latest", "-o", f"p-{form}.py"]) == 0
        # where the file system refuses symlinks, `latest` is a one-line file naming the run
        monkeypatch.setattr(os, "symlink", lambda *a, **k: (_ for _ in ()).throw(OSError("no symlinks here")))
        rundir.point_latest(results, old)
        assert not (results / "latest").is_symlink() and (results / "latest").read_text() == "r1\n"
    assert sorted(p.name for p in results.iterdir()) == ["latest", "r1", "r2"]  # no temporary left


def test_latest_copied_as_a_folder_by_an_artifact_upload_still_resolves(tmp_path):
    """GitHub's upload-artifact follows links: a downloaded shard folder holds `latest/` as a copy."""
    import shutil

    from torchcts.errors import UsageError

    results = tmp_path / "results"
    run = _fake_run(results, "r1", [rec("a/x/float32", "passed")])
    shutil.copytree(run, results / "latest")
    assert rundir.resolve_run(str(results)) == run and rundir.resolve_run(str(results / "latest")) == run
    shutil.rmtree(run)  # only the copy came along: the copy is the run
    assert rundir.resolve_run(str(results)) == results / "latest"
    (results / "latest" / "run.json").write_text("{not json")
    with pytest.raises(UsageError):
        rundir.resolve_run(str(results))
