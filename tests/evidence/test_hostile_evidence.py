"""Issue 31, class 6: an edited evidence store cannot be laundered by collecting into it, a failed
append leaves no file ahead of the others, and collect and verify read a torn tail the same way.
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

from torchcts.evidence import store as st
from torchcts.evidence.verify import verify_store

COLLECT = ["coverage", "collect-backend-evidence", "--store", "ev", "--device", "cpu", "--backend-gate", "cpu"]


def _collected(workdir: Path, cli, surface: str = "aten::add.Tensor") -> Path:
    assert cli([*COLLECT, "--surface", surface]) == 0
    return workdir / "ev"


def test_collect_refuses_an_edited_store_and_it_stays_caught(workdir, cli, capsys):
    store = _collected(workdir, cli)
    path = store / "cpu.jsonl"
    record = json.loads(path.read_text().splitlines()[0])
    record["result"]["status"] = "passed" if record["result"]["status"] != "passed" else "failed"
    path.write_text(st.canonical(record) + "\n")  # the edit verify-evidence catches (index head differs)
    caught = verify_store(store, history=False)
    assert caught
    before = {p.name: p.read_bytes() for p in store.iterdir()}
    capsys.readouterr()
    assert cli([*COLLECT, "--surface", "aten::neg"]) == 2
    assert "does not verify" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before  # nothing appended, index untouched
    assert verify_store(store, history=False) == caught


def test_a_failed_collection_appends_nothing_anywhere(workdir, cli, monkeypatch):
    store = _collected(workdir, cli)
    before = {p.name: p.read_bytes() for p in store.iterdir()}
    real = st.append

    def full_disk_on_the_gate_file(where, name, records):
        if name != st.SOURCES:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(where, name, records)

    monkeypatch.setattr(st, "append", full_disk_on_the_gate_file)
    assert cli([*COLLECT, "--surface", "aten::neg"]) == 2
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before  # sources.jsonl cut back too
    assert verify_store(store, history=False) == []


def test_collect_and_verify_agree_on_a_missing_final_newline(workdir, cli):
    store = _collected(workdir, cli)
    path = store / "cpu.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # the last line is whole, its newline is gone
    problems = verify_store(store, history=False)
    assert any("torn" in p for p in problems), problems
    assert cli([*COLLECT, "--surface", "aten::neg"]) == 2


def test_collect_refuses_a_store_with_an_added_line(workdir, cli):
    store = _collected(workdir, cli)
    path = store / "cpu.jsonl"
    path.write_text(path.read_text() + path.read_text().splitlines()[0] + "\n")  # a duplicated line
    assert cli([*COLLECT, "--surface", "aten::neg"]) == 2
