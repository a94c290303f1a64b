"""scripts/version-matrix lifts a machine's pip cap for its own pip calls, never by editing the machine
(issue 49: these machines cap torch<=2.14.1 in /etc/xdg/pip; 2.15.0's venv must still be built)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import REPO

SCRIPT = REPO / "scripts" / "version-matrix"


def _script() -> dict:
    import runpy

    return runpy.run_path(str(SCRIPT), run_name="version_matrix")


def test_every_pip_call_reads_no_configuration_file(tmp_path, monkeypatch):
    ns = _script()
    calls: list[tuple[list[str], dict]] = []
    ns["pip"].__globals__["sh"] = lambda cmd, **kw: calls.append((cmd, kw)) or subprocess.CompletedProcess(cmd, 0, "", "")
    ns["pip"](Path(sys.executable), "torch==2.15.0")
    (cmd, kw), = calls
    assert cmd[-1] == "torch==2.15.0" and kw["env"]["PIP_CONFIG_FILE"] == os.devnull


def test_the_lifted_environment_drops_a_configured_constraint(tmp_path):
    """A pip configuration capping torch (as the machine's) is read without the lift and not with it."""
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nconstraint = /nonexistent/constraints.txt\n")
    capped = {**os.environ, "PIP_CONFIG_FILE": str(conf)}
    lifted = {**_script()["PIP_ENV"]}
    listing = [sys.executable, "-m", "pip", "config", "list"]
    assert "constraint" in subprocess.run(listing, env=capped, capture_output=True, text=True).stdout
    assert "constraint" not in subprocess.run(listing, env=lifted, capture_output=True, text=True).stdout
