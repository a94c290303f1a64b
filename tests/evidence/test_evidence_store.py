"""The store only grows and never identifies a machine: verify-evidence catches every rewrite."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.paths import REPO

from torchcts.evidence import store as st
from torchcts.evidence.privacy import leaks, scrub
from torchcts.evidence.verify import verify_store


def _record(i: int, gate: str = "cpu") -> dict:
    return {"surface": f"aten::op{i}", "gate": gate, "source": "s1", "registration": {"kernel": "native"},
            "oracles": [], "result": {"status": "passed", "reason": "ok"}, "intent": ["coverage"],
            "run_status": "complete"}


def _source() -> dict:
    return {"id": "s1", "torchcts": "0.1.0", "torch": "2.13.0", "python": "3.11", "os": "Linux",
            "arch": "x86_64", "device": {"type": "cpu"}}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = st.open_store(tmp_path / "ev")
    st.append(path, st.SOURCES, [_source()])
    st.append(path, "cpu.jsonl", [_record(i) for i in range(3)])
    st.append(path, "cpu.jsonl", [_record(i) for i in range(3, 5)])  # a second collection appends
    st.write_index(path)
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


def test_valid_store_is_canonical_and_chained(store):
    assert verify_store(store, identities=set()) == []
    lines = _lines(store / "cpu.jsonl")
    assert len(lines) == 5
    assert all(st.canonical(json.loads(line)) == line for line in lines)
    assert json.loads(lines[0])["prev"] == ""
    assert json.loads(lines[3])["prev"] == st.line_hash(lines[2])  # chain continues across appends
    index = json.loads((store / st.INDEX).read_text())
    assert index["files"]["cpu.jsonl"]["records"] == 5 and index["files"]["cpu.jsonl"]["results"] == {"passed": 5}


def test_changed_middle_record_is_rejected(store):
    lines = _lines(store / "cpu.jsonl")
    rec = json.loads(lines[1])
    rec["result"]["status"] = "failed"
    lines[1] = st.canonical(rec)
    _write(store / "cpu.jsonl", lines)
    problems = verify_store(store, identities=set())
    assert any("cpu.jsonl:3: hash chain broken" in p for p in problems)


def test_reordered_records_are_rejected(store):
    lines = _lines(store / "cpu.jsonl")
    lines[1], lines[2] = lines[2], lines[1]
    _write(store / "cpu.jsonl", lines)
    assert any("hash chain broken" in p for p in verify_store(store, identities=set()))


def test_changed_last_record_and_truncation_are_rejected(store):
    path = store / "cpu.jsonl"
    original = _lines(path)
    rec = json.loads(original[-1])
    rec["result"]["reason"] = "edited"
    _write(path, [*original[:-1], st.canonical(rec)])
    assert any("last line differs" in p for p in verify_store(store, identities=set()))
    _write(path, original[:-1])
    assert any("4 records but the index says 5" in p for p in verify_store(store, identities=set()))


def test_non_canonical_line_is_rejected(store):
    path = store / "cpu.jsonl"
    lines = _lines(path)
    lines[0] = json.dumps(json.loads(lines[0]), indent=None)  # spaces after separators
    _write(path, lines)
    assert any("cpu.jsonl:1: not canonical" in p for p in verify_store(store, identities=set()))


def test_rewrite_with_recomputed_chain_is_caught_against_base(store, tmp_path):
    import shutil

    base = tmp_path / "base"
    shutil.copytree(store, base)
    records = [json.loads(line) for line in _lines(store / "cpu.jsonl")]
    for r in records:
        r.pop("prev")
    records[0]["result"]["status"] = "failed"
    (store / "cpu.jsonl").unlink()
    st.append(store, "cpu.jsonl", records)
    st.write_index(store)
    assert verify_store(store, identities=set()) == []  # self-consistent forgery...
    assert any("rewritten, not appended" in p for p in verify_store(store, identities=set(), base=base))


@pytest.mark.parametrize(
    "planted,expect",
    [
        ({"reason": "see /home/alice/work/x.py"}, "absolute path"),
        ({"reason": r"C:\Users\alice\x.py"}, "absolute path"),
        ({"reason": "built by alice@alice-laptop"}, "user@host"),
        ({"hostname": "anything"}, "key 'hostname'"),
        ({"reason": "ran on alice-laptop today"}, "host or user name 'alice-laptop'"),
        ({"reason": "owner alice"}, "host or user name 'alice'"),
    ],
)
def test_planted_identity_is_rejected(store, planted, expect):
    path = store / "cpu.jsonl"
    rec = _record(9)
    rec["result"].update(planted) if "reason" in planted else rec.update(planted)
    st.append(store, "cpu.jsonl", [rec])
    st.write_index(store)  # a perfectly appended record that leaks is still rejected
    problems = verify_store(store, identities={"alice", "alice-laptop"})
    assert any(expect in p and p.startswith("cpu.jsonl:6") for p in problems), problems
    assert path.is_file()


def test_verify_finds_this_machines_names_looking_them_up_once(store, monkeypatch):
    """Without `identities`, the verifier checks this machine's names, resolved once per store (a
    DNS query per record would make a big store slow to verify)."""
    import getpass
    import socket

    lookups = []
    monkeypatch.setattr(socket, "gethostname", lambda: lookups.append(1) or "build-box-17")
    monkeypatch.setattr(socket, "getfqdn", lambda: "build-box-17")
    monkeypatch.setattr(getpass, "getuser", lambda: "jdoe")
    rec = _record(9)
    rec["result"]["reason"] = "ran on build-box-17"
    st.append(store, "cpu.jsonl", [rec])
    st.write_index(store)
    problems = verify_store(store, history=False)
    assert any("host or user name 'build-box-17'" in p and p.startswith("cpu.jsonl:6") for p in problems), problems
    assert len(lookups) == 1  # 7 records


def test_local_host_and_user_names_are_detected(monkeypatch):
    import getpass
    import socket

    monkeypatch.setattr(socket, "gethostname", lambda: "build-box-17.corp.example")
    monkeypatch.setattr(socket, "getfqdn", lambda: "build-box-17.corp.example")
    monkeypatch.setattr(getpass, "getuser", lambda: "jdoe")
    assert leaks({"m": "collected on build-box-17"}) and leaks({"m": "by jdoe"})
    assert leaks({"m": "operators/elementwise/add on cuda+rocm, 3/4 differ"}) == []
    assert scrub("jdoe ran /home/jdoe/x.py") == "<redacted> ran <path:x.py>"


def _shallow() -> bool:
    r = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True)
    return r.stdout.strip() == "true"


def test_cli_verify_committed_example_store(cli, capsys):
    store = REPO / "evidence" / "backends"
    assert (store / "cpu.jsonl").is_file(), "the example store is committed"
    if _shallow():  # a --depth clone (a CI checkout): the chain cannot be proven, and it says so
        assert cli(["coverage", "verify-evidence", str(store)]) == 1
        assert "shallow" in capsys.readouterr().out
        return
    assert verify_store(store) == []
    assert cli(["coverage", "verify-evidence", str(store)]) == 0
    assert "valid" in capsys.readouterr().out


def test_cli_verify_rejects_tampered_store(cli, store, capsys):
    lines = _lines(store / "cpu.jsonl")
    _write(store / "cpu.jsonl", lines[::-1])
    assert cli(["coverage", "verify-evidence", str(store)]) == 1
    assert "hash chain broken" in capsys.readouterr().out
