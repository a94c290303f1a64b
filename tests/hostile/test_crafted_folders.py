"""Shared artifacts, round 3 (issue 51): eleven ways a crafted folder or setting still won.

Each test builds what a hostile colleague could hand over (a run folder, shard folders, a corpus
entry, a manifest, an environment variable) and shows the shared reader's answer: one line naming
the file, field or variable with exit status 2 (never 3, TorchCTS's own failure), never a false
"clean", never memory that grows with a line's or a file's length.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from helpers.corpus_entries import EXPLORE_CASE, corpus_entry, tensor_spec
from helpers.crafted import case_json, failed, fake_run
from helpers.paths import REPO
from helpers.stderr import one_error_line

CASE = "operators/elementwise/add/float32"
MUL = "operators/elementwise/mul/float32"
DIED = "worker gw0 died (SIGSEGV) while running this case; a new worker took over"


def passed(case_id: str) -> dict:
    return {"id": case_id, "suite": "operators", "level": 1, "dtype": "float32", "status": "passed"}


# --- item 1: a device name is normalised where it is read ------------------------------------------------


@pytest.mark.parametrize("device", ["mps\u200b", "\u2066MPS\u2069", "m\u00adps:0", "\ufeffmps", "mps\ufe0f"])
def test_an_invisible_character_does_not_talk_mps_out_of_its_rule(workdir, cli, capsys, device):
    xfailed = {**failed(CASE, DIED), "status": "xfailed",
               "expectation": {"entry": 0, "status": "xfail", "reason": "r", "original_status": "failed"}}
    flaky = {**passed(MUL), "status": "flaky", "attempt": 2, "first_failure": {"status": "crashed", "message": DIED}}
    run_dir = fake_run(workdir, "r", [xfailed, flaky], plan=[case_json(CASE), case_json(MUL)], device=device)
    assert cli(["report", str(run_dir)]) == 1
    assert json.loads((run_dir / "run.json").read_text())["totals"] == {"crashed": 2}


def test_the_device_type_is_normalised_once_in_run_json():
    from torchcts.model.run import Run
    from torchcts.untrusted import device_type

    assert device_type(" M\u200bPS:1 ") == "mps" and device_type("cuda") == "cuda" and device_type(5) is None
    assert device_type("\u200b") is None
    run = Run.from_json({"device": {"type": "mps\u200b:0"}})
    assert run.device_type == "mps" and run.device is not None and run.device.type == "mps"
    assert run.to_json() == {"device": {"type": "mps\u200b:0"}}  # read, not rewritten: the file is as it was


# --- item 2: every value that can become a size is bounded, floats too ---------------------------------


@pytest.mark.parametrize("sample", [
    {"input": tensor_spec([2]), "args": [{"float": 2e8.hex()}], "kwargs": {}},  # arange end as a float
    {"input": tensor_spec([2]), "args": [2e8], "kwargs": {}},  # a bare JSON float
    {"input": tensor_spec([2]), "args": [0, {"float": 1e10.hex()}], "kwargs": {}},
    {"input": tensor_spec([2]), "args": [{"tuple": [{"float": "0x1.0p+14"}, {"float": "0x1.0p+14"}]}], "kwargs": {}},
    {"input": tensor_spec([1, 1, 64, 64]), "args": [], "kwargs": {"scale_factor": {"float": (1000.0).hex()}}},
    {"input": tensor_spec([1, 1, 64, 64]), "args": [], "kwargs": {"scale_factor": [1000.0, 1000.0]}},
    {"input": tensor_spec([2]), "args": [], "kwargs": {"steps": {"float": 1e9.hex()}}},
])
def test_a_float_size_is_bounded(tmp_path, sample):
    from torchcts.cases.explore import corpus

    assert corpus.bounds_problem(sample, 256) is not None
    corpus_entry(tmp_path, sample, "big")
    entries, bad = corpus.load(tmp_path, EXPLORE_CASE, max_tensor_mb=256)
    assert entries == [] and bad == 1


def test_an_int_past_floats_range_is_a_refused_size_not_a_crash():
    """Found by bench/fuzz_readers.py (seed 51, input 3727): the bound's message formatted the number
    as a float (OverflowError, exit 3)."""
    from torchcts.cases.explore import corpus

    big = 10**400
    for sample in ({"input": {"tensor": big}, "args": [0], "kwargs": {}}, {"input": None, "args": [big, 0.5], "kwargs": {}},
                   {"input": tensor_spec([2]), "args": [], "kwargs": {"scale_factor": [big, 1e308]}}):
        assert corpus.bounds_problem(sample, 256) is not None


@pytest.mark.parametrize("sample", [
    {"input": tensor_spec([2]), "args": [{"float": 2.5.hex()}, 1e-30], "kwargs": {}},
    {"input": tensor_spec([1, 1, 8, 8]), "args": [], "kwargs": {"scale_factor": 2.0}},
    {"input": tensor_spec([2]), "args": [{"float": "inf"}, {"float": "nan"}], "kwargs": {}},
])
def test_small_floats_and_infinities_still_replay(sample):
    from torchcts.cases.explore import corpus

    assert corpus.bounds_problem(sample, 256) is None


# --- item 3: a lone surrogate never ends a writer --------------------------------------------------------

SURROGATE = "bad\\ud800text\\udfff"  # as JSON escapes: json.loads makes lone surrogates of them


def _surrogate_run(workdir: Path, name: str, status: str = "failed") -> Path:
    run_dir = fake_run(workdir, name, [], plan=[case_json(CASE)], device="cpu")
    line = json.dumps({**failed(CASE + "X", "m"), "status": status}).replace("X", SURROGATE).replace('"m"', f'"{SURROGATE}"')
    (run_dir / "cases.jsonl").write_text(line + "\n")
    spec = (run_dir / "run.json").read_text().replace('"torch": "2.x"', f'"torch": "2.x", "model": "{SURROGATE}"')
    (run_dir / "run.json").write_text(spec)
    return run_dir


@pytest.mark.parametrize("command", ["report", "triage", "update", "compare"])
def test_a_lone_surrogate_never_ends_a_writer(workdir, cli, capsys, command):
    new = _surrogate_run(workdir, "new")
    argv = {"report": ["report", str(new)], "triage": ["report", "--triage", str(new)],
            "update": ["expectations", "update", str(new), "-o", "p.toml"],
            "compare": ["compare", str(_surrogate_run(workdir, "old", "passed")), str(new)]}[command]
    assert cli(argv) in (0, 1)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err


def test_the_reader_replaces_lone_surrogates_and_the_writer_survives_its_own(tmp_path):
    from torchcts.safe_io import open_append, write_atomic
    from torchcts.untrusted import loads

    assert loads('{"a\\ud800": ["x\\udc00", "\\ud83d\\ude00"]}') == {"a\ufffd": ["x\ufffd", "\U0001f600"]}
    write_atomic(tmp_path, "f", os.fsdecode(b"name\xff"))  # Python's own surrogate escape
    assert (tmp_path / "f").read_bytes().decode("utf-8")
    with open_append(tmp_path, "g") as fh:
        fh.write("\ud800\n")
    assert (tmp_path / "g").read_bytes().decode("utf-8")


# --- item 4: junit.xml holds only what XML allows ---------------------------------------------------------


def test_junit_holds_only_xml_characters(workdir, cli):
    import xml.etree.ElementTree as ET

    bad = "a\ufffeb\uffffc\U0010fffe"
    run_dir = fake_run(workdir, "r", [failed(CASE + bad, bad)], plan=[case_json(CASE + bad)])
    assert cli(["report", str(run_dir)]) == 1
    text = (run_dir / "junit.xml").read_text()
    assert "\ufffe" not in text and "\uffff" not in text
    ET.fromstring(text.encode())


# --- item 5: merge never lets a later shard hide an earlier failure -------------------------------------


def _shard(workdir: Path, name: str, index: int, records: list[dict], plan: list[str]) -> Path:
    d = fake_run(workdir, name, records, plan=[case_json(c) for c in plan])
    spec = json.loads((d / "run.json").read_text())
    spec["selection"] = {"shard": [index, 2]}
    (d / "run.json").write_text(json.dumps(spec))
    return d


@pytest.mark.parametrize("order", [("s1", "s2"), ("s2", "s1")])
def test_merge_refuses_shards_that_share_a_case(workdir, cli, capsys, order):
    _shard(workdir, "s1", 1, [failed(CASE, "m")], [CASE])
    _shard(workdir, "s2", 2, [passed(CASE), passed(MUL)], [CASE, MUL])
    assert cli(["merge", *order]) == 2
    one_error_line(capsys, CASE, "both")


def test_merge_of_disjoint_shards_still_works(workdir, cli):
    _shard(workdir, "s1", 1, [failed(CASE, "m"), passed(CASE)], [CASE])  # a rerun inside one shard
    _shard(workdir, "s2", 2, [passed(MUL)], [MUL])
    assert cli(["merge", "s1", "s2"]) == 0


# --- item 6: a results folder inside .git --------------------------------------------------------------


@pytest.mark.parametrize("where", [".git/refs/heads", ".git", "sub/.git/x", ".GIT/objects"])
def test_a_results_folder_inside_git_is_refused(workdir, cli, capsys, where):
    from torchcts.errors import UsageError
    from torchcts.results.records.rundir import check_results_root

    (workdir / ".git" / "refs" / "heads").mkdir(parents=True)
    with pytest.raises(UsageError, match=r"\.git"):
        check_results_root(Path(where))
    with pytest.raises(UsageError, match=r"\.git"):
        check_results_root(workdir / where)
    check_results_root(Path("results"))  # a folder beside .git is fine
    assert cli(["run", "--device", "cpu", "--case", CASE, "--results-dir", ".git/refs/heads"]) == 2
    line = one_error_line(capsys, ".git")
    assert str(workdir) not in line
    assert sorted(p.name for p in (workdir / ".git" / "refs" / "heads").iterdir()) == []


# --- item 7: settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), [("TORCHCTS_WORKERS", "99999999999999999999999"),
                                             ("TORCHCTS_THREADS", "99999999999999999999999"),
                                             ("TORCHCTS_SHARD_COUNT", "1" + "0" * 30),
                                             ("TORCHCTS_CRASH_SERVER_IDLE", "9" * 40)])
def test_a_count_past_any_machine_is_one_line(fresh_settings, monkeypatch, name, value):
    from torchcts import settings
    from torchcts.errors import UsageError

    monkeypatch.setenv(name, value)
    with pytest.raises(UsageError, match=name):
        settings.current()


def test_extra_suites_naming_a_module_that_is_no_suite(fresh_settings, monkeypatch):
    from torchcts.cases import registry
    from torchcts.errors import UsageError

    monkeypatch.setenv("TORCHCTS_EXTRA_SUITES", "x=os")
    monkeypatch.setitem(registry.SUITES, "x", registry.Suite("x", "os", "extra suite"))
    with pytest.raises(UsageError, match="TORCHCTS_EXTRA_SUITES: suite 'x' names module 'os', which is not a suite"):
        registry.suite_cases("x")


# --- item 8: a line is read with a bound ---------------------------------------------------------------


def test_an_over_long_line_is_one_unreadable_line(tmp_path, monkeypatch):
    from torchcts.results.records import jsonl

    monkeypatch.setattr(jsonl, "MAX_LINE", 1000)
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b'{"id": "a"}\n' + b"x" * 5000 + b"\n" + b'{"id": "b"}\n' + b"y" * 3000)
    lines = list(jsonl.read_jsonl(path))
    assert [ln.number for ln in lines] == [1, 2, 3, 4]
    assert [ln.value for ln in lines if ln.error is None] == [{"id": "a"}, {"id": "b"}]
    assert "longer than 1000 bytes" in lines[1].problem and "longer than" in lines[3].problem


def test_a_newline_free_file_reads_in_bounded_memory(workdir, cli, capsys):
    """A sparse 1 GB cases.jsonl: report counts it as one unreadable line (ru_maxrss checked in the
    benchmark, bench/big_runs.py; here the reader must not hold the line)."""
    import tracemalloc

    from torchcts.results.records import jsonl

    run_dir = fake_run(workdir, "r", [], plan=[case_json(CASE)])
    with open(run_dir / "cases.jsonl", "wb") as fh:
        fh.truncate(256 << 20)
    tracemalloc.start()
    lines = list(jsonl.read_jsonl(run_dir / "cases.jsonl"))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(lines) == 1 and lines[0].error is not None and peak < 64 << 20, peak
    assert cli(["report", str(run_dir)]) == 2


def test_run_json_past_its_bound_is_refused(workdir, cli, capsys, monkeypatch):
    from torchcts import untrusted

    run_dir = fake_run(workdir, "r", [passed(CASE)], plan=[case_json(CASE)])
    monkeypatch.setattr(untrusted, "MAX_FILE", 1000)
    assert cli(["report", str(run_dir)]) == 2
    one_error_line(capsys, "run.json", "larger than")


# --- item 9: readers stream ----------------------------------------------------------------------------


def test_the_record_reader_streams(tmp_path):
    """read_jsonl and iter_records take one line at a time: the first record arrives before the
    file's end is written (memory for 10^6 records is measured in bench/big_runs.py)."""
    from torchcts.results.records import jsonl, rundir

    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(passed(CASE)) + "\n")
    with open(path, "a") as writer:
        lines = jsonl.read_jsonl(path)
        assert next(lines).value["id"] == CASE
        writer.write(json.dumps(passed(MUL)) + "\n")
        writer.flush()
        assert next(lines).value["id"] == MUL
    problems: list[str] = []
    records = rundir.iter_records(tmp_path, problems)
    assert next(records).id == CASE and problems == []


# --- item 10: a TOML datetime `expires` ----------------------------------------------------------------


@pytest.mark.parametrize("value", ["2027-06-30T00:00:00", "2027-06-30T00:00:00Z", "00:00:00"])
def test_a_toml_datetime_expires_is_refused_by_the_manifest(workdir, cli, capsys, value):
    from torchcts.manifest.templates import validation_manifest

    del validation_manifest
    (workdir / "torchcts.toml").write_text(
        "device_name = 'cpu'\nbackend_gate = 'cpu'\n"
        "[[expectations]]\nmatch = 'operators/*'\nstatus = 'xfail'\nreason = 'r'\n"
        f"expires = {value}\n")
    assert cli(["check-manifest", "--no-import"]) == 2
    err = capsys.readouterr().err
    assert "expires" in err and "Traceback" not in err


# --- item 11: small ones -------------------------------------------------------------------------------


def test_a_fifo_cases_jsonl_is_a_data_error_without_blocking(workdir, cli, capsys):
    run_dir = fake_run(workdir, "r", [], plan=[case_json(CASE)])
    (run_dir / "cases.jsonl").unlink()
    os.mkfifo(run_dir / "cases.jsonl")
    result: list[int] = []
    reader = threading.Thread(target=lambda: result.append(cli(["report", str(run_dir)])), daemon=True)
    reader.start()
    reader.join(30)
    if not result:  # unblock the reader before failing
        with open(run_dir / "cases.jsonl", "wb"):
            pass
        pytest.fail("report blocked on a FIFO cases.jsonl")
    assert result == [2]
    one_error_line(capsys, "cases.jsonl", "not a regular file")


def test_a_fifo_run_json_is_a_data_error(workdir, cli, capsys):
    run_dir = fake_run(workdir, "r", [passed(CASE)], plan=[case_json(CASE)])
    (run_dir / "run.json").unlink()
    os.mkfifo(run_dir / "run.json")
    from torchcts.errors import UsageError
    from torchcts.results.records import rundir

    with pytest.raises(UsageError, match="not a regular file"):
        rundir.read_run(run_dir)


def test_repro_of_a_300_character_case_id(workdir, cli, capsys):
    from torchcts.results.repro.script import safe_name

    long_id = "operators/elementwise/add/" + "x" * 300
    assert len(safe_name(long_id)) <= 120 and safe_name(long_id) != safe_name(long_id + "y")
    assert safe_name(CASE) == "operators__elementwise__add__float32"
    run_dir = fake_run(workdir, "r", [failed(long_id, "m")], plan=[case_json(long_id)])
    code = cli(["repro", long_id, "--run", str(run_dir)])
    err = capsys.readouterr().err
    assert code == 0 and "free space" not in err, err


def test_the_warm_folder_refusal_names_no_absolute_path(tmp_path, monkeypatch):
    from torchcts.workers import warm

    folder = tmp_path / "warm"
    folder.mkdir(mode=0o755)
    monkeypatch.setattr(warm.settings, "warm_folder", lambda env=None: folder)
    with pytest.raises(OSError) as info:
        warm.server_dir()
    assert str(tmp_path) not in str(info.value) and "warm" in str(info.value)


def test_security_page_says_a_manifest_py_is_code():
    text = (REPO / "docs" / "security.md").read_text()
    assert "`manifest.py` is Python code" in text and "`check-manifest --no-import` too" in text


def test_a_fifo_or_huge_manifest_is_one_problem(workdir, cli, capsys, monkeypatch):
    from torchcts import untrusted

    os.mkfifo(workdir / "fifo.toml")
    assert cli(["check-manifest", "--no-import", "fifo.toml"]) == 2  # never opened to block
    assert "Traceback" not in capsys.readouterr().err
    (workdir / "big.toml").write_text("device_name = 'cpu'\n" + "# pad\n" * 400)
    monkeypatch.setattr(untrusted, "MAX_FILE", 1000)
    assert cli(["check-manifest", "--no-import", "big.toml"]) == 2
    assert "larger than 1,000 bytes" in capsys.readouterr().err


def test_the_warm_folder_that_cannot_be_made_names_no_absolute_path(tmp_path, monkeypatch):
    from torchcts.workers import warm

    (tmp_path / "file").write_text("")
    monkeypatch.setattr(warm.settings, "warm_folder", lambda env=None: tmp_path / "file" / "warm")
    with pytest.raises(OSError) as info:
        warm.server_dir()
    assert str(tmp_path) not in str(info.value) and "warm" in str(info.value)


def test_the_record_writer_never_writes_a_line_the_readers_refuse(tmp_path, monkeypatch):
    """A record past the line bound (a huge traceback) is cut to its verdict when written: a run of
    ours never leaves a record no report can read."""
    from torchcts.model.record import CaseRecord
    from torchcts.results.records import jsonl, rundir

    monkeypatch.setattr(rundir, "MAX_LINE", 2000)
    monkeypatch.setattr(jsonl, "MAX_LINE", 2000)
    writer = rundir.RecordWriter(tmp_path)
    writer.append(CaseRecord.from_json({**failed(CASE, "boom"), "traceback": "x" * 10_000, "info": {"a": "y" * 5000}}))
    writer.close()
    problems: list[str] = []
    [record] = rundir.iter_records(tmp_path, problems)
    assert problems == [] and record.status == "failed" and record.id == CASE
    assert "record cut to its verdict" in record.message and record.message.endswith("boom")
