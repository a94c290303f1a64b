"""The manifest's claims in PyTorch 2.15's device-generic `Capability` names (issue 49 item 6)."""

from __future__ import annotations

import subprocess
import sys

import torch

from torchcts.compat import parse_version
from torchcts.manifest.pytorch_capabilities import PYTORCH_CAPABILITIES, declaration, installed_names, render_lines
from torchcts.manifest.templates import validation_manifest


def test_the_table_names_exactly_the_installed_torchs_capabilities():
    """On 2.15+ every Capability name of the installed torch is mapped (or said to have no claim behind
    it), and the table names none torch lacks; before 2.15 torch has no such list."""
    names = installed_names()
    if parse_version(torch.__version__) >= (2, 15, 0):
        assert names == sorted(PYTORCH_CAPABILITIES)
        from torch.testing._internal.common_device_type import Capability

        assert Capability.dtype.fp8 in names and Capability.attention.flash_attention in names  # read, not imported
    else:
        assert names is None


def test_declaration_follows_the_manifest_claims():
    m = validation_manifest()
    decl = declaration(m)
    assert decl["dtype.bf16"] is m.claims_dtype("bfloat16") is True
    assert decl["dtype.fp8"] is m.claims("fp8")
    assert decl["attention.flash_attention"] is None and decl["attention.mem_efficient_attention"] is None
    m.capabilities["fp8"] = True
    m.supported_dtypes["bfloat16"] = False
    assert declaration(m)["dtype.fp8"] is True and declaration(m)["dtype.bf16"] is False
    lines = render_lines(m)
    assert "dtype.fp8=yes, dtype.bf16=no" in lines[0] and "attention.flash_attention" in lines[1]


def test_check_manifest_prints_the_declaration_without_importing_torch_testing(tmp_path):
    """A manifest without expectations: check-manifest stays light (PyTorch's test harness is not imported
    to read the Capability names)."""
    caps = dict.fromkeys(("inference", "training", "rng", "device_api", "multi_device"), False)
    (tmp_path / "m.py").write_text(f"manifest = {{'manifest_version': 1, 'device_name': 'cpu', "
                                   f"'supported_dtypes': {{'bfloat16': True}}, 'capabilities': {{**{caps!r}, 'fp8': True}}}}\n")
    code = ("import sys; from torchcts.cli.main import main; rc = main(['check-manifest', sys.argv[1], '--no-import']); "
            "print('imported' if 'torch.testing._internal.common_device_type' in sys.modules else 'clean'); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.py")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "PyTorch capabilities (DeviceTypeTestBase._capabilities): dtype.fp8=yes, dtype.bf16=yes" in r.stdout
    assert r.stdout.strip().endswith("clean")
