"""End-to-end: the first five minutes of a backend engineer, on CPU."""

from __future__ import annotations

import json

from helpers.runs import latest_run, records, run_cli


def test_init_check_run_level1(tmp_path):
    r = run_cli("init", "--template", "minimal", cwd=tmp_path)  # the default device is cpu
    assert r.returncode == 0, r.stderr
    r = run_cli("check-manifest", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_cli("run", "--device", "cpu", "--level", "1", "--", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    run = latest_run(tmp_path)
    recs = records(run)
    statuses = {rec["status"] for rec in recs}
    assert "passed" in statuses
    # minimal template claims float32/int64/bool: other dtypes are recorded not_claimed, not dropped
    nc = [rec for rec in recs if rec["status"] == "not_claimed"]
    assert nc and all(rec["dtype"] not in ("float32", "int64", "bool") for rec in nc)
    assert (run / "summary.md").is_file()
    # every executed case says which worker ran it, when, and its CPU and memory (engine/probe.py)
    executed = [rec for rec in recs if rec["status"] == "passed"]
    assert all(rec["worker"].startswith("gw") and rec["started_at"] > 0 and rec["maxrss_mb"] > 0
               and rec["cpu_s"] >= 0 and "rss_grew_mb" in rec for rec in executed), executed[0]
    # ... and the torch threads it ran with: cores // workers, unless the user set OMP_NUM_THREADS (engine/threads.py)
    threads = json.loads((run / "run.json").read_text())["threads"]
    if threads["per_worker"] is not None:
        assert threads["workers"] >= 1 and {rec["threads"] for rec in executed} == {threads["per_worker"]}, threads
    else:
        assert "set by the user" in threads["source"], threads
    # results/latest links the run, so its report opens by that path; the matrix has only claimed dtypes
    assert (tmp_path / "results" / "latest").is_symlink()
    page = (tmp_path / "results" / "latest" / "report.html").read_text()
    matrix = page.split("id='matrix'", 1)[1].split("</table>", 1)[0]
    assert "<th>float32</th>" in matrix and "<th>float16</th>" not in matrix and "id='unclaimed-dtypes'" in page


def test_missing_device_in_ci_is_usage_error(tmp_path):
    r = run_cli("run", cwd=tmp_path)
    assert r.returncode == 2
    assert "--device is required" in r.stderr
    assert "Traceback" not in r.stderr
