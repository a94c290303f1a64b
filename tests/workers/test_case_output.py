"""The backend's own output is kept with its case, never on the terminal (issue 48 item 4).

pytorch_ocl prints the OpenCL source of every program that fails to build (55,000 lines in one
level-2 run, printed by pytest under each failure). A run keeps what a case printed in its record
(`case_output`: the line count and the end, where a build log says what failed) and says in one
line that it did.
"""

from __future__ import annotations

import os

from helpers.noisy_backend import LINES
from helpers.paths import TESTS
from helpers.runs import latest_run, records, run_cli


def test_a_noisy_backend_keeps_its_output_in_the_record_not_the_terminal(tmp_path):
    env = {"TORCHCTS_EXTRA_SUITES": "noisy=helpers.noisy_backend",
           "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--device", "cpu", "--case", "noisy/*", "--", "-n", "1", cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert "program source line" not in out and "Captured stderr" not in out
    # a failing case runs again without the dispatch observer (engine/runner.py): it printed its log twice
    lines = 2 * (LINES + 2) + 2  # and two section heads
    assert f"the case printed {lines} lines (kept in cases.jsonl: case_output)" in out
    (rec,) = records(latest_run(tmp_path))
    assert rec["status"] == "error" and rec["case_output"].startswith(f"[{lines} lines printed; the last 4000 characters]")
    assert rec["case_output"].rstrip().endswith("clBuildErrorCode: -11 (the last line of the log)")
    summary = (latest_run(tmp_path) / "summary.md").read_text()
    assert "program source line" not in summary and f"the case printed {lines} lines" in summary
