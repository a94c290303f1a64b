"""issue 30 item 6, the newcomer's rough edges: merge, install and the counts a user reads side by side."""

from __future__ import annotations

import json
import os
import re

import pytest
from helpers.crafted import fake_run
from helpers.paths import HELPERS, TESTS
from helpers.runs import latest_run, records, run_cli
from helpers.stderr import sole_stderr_line


def _shards(workdir, n: int = 2) -> None:
    for i in range(1, n + 1):
        d = fake_run(workdir, f"s{i}", [{"id": f"a/{i}", "status": "passed"}])
        spec = json.loads((d / "run.json").read_text())
        spec["selection"] = {"shard": [i, n]}
        (d / "run.json").write_text(json.dumps(spec))


def test_merge_says_the_same_run_was_given_twice(workdir, cli, capsys):
    _shards(workdir)
    assert cli(["merge", "s1", "s1"]) == 2
    line = sole_stderr_line(capsys)
    assert "the same run given twice: s1 (as 's1' and 's1')" in line and "at least two" not in line
    assert cli(["merge", "s1", "results/s1", "s2"]) == 2
    assert "the same run given twice: s1 (as 's1' and 'results/s1')" in sole_stderr_line(capsys)
    # `results/*` also names `results/latest` (here s2): counted once, as before
    assert cli(["merge", "results/s1", "results/s2", "results/latest"]) == 0
    assert cli(["merge", "s1"]) == 2
    assert "merge needs at least two shard runs" in sole_stderr_line(capsys)


NA_MANIFEST = '''
import torch
manifest = {
    "manifest_version": 1, "device_name": "cpu", "supported_dtypes": {torch.float32: True},
    "capabilities": {"inference": True, "training": False, "rng": False, "device_api": False, "multi_device": False},
}
'''


@pytest.mark.parametrize("workers", ["0", "1"])
def test_pytest_and_torchcts_counts_name_the_same_statuses(tmp_path, workers):
    """issue 30: pytest's "5 skipped" beside TorchCTS's "not_applicable 30". pytest's line names a
    case that ran and was not applicable by its status; the scorecard says which cases were decided
    before the run, which pytest never sees."""
    (tmp_path / "manifest.py").write_text(NA_MANIFEST)
    env = {"TORCHCTS_EXTRA_SUITES": "na=helpers.na_suite",
           "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--device", "cpu", "--case", "na/*", "--", "-n", workers, cwd=tmp_path, env=env, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert re.search(r"= 1 passed, 1 not_applicable in [\d.]+s", out), out[-2000:]
    assert "skipped" not in out
    statuses = sorted(rec["status"] for rec in records(latest_run(tmp_path)) if rec["status"] != "filtered")
    assert statuses == ["not_applicable", "not_claimed", "passed"]
    totals = next(line for line in out.splitlines() if line.startswith("totals: "))
    assert "passed 1" in totals and "not_applicable 1" in totals and "not_claimed 1" in totals
    assert ("  of these, decided before the run from the claims and the build (not in pytest's counts): "
            "not_claimed 1\n") in out


def test_check_manifest_takes_runs_manifest_flag_too(tmp_path):
    """`check-manifest --manifest M.py`, run's spelling, checks M.py (it said "unrecognized argument");
    two different manifests are one clear error."""
    manifest = HELPERS / "ocl_manifest.py"
    ok = run_cli("check-manifest", "--manifest", str(manifest), "--no-import", cwd=tmp_path)
    assert ok.returncode == 0 and "OK — device 'ocl'" in ok.stdout, ok.stdout + ok.stderr
    both = run_cli("check-manifest", str(manifest), "--manifest", "other.py", "--no-import", cwd=tmp_path)
    assert both.returncode == 2 and both.stderr.strip().splitlines() == [
        f"torchcts: error: check-manifest got two manifests ({manifest} and --manifest other.py); give one"]
