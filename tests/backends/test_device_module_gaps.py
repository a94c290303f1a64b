"""A real backend whose device module is incomplete (issue 48 item 2).

pytorch_ocl's `torch.ocl` has no is_available() / device_count(), so every torch.accelerator call
raises, and `run` used to refuse the device as "not available in this build" while check-manifest
said OK. Here the sim plays that backend: a backend module (`gapsim`) imports it and deletes both
queries from torch.sim, as pytorch_ocl leaves them out. A device that can allocate a tensor is
available; run and check-manifest say in one line what the module lacks; `--device sim:0` is the
manifest's `sim`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import REPO
from helpers.runs import latest_run, records, run_cli

import torchcts
from torchcts.backends.devices import split_device_index
from torchcts.errors import UsageError

# The sim's manifest, by path: importing torchcts.sim would register the sim in this test process.
SIM_MANIFEST = Path(torchcts.__file__).parent / "sim" / "manifest.py"

GAPSIM = """import torch
import torchcts.sim
for name in ("is_available", "device_count"):
    delattr(torch.sim, name)
"""
NOTE = "torch.sim lacks is_available() and device_count(), so torch.accelerator calls fail"


@pytest.fixture
def gapsim(tmp_path: Path) -> dict[str, str]:
    """A manifest for the sim imported through `gapsim`, and the environment that finds it."""
    (tmp_path / "gapsim.py").write_text(GAPSIM)
    text = SIM_MANIFEST.read_text().replace('"backend_import": "torchcts.sim"', '"backend_import": "gapsim"')
    assert '"gapsim"' in text
    (tmp_path / "manifest.py").write_text(text)
    root = REPO
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)])}


def test_compat_probes_by_allocation_and_names_the_gaps(gapsim, tmp_path):
    script = """import json
import torch, gapsim
from torchcts import compat
print(json.dumps({"available": compat.device_available("sim"), "gaps": compat.module_gaps("sim"),
                  "note": compat.module_gaps_note("sim"), "accelerator": compat.current_accelerator(),
                  "count": compat.device_count("sim")}))
"""
    out = subprocess.run([sys.executable, "-c", script], env={**os.environ, **gapsim}, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["available"] is True and got["gaps"] == ["is_available", "device_count"]
    assert got["note"].startswith(NOTE) and "probed by allocating a tensor" in got["note"]
    assert got["accelerator"] is None and got["count"] == 1  # torch.accelerator raised; asked, not crashed


def test_compat_refuses_a_device_that_cannot_allocate(monkeypatch):
    import torchcts.compat as compat

    monkeypatch.setattr(compat, "device_module", lambda name: None)
    monkeypatch.setattr(compat, "privateuse1_name", lambda: "nosuchaccel")
    assert compat.device_available("nosuchaccel") is False  # torch.empty raised: not usable
    asked: list[str] = []  # the answer is the allocation's, whichever way it goes
    monkeypatch.setattr(compat, "_allocates", lambda device_type: asked.append(device_type) or True)
    assert compat.device_available("nosuchaccel") is True and asked == ["nosuchaccel"]
    assert compat.module_gaps("nosuchaccel") == ["is_available", "device_count"]
    assert compat.module_gaps("cpu") == [] and compat.module_gaps_note("cpu") is None


def test_run_and_check_manifest_accept_the_device_and_say_the_same(gapsim, tmp_path):
    checked = run_cli("check-manifest", "manifest.py", cwd=tmp_path, env=gapsim)
    assert checked.returncode == 0, checked.stderr
    assert f"note: {NOTE}" in checked.stdout
    ran = run_cli("run", "--device", "sim:0", "--manifest", "manifest.py", "--case", "capabilities/probe",
                  "--", "-p", "no:cacheprovider", cwd=tmp_path, env=gapsim)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert f"torchcts: note: {NOTE}" in ran.stderr
    run = latest_run(tmp_path)
    assert [r["status"] for r in records(run)] == ["passed"]
    device = json.loads((run / "run.json").read_text())["device"]
    assert device["type"] == "sim" and device["note"].startswith(NOTE)


def test_device_index_spelling():
    assert split_device_index("ocl:0") == "ocl" and split_device_index("cuda") == "cuda"
    for bad, says in [("ocl:1", "pass --device ocl"), ("ocl:x", "TYPE:INDEX"), (":0", "TYPE:INDEX")]:
        with pytest.raises(UsageError, match=says):
            split_device_index(bad)


def test_device_index_matches_the_manifest(workdir, cli, capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert cli(["init", "--backend", "npu"]) == 0
    capsys.readouterr()
    assert cli(["run", "--device", "npu:0"]) == 2  # passes the manifest check, then npu is not installed
    err = capsys.readouterr().err
    assert "is for device" not in err and "torch_npu" in err
