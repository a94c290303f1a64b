"""Setup mistakes caught before a run: a device nothing registers, a device-name typo, a missing
--device in CI, ROCm asked for as a device (cli/check_manifest.py, backends/devices.py)."""

from __future__ import annotations

import os

import pytest
from helpers.manifests import good_py
from helpers.runs import run_cli
from helpers.stderr import sole_stderr_line as _err_line

from torchcts.backends import devices


@pytest.mark.parametrize("flags", [[], ["--no-import"]])
def test_check_manifest_rejects_a_device_nothing_registers(workdir, cli, capsys, flags):
    (workdir / "manifest.py").write_text(good_py(device_name='"npu"'))
    assert cli(["check-manifest", *flags]) == 2
    line = _err_line(capsys)
    assert "device_name 'npu': not an in-tree device" in line
    assert "set backend_import to the module that registers 'npu' (torch_npu for Ascend" in line


def test_check_manifest_names_the_device_the_backend_registers(workdir, cli, capsys, monkeypatch):
    (workdir / "quiet_backend.py").write_text("")  # imports fine; registration is faked below
    monkeypatch.syspath_prepend(str(workdir))
    (workdir / "manifest.py").write_text(good_py(device_name='"npuu"', backend_import='"quiet_backend"'))
    monkeypatch.setattr(devices, "privateuse1_name", lambda: "npu")
    assert cli(["check-manifest"]) == 2
    assert "backend_import 'quiet_backend' registers the device 'npu', not 'npuu': set device_name to 'npu'" in \
        _err_line(capsys)
    assert cli(["check-manifest", "--no-import"]) == 0  # nothing imported: a typo cannot be seen
    monkeypatch.setattr(devices, "privateuse1_name", lambda: "privateuseone")
    assert cli(["check-manifest"]) == 2
    assert "registers no device name" in _err_line(capsys)
    monkeypatch.setattr(devices, "privateuse1_name", lambda: "npuu")
    assert cli(["check-manifest"]) == 0
    # a backend PyTorch autoloads registers its name without backend_import
    (workdir / "manifest.py").write_text(good_py(device_name='"npuu"'))
    assert cli(["check-manifest"]) == 0


def test_check_manifest_with_the_real_sim_backend_names_its_device(tmp_path):
    """The sim registers 'sim' through PrivateUse1 (a subprocess: it renames PrivateUse1 for good)."""
    (tmp_path / "manifest.py").write_text(good_py(device_name='"simm"', backend_import='"torchcts.sim"'))
    r = run_cli("check-manifest", cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "registers the device 'sim', not 'simm': set device_name to 'sim' and run with --device sim" in r.stderr


def test_missing_device_names_the_manifests_device(workdir, cli, capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")
    (workdir / "manifest.py").write_text(good_py(device_name='"npu"', backend_import='"torch_npu"'))
    assert cli(["run"]) == 2  # show-skips takes the manifest's device instead (issue 53)
    assert _err_line(capsys).endswith(
        "--device is required in a non-interactive run (CI set or no TTY); the manifest names 'npu': add --device npu")
    (workdir / "manifest.py").write_text("manifest = {")  # a broken manifest: the generic hint
    assert cli(["run"]) == 2
    assert "pass e.g. --device cuda" in _err_line(capsys)


@pytest.mark.parametrize("device", ["hip", "rocm"])
def test_rocm_names_are_not_devices_even_with_a_manifest(workdir, cli, capsys, monkeypatch, device):
    monkeypatch.setenv("CI", "true")
    assert cli(["init", "--backend", "rocm"]) == 0
    capsys.readouterr()
    assert cli(["run", "--device", device]) == 2
    assert f"'{device}' is not a device: ROCm runs as --device cuda (the rocm backend gate)" in _err_line(capsys)


# issue 30: each configuration error in seconds, exit 2, naming the closest name. They took 16-19 s
# under load when they imported torch first; so the test asserts the cause, never a wall time (which
# fails on a loaded machine, issue 40): torch is not imported before the error (python -X importtime).
TYPO_MANIFEST = good_py(supported_dtypes="{torch.float32: True, torch.int46: True}")
CONFIG_ERRORS = {
    "device_typo_no_manifest": (None, ["run", "--device", "cdua"], "unknown device 'cdua': did you mean 'cuda'?"),
    "device_typo_of_cpu": (None, ["run", "--device", "cpux", "--level", "1"], "did you mean 'cpu'?"),
    "catalog_device_typo": (None, ["show-skips", "--device", "npuu"], "did you mean 'npu'?"),
    "dtype_flag_typo": (None, ["run", "--validation", "--dtype", "float23"],
                        "unknown dtype 'float23' for --dtype: did you mean 'float32'?"),
    "suite_flag_typo": (None, ["run", "--validation", "--suite", "opinf"],
                        "unknown suite 'opinf' for --suite: did you mean 'opinfo'?"),
    "manifest_dtype_typo_run": (TYPO_MANIFEST, ["run", "--device", "cpu"], "did you mean 'torch.int64'?"),
    "manifest_dtype_typo_check": (TYPO_MANIFEST, ["check-manifest"], "unknown dtype 'torch.int46' at line"),
    "manifest_device_typo": (good_py(device_name='"cdua"'), ["check-manifest"],
                             "device_name 'cdua': no such device: did you mean 'cuda'?"),
}


# check-manifest lists every problem, also those only the backend import shows, so it imports torch
# after its torch-free checks (1.7 s on a quiet machine)
IMPORTS_TORCH = {"manifest_device_typo"}


@pytest.mark.parametrize("name", sorted(CONFIG_ERRORS))
def test_configuration_errors_are_fast_and_name_the_closest(tmp_path, name):
    import re
    import subprocess
    import sys

    manifest, argv, expected = CONFIG_ERRORS[name]
    if manifest is not None:
        (tmp_path / "manifest.py").write_text(manifest)
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "torchcts", *argv], cwd=tmp_path,
                       env={**os.environ, "CI": "true"}, capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stdout + r.stderr
    assert expected in r.stderr
    imported = re.findall(r"^import time:.*\|\s+(torch(?:\.\S+)?)$", r.stderr, re.M)
    if name not in IMPORTS_TORCH:
        assert imported == [], f"{name}: imported {imported[:3]} before the error"
    assert not (tmp_path / "results").exists()  # nothing was started


def test_show_skips_reads_the_manifest_alone_without_the_backend(workdir, cli, capsys):
    """issue 30: show-skips refused to list what is not claimed unless the backend was installed."""
    (workdir / "manifest.py").write_text(good_py(device_name='"npu"', backend_import='"torch_npu_not_here"',
                                                 semantic_level="2"))
    assert cli(["show-skips", "--device", "npu", "--suite", "operators"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("from the manifest alone: the backend 'torch_npu_not_here' was not imported")
    assert "cases would run" in out[1] and "not claimed, by dtype" in "\n".join(out)
    assert cli(["run", "--device", "npu", "--suite", "operators"]) == 2  # a run still needs the backend
    assert "backend_import 'torch_npu_not_here' failed to import" in _err_line(capsys)


def test_a_run_without_a_manifest_says_so_in_its_first_line(tmp_path):
    from torchcts.engine.setup import NO_MANIFEST_NOTE

    r = run_cli("run", "--device", "cpu", "--op", "abs", "--dtype", "float32", "--level", "1", cwd=tmp_path,
                timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.splitlines()[0] == NO_MANIFEST_NOTE
    assert "built-in CPU claims" in NO_MANIFEST_NOTE
