"""Issue 31, class 7: mistakes of the user's environment or data are one clear line and exit 2, leave
no bogus run behind and print no absolute path (never exit 3 with a traceback, never accepted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.crafted import case_json, failed, fake_run
from helpers.runs import run_cli

ADD = "operators/elementwise/add/float32"


def _one_line_exit_2(r: subprocess.CompletedProcess, root: Path) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    errors = [ln for ln in r.stderr.splitlines() if not ln.startswith("torchcts: note:")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert str(root) not in r.stderr and os.path.expanduser("~") + os.sep not in r.stderr, r.stderr
    return errors[0]


def test_an_unreachable_working_folder(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    code = ("import os, sys, runpy; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
            "sys.argv = ['torchcts', 'report']; runpy.run_module('torchcts', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code, str(gone)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "CI": "true"})
    assert "working folder" in _one_line_exit_2(r, tmp_path)


@pytest.mark.parametrize("command", [["run", "--device", "cpu", "--case", ADD], ["report"], ["merge", "a", "b"]])
def test_an_empty_results_dir(tmp_path, command):
    r = run_cli(*command, "--results-dir", "", cwd=tmp_path)
    assert "--results-dir" in _one_line_exit_2(r, tmp_path)
    assert list(tmp_path.iterdir()) == []  # no run folder or `latest` among the user's files


def test_a_results_folder_that_cannot_be_created(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "link", target_is_directory=True)  # a loop: ELOOP
    # typed relative: the line echoes the argument as typed (issue 53), never the absolute path behind it
    r = run_cli("run", "--device", "cpu", "--case", ADD, "--results-dir", "link/results", cwd=tmp_path)
    assert "--results-dir link/results" in _one_line_exit_2(r, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link"]


@pytest.mark.parametrize("field, value", [("torch", "2.x"), ("compat_fallbacks", [{"a": 1}]),
                                          ("manifest.expectations", "all")])
def test_run_json_fields_of_the_wrong_type(tmp_path, field, value):
    run_dir = fake_run(tmp_path, "r", [failed(ADD, message="m")], plan=[case_json(ADD)])
    spec = json.loads((run_dir / "run.json").read_text())
    if "." in field:
        spec["manifest"][field.split(".")[1]] = value
    else:
        spec[field] = value
    (run_dir / "run.json").write_text(json.dumps(spec))
    for command in (["report"], ["coverage", "report", "r"]):
        r = run_cli(*command, cwd=tmp_path)
        assert field in _one_line_exit_2(r, tmp_path)


def test_manifest_problems_are_capped(tmp_path):
    """A manifest with hundreds of problems: the first 20 and a count, not a screenful per problem."""
    bogus = ", ".join(f"'bogus_dtype_{i}': True" for i in range(60))
    (tmp_path / "manifest.py").write_text(
        "manifest = {'manifest_version': 1, 'device_name': 'cpu', 'backend_import': None, 'semantic_level': 1, "
        f"'supported_dtypes': {{{bogus}}}, 'capabilities': {{}}}}\n")
    r = run_cli("check-manifest", "--no-import", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) <= 21 and "more problems" in lines[-1], r.stderr[-3000:]
