"""The manifest of the eighteenth session's OpenReg sweep (docs/backends.md, "OpenReg"), and of
bench/crash_cost.py --openreg: torch_openreg built from PyTorch's sources (not in this repository;
PYTHONPATH names the build), float32, inference, training, autograd, device_api, multi_device (two
devices): pytorch_ocl's test manifest with OpenReg's device, module and device claims."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "ocl_manifest", Path(__file__).resolve().parent.parent / "tests" / "helpers" / "ocl_manifest.py")
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

manifest = {**_base.manifest, "device_name": "openreg", "backend_import": "torch_openreg", "device_count": 2,
            "capabilities": {**_base.manifest["capabilities"], "device_api": True, "multi_device": True}}
