"""In-tree devices and the PrivateUse1 catalog, with the manifest preset each one implies.

The catalog is an engineering reference, not a certification list: out-of-tree projects move on
their own schedule, so every entry carries a version caveat. `torchcts backends` prints it and
`torchcts init --backend NAME` turns an entry into a manifest preset via `preset_for`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class InTreeDevice:
    """A device PyTorch ships itself: the runtime device name and the backend gate it records."""

    name: str
    device: str
    gate: str
    build: str
    note: str
    aliases: tuple[str, ...] = ()  # other names users type for it (`hip` for rocm)


@dataclass(frozen=True)
class PrivateUse1Backend:
    """An out-of-tree backend that registers its own device name through PrivateUse1."""

    key: str
    project: str
    import_name: str
    pip_name: str
    device: str
    url: str
    description: str
    caveat: str
    ecosystem_example: bool = False
    max_torch: str | None = None  # the newest PyTorch its project supports, where it stopped
    # TorchCTS's own simulated device: it proves the suite (planted faults), it is never backend evidence
    harness: bool = False


IN_TREE: tuple[InTreeDevice, ...] = (
    InTreeDevice("cpu", "cpu", "cpu", "any build",
                 "harness checks (--validation), local development, the CPU reference, CPU-build backend packs"),
    InTreeDevice("cuda", "cuda", "cuda", "a CUDA wheel (cu118 ... cu130)", "NVIDIA GPUs"),
    InTreeDevice("rocm", "cuda", "rocm", "a ROCm wheel (rocm6.x)",
                 "AMD GPUs: HIP devices appear as 'cuda'; runs record the backend gate 'rocm'", aliases=("hip",)),
    InTreeDevice("mps", "mps", "mps", "the macOS wheel (default)",
                 "Apple GPUs; crashes are isolated by subprocess and never forgiven; "
                 "--validation forces cpu and is never MPS evidence"),
    InTreeDevice("xpu", "xpu", "xpu", "an XPU wheel", "Intel GPUs"),
)

PRIVATEUSE1: tuple[PrivateUse1Backend, ...] = (
    PrivateUse1Backend(
        key="npu", project="Ascend Extension for PyTorch", import_name="torch_npu", pip_name="torch-npu",
        device="npu", url="https://github.com/ascend/pytorch",
        description="Huawei's adapter for Ascend NPUs on top of the CANN toolkit, with its own device "
                    "APIs, distributed and mixed-precision support",
        caveat="releases are paired with specific PyTorch and CANN versions: install the torch_npu built "
               "for the PyTorch under test",
    ),
    PrivateUse1Backend(
        key="directml", project="torch-directml", import_name="torch_directml", pip_name="torch-directml",
        device="privateuseone", url="https://learn.microsoft.com/en-us/windows/ai/directml/pytorch-windows",
        description="Microsoft's bridge from PyTorch to DirectML GPUs on Windows; the device handle comes "
                    "from torch_directml.device() and keeps the generic name 'privateuseone'",
        caveat="Microsoft documents support only up to PyTorch 2.3.1, below TorchCTS's minimum 2.7.0: "
               "an ecosystem example, not a validation target unless a compatible build appears",
        ecosystem_example=True, max_torch="2.3.1",
    ),
    PrivateUse1Backend(
        key="webgpu", project="torch-webgpu", import_name="torch_webgpu", pip_name="torch-webgpu",
        device="webgpu", url="https://github.com/jmaczan/torch-webgpu",
        description="an out-of-tree backend and torch.compile path that targets WebGPU (Dawn, WGSL) for "
                    "portable GPU execution",
        caveat="an active young project: check the PyTorch version it supports before claiming anything",
    ),
    PrivateUse1Backend(
        key="ocl", project="pytorch_dlprim", import_name="pytorch_ocl", pip_name="pytorch_ocl",
        device="ocl", url="https://github.com/artyom-beilis/pytorch_dlprim",
        description="an OpenCL backend built on DLPrimitives, for OpenCL GPUs of any vendor",
        caveat="the wheel is built for one PyTorch version: it must match the PyTorch under test",
    ),
    PrivateUse1Backend(
        key="openreg", project="OpenReg", import_name="torch_openreg", pip_name="torch_openreg",
        device="openreg", url="https://pytorch.org/blog/openreg-a-self-contained-pytorch-accelerator-simulator/",
        description="PyTorch's reference PrivateUse1 accelerator simulator for exercising backend mechanics "
                    "(registration, operators, streams, events, guards, AMP); not a production device",
        caveat="built from the PyTorch source tree: use the one from the same PyTorch version",
    ),
    PrivateUse1Backend(
        key="sim", project="TorchCTS sim", import_name="torchcts.sim", pip_name="torchcts",
        device="sim", url="docs/sim.md",
        description="TorchCTS's own simulated PrivateUse1 device, written in Python on top of CPU, with "
                    "planted faults (`torchcts selftest`, TORCHCTS_SIM_FAULT) that prove the suite catches bugs",
        caveat="a check of TorchCTS itself, never backend evidence; its full claims: --manifest torchcts:sim/manifest.py",
        harness=True,
    ),
)


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def find_backend(name: str) -> PrivateUse1Backend | None:
    """A catalog entry by key, device name, import name or pip name ('npu', 'torch_npu', 'torch-npu')."""
    wanted = _norm(name)
    for entry in PRIVATEUSE1:
        if wanted in {_norm(entry.key), _norm(entry.device), _norm(entry.import_name), _norm(entry.pip_name)}:
            return entry
    return None


def preset_for(name: str) -> tuple[str, str | None] | None:
    """(device_name, backend_import) for a catalog or in-tree name; None when the name is unknown."""
    entry = find_backend(name)
    if entry is not None:
        return entry.device, entry.import_name
    for dev in IN_TREE:
        if _norm(name) in (dev.name, *dev.aliases):
            return dev.device, None
    return None


def support_warning(name: str) -> str | None:
    """A warning for a catalog backend whose project stopped before TorchCTS's supported PyTorch
    range (DirectML: 2.3.1); None for the others and for unknown names."""
    from torchcts.compat import MIN_TORCH

    entry = find_backend(name)
    if entry is None or not entry.max_torch:
        return None
    newest = tuple(int(x) for x in entry.max_torch.split("."))
    if newest >= MIN_TORCH:
        return None
    return (f"{entry.project} ({entry.import_name}) stops at PyTorch {entry.max_torch}, outside TorchCTS's "
            f"supported range ({'.'.join(map(str, MIN_TORCH))} and newer): the manifest is written, but a run "
            "needs a build of it for the PyTorch under test")


def importable(module: str) -> bool:
    """Whether a module could be imported here, found without importing it (no side effects)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
