"""pytorch_ocl (../shared/backends, PoCL on the CPU) claiming uint8 too: its uint8 bilinear
interpolation and tanh kernels kill the process, so a run of them shows what a crash costs on a real
backend that cannot fork (bench/crash_cost.py --ocl, tests/real_backends/test_real_backend_ocl.py). Not a
conformance claim."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "ocl_manifest", Path(__file__).resolve().parent / "ocl_manifest.py")
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

import torch  # noqa: E402

manifest = {**_base.manifest, "supported_dtypes": {torch.float32: True, torch.uint8: True}}
