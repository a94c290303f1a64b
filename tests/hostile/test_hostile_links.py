"""Issue 31, class 2: no write leaves its folder. Symbolic links planted in a run folder or an evidence
store (at a report's name, at the temporary name a writer used, as the repro/ folder) are refused,
and the file they point to is left as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.crafted import case_json, failed, fake_run

from torchcts.errors import UsageError
from torchcts.evidence import store as st

ADD = "operators/elementwise/add/float32"
VICTIM = "victim: must stay as it is\n"


def _victim(workdir: Path) -> Path:
    outside = workdir / "outside"
    outside.mkdir(exist_ok=True)
    path = outside / "victim.txt"
    path.write_text(VICTIM)
    return path


@pytest.mark.parametrize("planted", ["summary.md", "report.html", "junit.xml", "cases.jsonl"])
def test_report_refuses_a_link_in_the_run_folder(workdir, cli, capsys, planted):
    run_dir = fake_run(workdir, "r", [failed(ADD, message="m")], plan=[case_json(ADD)])
    victim = _victim(workdir)
    if planted == "cases.jsonl":  # the records are read through it, and appended to by nothing
        victim.write_text((run_dir / planted).read_text())
        expected = victim.read_text()
    (run_dir / planted).unlink(missing_ok=True)
    os.symlink(victim, run_dir / planted)
    code = cli(["report"])
    err = capsys.readouterr().err
    if planted == "cases.jsonl":
        assert code == 1 and victim.read_text() == expected
        return
    assert code == 2 and victim.read_text() == VICTIM
    assert "symbolic link" in err and str(workdir) not in err


def test_report_never_writes_through_a_planted_temporary_name(workdir, cli):
    run_dir = fake_run(workdir, "r", [failed(ADD, message="m")], plan=[case_json(ADD)])
    victim = _victim(workdir)
    os.symlink(victim, run_dir / "run.json.tmp")  # the name run.json's writer used
    assert cli(["report"]) == 1  # the verdict: a failed case
    assert victim.read_text() == VICTIM and not (run_dir / "run.json").is_symlink()


def test_repro_refuses_a_linked_repro_folder(workdir, cli, capsys):
    run_dir = fake_run(workdir, "r", [failed(ADD, message="m")], plan=[case_json(ADD)])
    elsewhere = workdir / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, run_dir / "repro")
    assert cli(["repro", ADD, "--run", str(run_dir)]) == 2
    assert not list(elsewhere.rglob("*")), "the bundle was written outside the run folder"
    assert "symbolic link" in capsys.readouterr().err


def test_repro_refuses_a_linked_script(workdir, cli):
    victim = _victim(workdir)
    (workdir / "out").mkdir()
    os.symlink(victim, workdir / "out" / "repro.py")
    fake_run(workdir, "r", [failed(ADD, message="m")], plan=[case_json(ADD)])
    assert cli(["repro", ADD, "-o", "out"]) == 2
    assert victim.read_text() == VICTIM


def _store(root: Path) -> Path:
    store = root / "ev"
    store.mkdir()
    st.append(store, st.SOURCES, [{"id": "s1"}])
    st.write_index(store)
    return store


@pytest.mark.parametrize("planted", [st.SOURCES, "cpu.jsonl"])
def test_store_append_refuses_a_linked_file(tmp_path, planted):
    store = _store(tmp_path)
    victim = _victim(tmp_path)
    (store / planted).unlink(missing_ok=True)
    os.symlink(victim, store / planted)
    with pytest.raises(UsageError, match="symbolic link"):
        st.append(store, planted, [{"id": "s2"}])
    assert victim.read_text() == VICTIM


def test_store_index_is_never_written_through_a_planted_temporary(tmp_path):
    store = _store(tmp_path)
    victim = _victim(tmp_path)
    os.symlink(victim, store / (st.INDEX + ".tmp"))  # the name the index writer used
    st.write_index(store)
    assert victim.read_text() == VICTIM and not (store / st.INDEX).is_symlink()


def test_the_writer_stays_inside_its_folder(tmp_path):
    from torchcts.safe_io import write_atomic

    root = tmp_path / "run"
    (root / "sub").mkdir(parents=True)
    for bad in ("../x", "a/b", "..", ""):
        with pytest.raises(UsageError):
            write_atomic(root, bad, "x")
    with pytest.raises(UsageError, match="outside"):
        write_atomic(tmp_path, "x", "x", root=root)
    os.symlink(tmp_path, root / "linked")
    with pytest.raises(UsageError, match="symbolic link"):
        write_atomic(root / "linked", "x", "x", root=root)
    assert not (tmp_path / "x").exists()
    write_atomic(root / "sub", "ok.txt", "fine", root=root)
    assert (root / "sub" / "ok.txt").read_text() == "fine"
    assert sorted(p.name for p in (root / "sub").iterdir()) == ["ok.txt"]  # no temporary left
