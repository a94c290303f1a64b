"""Issue 30 item 9: the project's tests show progress a person can read, a line per finished file."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers.paths import TESTS


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_line_per_file_with_counts_and_how_far(tmp_path, workers):
    (tmp_path / "test_a.py").write_text("def test_1():\n    pass\n\ndef test_2():\n    pass\n")
    (tmp_path / "test_b.py").write_text("import pytest\n\ndef test_ok():\n    pass\n\ndef test_bad():\n    assert 0\n\n"
                                        "def test_skip():\n    pytest.skip('no')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", workers, "-p", "helpers.file_progress",
                        "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(tmp_path), str(tmp_path)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 1, r.stdout + r.stderr  # the failing test still fails the session
    lines = {m.group(1): m.group(2) for m in re.finditer(r"^(test_[ab]\.py): (.*)$", r.stdout, re.M)}
    assert re.fullmatch(r"2 passed in \d+s  \[\d/2 files, \d/5 tests, \d+s\]", lines["test_a.py"]), r.stdout
    assert re.fullmatch(r"1 failed, 1 passed, 1 skipped in \d+s  \[\d/2 files, \d/5 tests, \d+s\]",
                        lines["test_b.py"]), r.stdout
    assert "[2/2 files, 5/5 tests" in r.stdout and "1 failed, 3 passed, 1 skipped" in r.stdout


def test_an_in_process_run_leaves_the_callers_environment_as_it_was(workdir, cli, monkeypatch):
    """A run disables pytest's plugin autoload for its own session and workers only: left set, a later
    pytest of the caller's (this test suite's subprocesses) loaded no xdist and knew no -n."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    assert cli(["run", "--validation", "--case", "operators/elementwise/add/float32", "--no-isolation"]) == 0
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in os.environ
