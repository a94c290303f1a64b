"""`torchcts backends`, the PrivateUse1 catalog and the presets `torchcts init --backend` writes."""

from __future__ import annotations

import json
import sys

import pytest

from torchcts.backends.catalog import IN_TREE, PRIVATEUSE1, find_backend, importable, preset_for
from torchcts.manifest.load import load_manifest

PRESETS = {
    "npu": ("npu", "torch_npu"),
    "torch_npu": ("npu", "torch_npu"),
    "torch-npu": ("npu", "torch_npu"),
    "ocl": ("ocl", "pytorch_ocl"),
    "pytorch_ocl": ("ocl", "pytorch_ocl"),
    "openreg": ("openreg", "torch_openreg"),
    "torch_openreg": ("openreg", "torch_openreg"),
    "webgpu": ("webgpu", "torch_webgpu"),
    "torch-webgpu": ("webgpu", "torch_webgpu"),
    "directml": ("privateuseone", "torch_directml"),
    "torch_directml": ("privateuseone", "torch_directml"),
    "cpu": ("cpu", None),
    "cuda": ("cuda", None),
    "rocm": ("cuda", None),
    "MPS": ("mps", None),
    "xpu": ("xpu", None),
    "hip": ("cuda", None),
}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_for(name):
    assert preset_for(name) == PRESETS[name]


def test_unknown_name_has_no_preset():
    assert preset_for("my_accel") is None and find_backend("my_accel") is None


def test_catalog_entries_are_complete():
    assert {b.key for b in PRIVATEUSE1} == {"npu", "directml", "webgpu", "ocl", "openreg", "sim"}
    for b in PRIVATEUSE1:
        assert all(part.isidentifier() for part in b.import_name.split(".")) and b.device.isidentifier()
        assert b.description and b.caveat and (b.url.startswith("https://") or b.harness)
    sim = find_backend("sim")  # TorchCTS's own device: listed, presets a manifest, never backend evidence
    assert sim.harness and sim.import_name == "torchcts.sim" and preset_for("sim") == ("sim", "torchcts.sim")
    directml = find_backend("directml")
    assert directml.ecosystem_example and "2.3.1" in directml.caveat
    rocm = next(d for d in IN_TREE if d.name == "rocm")
    assert (rocm.device, rocm.gate) == ("cuda", "rocm")
    assert [d.name for d in IN_TREE] == ["cpu", "cuda", "rocm", "mps", "xpu"]


@pytest.mark.parametrize("backend", ["npu", "ocl", "openreg", "webgpu", "directml", "torch_npu"])
def test_init_backend_preset_passes_check_manifest(backend, workdir, cli, capsys):
    assert cli(["init", "--template", "inference", "--backend", backend]) == 0
    device, module = PRESETS[backend]
    m = load_manifest()
    assert (m.device_name, m.backend_import) == (device, module)
    assert cli(["check-manifest", "--no-import"]) == 0
    if not importable(module):
        capsys.readouterr()
        assert cli(["check-manifest"]) == 2
        assert f"backend_import '{module}' failed to import" in capsys.readouterr().err


def test_init_unknown_backend_uses_the_name_as_device_and_needs_its_module(workdir, cli, capsys):
    # without a terminal nothing is asked: no manifest with backend_import None, the fix named
    assert cli(["init", "--backend", "my_accel"]) == 2
    assert "pass --import MODULE" in capsys.readouterr().err and not (workdir / "manifest.py").exists()
    assert cli(["init", "--backend", "my_accel", "--import", "my_accel_pkg"]) == 0
    err = capsys.readouterr().err
    assert "warning: 'my_accel' is not in the catalog" in err and "'my_accel_pkg' is not installed here" in err
    m = load_manifest()
    assert (m.device_name, m.backend_import) == ("my_accel", "my_accel_pkg")


def test_init_asks_for_the_module_on_a_terminal(workdir, cli, capsys, monkeypatch):
    import io

    import torchcts.cli.common as common

    monkeypatch.setattr(common, "non_interactive", lambda: False)
    monkeypatch.setattr(sys, "stdin", io.StringIO("my_accel_pkg\n"))
    assert cli(["init", "--backend", "my_accel"]) == 0
    assert "backend_import" in capsys.readouterr().err
    assert load_manifest().backend_import == "my_accel_pkg"
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))  # nothing typed: nothing written
    assert cli(["init", "--backend", "other_accel", "-o", "other.py"]) == 2
    assert not (workdir / "other.py").exists()


def test_init_warns_about_directml_and_maps_hip_to_cuda(workdir, cli, capsys):
    assert cli(["init", "--backend", "directml"]) == 0
    err = capsys.readouterr().err
    assert "torch-directml (torch_directml) stops at PyTorch 2.3.1, outside TorchCTS's supported range (2.7.0" in err
    assert cli(["init", "--backend", "hip", "--force"]) == 0
    assert "ROCm runs as --device cuda" in capsys.readouterr().err
    assert load_manifest().device_name == "cuda"
    assert cli(["init", "--backend", "npu", "--force"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_importable_does_not_import(tmp_path, monkeypatch):
    (tmp_path / "explosive_backend.py").write_text("raise SystemExit('imported!')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert importable("explosive_backend") is True
    assert "explosive_backend" not in sys.modules
    assert importable("surely_not_installed_pkg") is False
    assert importable("not..valid") is False


def test_backends_command_lists_everything(cli, capsys, monkeypatch, tmp_path):
    (tmp_path / "torch_openreg.py").write_text("raise SystemExit('must not be imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli(["backends"]) == 0
    out = capsys.readouterr().out
    for b in PRIVATEUSE1:
        assert f"import {b.import_name}, device {b.device}" in out
        assert f"torchcts init --backend {b.key}" in out
    assert "openreg: OpenReg - import torch_openreg, device openreg; importable here" in out
    assert "npu: Ascend Extension for PyTorch - import torch_npu, device npu; not installed here" in out
    assert "[ecosystem example]" in out
    assert "rocm  device cuda  gate rocm" in out
    assert cli(["backends", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in data["in_tree"]} == {"cpu", "cuda", "rocm", "mps", "xpu"}
    assert next(r for r in data["in_tree"] if r["name"] == "cpu")["here"] == "available"
    assert next(r for r in data["privateuse1"] if r["key"] == "openreg")["importable"] is True
