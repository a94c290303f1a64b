"""Hardware signals for `torchcts install`, and what the installed torch build is.

Detection is kept apart from the decision (install_plan.py): every probe goes through injectable
`which`, `exists`, `run` and `read` functions so tests feed fake machines and nothing real runs.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Signals:
    """What this machine shows about its accelerators (no decision here)."""

    system: str                      # platform.system(): Linux, Windows, Darwin
    machine: str                     # platform.machine(): x86_64, arm64, aarch64, AMD64
    nvidia_smi: bool = False         # nvidia-smi on PATH
    nvidia_cuda: str | None = None   # newest CUDA the NVIDIA driver supports, e.g. "12.8"
    nvidia_gpus: tuple[str, ...] = ()
    amd_kfd: bool = False            # /dev/kfd: the ROCm kernel driver is loaded
    rocminfo: bool = False           # rocminfo on PATH
    rocm_version: str | None = None  # the ROCm userspace version, e.g. "6.4.1"
    xpu_smi: bool = False            # Intel's xpu-smi on PATH
    sycl_ls: bool = False            # sycl-ls on PATH
    sycl_gpus: tuple[str, ...] = field(default_factory=tuple)  # GPU lines sycl-ls printed

    def describe(self) -> str:
        def yn(flag: bool) -> str:
            return "yes" if flag else "no"

        nvidia = f"yes (driver CUDA {self.nvidia_cuda})" if self.nvidia_cuda else yn(self.nvidia_smi)
        rocm = f" (ROCm {self.rocm_version})" if self.rocm_version else ""
        return (f"{self.system} {self.machine}; nvidia-smi: {nvidia}; /dev/kfd: {yn(self.amd_kfd)}; "
                f"rocminfo: {yn(self.rocminfo)}{rocm}; xpu-smi: {yn(self.xpu_smi)}; sycl-ls: {yn(self.sycl_ls)}")


Runner = Callable[[list[str]], str | None]


def run_quiet(cmd: list[str]) -> str | None:
    """A probe's stdout, or None when it fails or takes too long (a probe never fails the command)."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def parse_driver_cuda(text: str | None) -> str | None:
    """'CUDA Version: 12.8' in nvidia-smi's banner: the newest CUDA the driver can run."""
    m = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", text or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def detect(
    which: Callable[[str], str | None] = shutil.which,
    exists: Callable[[str], bool] = os.path.exists,
    run: Runner = run_quiet,
    read: Callable[[str], str | None] = read_text,
    system: str | None = None,
    machine: str | None = None,
) -> Signals:
    """Probe this machine: nvidia-smi, /dev/kfd and rocminfo, xpu-smi and sycl-ls, the OS."""
    nvidia = which("nvidia-smi") is not None
    cuda = gpus = None
    if nvidia:
        cuda = parse_driver_cuda(run(["nvidia-smi"]))
        names = run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]) or ""
        gpus = tuple(line.strip() for line in names.splitlines() if line.strip())
    rocminfo = which("rocminfo") is not None
    rocm_version = (read("/opt/rocm/.info/version") or "").strip() or None
    sycl = which("sycl-ls") is not None
    sycl_gpus: tuple[str, ...] = ()
    if sycl:
        out = run(["sycl-ls"]) or ""
        sycl_gpus = tuple(line.strip() for line in out.splitlines() if ":gpu" in line)
    return Signals(
        system=system or platform.system(),
        machine=machine or platform.machine(),
        nvidia_smi=nvidia,
        nvidia_cuda=cuda,
        nvidia_gpus=gpus or (),
        amd_kfd=exists("/dev/kfd"),
        rocminfo=rocminfo,
        rocm_version=rocm_version.split("-")[0] if rocm_version else None,
        xpu_smi=which("xpu-smi") is not None,
        sycl_ls=sycl,
        sycl_gpus=sycl_gpus,
    )


@dataclass(frozen=True)
class InstalledTorch:
    """The torch already in this environment: version, wheel family, devices it can use."""

    version: str
    family: str
    devices: tuple[str, ...]

    def describe(self) -> str:
        return f"torch {self.version} (family {self.family}); devices it can use: {', '.join(self.devices)}"


def installed_torch() -> InstalledTorch | None:
    """The installed torch, or None when there is none (found without importing first)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return None
    from torchcts.backends.devices import available_devices
    from torchcts.compat import build_info

    info = build_info()
    return InstalledTorch(str(info["torch"]), str(info["family"]), tuple(available_devices()))
