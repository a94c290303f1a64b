"""tests/helpers/shared_runs.py: a run shared by the session's xdist workers is made once, and a failed one is not kept."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from helpers.shared_runs import run_once


def test_concurrent_askers_get_one_run(tmp_path):
    """Two askers at once (threads here, xdist workers in a session: flock excludes both): one makes
    the run, the other waits and reads its folder and stdout."""
    made: list[Path] = []

    def make(folder: Path) -> str:
        made.append(folder)
        time.sleep(0.2)  # the second asker arrives while the run is being made
        (folder / "out.txt").write_text("x")
        return "stdout of the run"

    got: list[tuple[Path, str]] = []
    askers = [threading.Thread(target=lambda: got.append(run_once(tmp_path, "batch", make))) for _ in range(2)]
    for t in askers:
        t.start()
    for t in askers:
        t.join()
    assert len(made) == 1
    assert got == [(tmp_path / "batch", "stdout of the run")] * 2
    assert (tmp_path / "batch" / "out.txt").read_text() == "x"


def test_a_failed_run_is_made_again_from_an_empty_folder(tmp_path):
    def failing(folder: Path) -> str:
        (folder / "partial").write_text("left by the failed run")
        raise AssertionError("the run's check failed")

    with pytest.raises(AssertionError):
        run_once(tmp_path, "batch", failing)
    seen: list[list[str]] = []

    def make(folder: Path) -> str:
        seen.append(sorted(p.name for p in folder.iterdir()))
        return "second"

    assert run_once(tmp_path, "batch", make) == (tmp_path / "batch", "second")
    assert seen == [[]]
    assert run_once(tmp_path, "other", lambda folder: "another key") == (tmp_path / "other", "another key")
