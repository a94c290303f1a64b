"""A backend PyTorch autoloads (the `torch.backends` entry point) works with check-manifest and run:
torch is imported before backend_import everywhere (backends/devices.py: import_backend), since
importing such a backend first makes torch's import call back into the half-imported backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.autoload_site import autoload_site
from helpers.manifests import good_py
from helpers.runs import latest_run, records, run_cli

BACKEND = '''import torch  # noqa: F401  a real backend package imports torch at its top


def autoload() -> None:
    import torchcts.sim  # noqa: F401  registers the device 'sim'
'''


@pytest.fixture
def autoloaded(tmp_path: Path) -> dict[str, str]:
    """A folder on PYTHONPATH holding `simauto_backend` and its `torch.backends` entry point."""
    return autoload_site(tmp_path, "simauto_backend", BACKEND)


def test_check_manifest_and_run_work_with_an_autoloaded_backend(tmp_path, autoloaded):
    project = tmp_path / "project"
    project.mkdir()
    (project / "manifest.py").write_text(good_py(device_name='"sim"', backend_import='"simauto_backend"'))
    r = run_cli("check-manifest", cwd=project, env=autoloaded)
    assert r.returncode == 0, r.stdout + r.stderr  # was a circular import (exit 2)
    assert "OK — device 'sim'" in r.stdout
    r = run_cli("run", "--device", "sim", "--op", "abs", "--dtype", "float32", "--level", "1",
                cwd=project, env=autoloaded, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [rec["status"] for rec in records(latest_run(project)) if rec["status"] != "filtered"] == ["passed"]
