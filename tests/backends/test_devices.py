"""Device resolution: unknown/unavailable devices, backend import failures, gates, --validation."""

from __future__ import annotations

import json

import pytest
import torch
from helpers.runs import latest_run, run_cli
from helpers.stderr import sole_stderr_line

from torchcts.backends import devices
from torchcts.backends.gates import derive_gate
from torchcts.errors import UsageError


@pytest.fixture
def ci(monkeypatch):
    monkeypatch.setenv("CI", "true")


def test_unknown_device_says_what_is_available(workdir, cli, capsys, ci):
    assert cli(["run", "--device", "nosuchdev"]) == 2
    line = sole_stderr_line(capsys)
    assert "unknown device 'nosuchdev'" in line and "available here: cpu" in line


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("device", ["cuda", "xpu"])
def test_unavailable_device_is_usage_error(device, workdir, cli, capsys, ci):
    assert cli(["run", "--device", device]) == 2
    line = sole_stderr_line(capsys)
    assert f"device '{device}' is not available" in line and "available here: cpu" in line


def test_unavailable_device_with_manifest(workdir, cli, capsys, ci):
    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    assert cli(["init", "--backend", "cuda"]) == 0
    capsys.readouterr()
    assert cli(["run", "--device", "cuda"]) == 2
    assert "not available in this build" in sole_stderr_line(capsys)


def test_rocm_is_a_gate_not_a_device(workdir, cli, capsys, ci):
    assert cli(["run", "--device", "rocm"]) == 2
    assert "ROCm runs as --device cuda" in sole_stderr_line(capsys)


def test_backend_import_failure_in_run_is_one_line(workdir, cli, capsys, ci):
    assert cli(["init", "--backend", "openreg"]) == 0
    capsys.readouterr()
    assert cli(["run", "--device", "openreg"]) == 2
    line = sole_stderr_line(capsys)
    assert "backend_import 'torch_openreg' failed to import: ModuleNotFoundError" in line


def test_device_mismatch_with_manifest(workdir, cli, capsys, ci):
    assert cli(["init", "--backend", "npu"]) == 0
    capsys.readouterr()
    assert cli(["run", "--device", "cpu"]) == 2
    assert "is for device 'npu' but --device is 'cpu'" in sole_stderr_line(capsys)


def test_missing_device_non_interactive(workdir, cli, capsys, ci):
    assert cli(["run"]) == 2  # show-skips, which runs nothing, reads the device from a manifest (issue 53)
    assert "--device is required in a non-interactive run" in sole_stderr_line(capsys)


def test_gate_derivation_rocm(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.4.43482", raising=False)
    assert derive_gate("cuda") == "rocm"
    assert derive_gate("cpu") == "cpu" and derive_gate("xpu") == "xpu"
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    assert derive_gate("cuda") == "cuda"


def test_resolve_rocm_build_records_gate(monkeypatch):
    import torchcts.compat as compat

    monkeypatch.setattr(torch.version, "hip", "6.3.1", raising=False)
    monkeypatch.setattr(compat, "device_available", lambda name: name in ("cpu", "cuda"))
    monkeypatch.setattr(compat, "device_count", lambda name: 2)
    monkeypatch.setattr(compat, "device_model", lambda name, index=0: "AMD Instinct (fake)")
    info = devices.resolve_device("cuda")
    assert (info.type, info.gate, info.count) == ("cuda", "rocm", 2)


def test_resolve_privateuse1_name_after_import(monkeypatch):
    import torchcts.compat as compat

    monkeypatch.setattr(devices, "privateuse1_name", lambda: "fakeaccel")
    assert "unknown device" in _raises(lambda: devices.resolve_device("otheraccel"))
    assert "not available" in _raises(lambda: devices.resolve_device("fakeaccel"))
    monkeypatch.setattr(compat, "device_available", lambda name: True)
    monkeypatch.setattr(compat, "device_count", lambda name: 1)
    assert devices.resolve_device("fakeaccel").gate == "fakeaccel"


def _raises(fn) -> str:
    with pytest.raises(UsageError) as info:
        fn()
    return str(info.value)


def test_validation_forces_cpu_even_with_mps(tmp_path):
    r = run_cli("run", "--validation", "--device", "mps", "--level-exact", "1", "--dtype", "float32",
                "--case", "operators/core/zeros/*", "--", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--validation forces cpu" in r.stderr
    run = json.loads((latest_run(tmp_path) / "run.json").read_text())
    assert run["validation"] is True and run["device"]["type"] == "cpu" and run["gate"] == "cpu"
    assert run["manifest_source"] == "<validation>"
    assert run["torch"]["torch"] == torch.__version__ and run["torch"]["family"]
