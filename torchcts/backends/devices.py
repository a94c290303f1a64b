"""Resolving `--device` to a usable torch.device, importing PrivateUse1 backends first."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from torchcts.backends.gates import IN_TREE_DEVICES, derive_gate
from torchcts.compat import privateuse1_name
from torchcts.errors import UsageError


@dataclass(frozen=True)
class DeviceInfo:
    type: str
    gate: str
    count: int
    model: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"type": self.type, "gate": self.gate, "count": self.count, "model": self.model}


def import_backend(module: str | None) -> None:
    """Import the manifest's backend_import; any failure is one clear usage error."""
    if not module:
        return
    try:
        importlib.import_module(module)
    except BaseException as exc:  # noqa: BLE001 - a backend may raise anything, SystemExit included
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise UsageError(
            f"backend_import '{module}' failed to import: {type(exc).__name__}: {detail}; "
            "install the backend package in this environment or fix backend_import in the manifest"
        ) from None


def available_devices() -> list[str]:
    """Device types usable in this process, for error messages."""
    from torchcts.compat import device_available

    found = ["cpu"]
    for name in (*IN_TREE_DEVICES[1:], privateuse1_name()):
        try:
            if device_available(name):
                found.append(name)
        except Exception:  # noqa: BLE001 - a broken backend module is just not available
            continue
    return found


def resolve_device(name: str, backend_import: str | None = None) -> DeviceInfo:
    """Import the backend, check the device type exists and is available, derive its gate.

    The CPU with no backend to import needs no torch here: collection-only commands stay fast.
    """
    if name == "rocm":
        raise UsageError("'rocm' is a backend gate, not a device: ROCm builds run with --device cuda")
    if name == "cpu" and not backend_import:
        return DeviceInfo("cpu", "cpu", 1, _cpu_model())
    import torch

    from torchcts.compat import device_available, device_count, device_model

    import_backend(backend_import)
    if name == "cpu":
        return DeviceInfo("cpu", "cpu", 1, _cpu_model())
    known = (*IN_TREE_DEVICES, privateuse1_name())
    if name not in known:
        hint = " (set backend_import in the manifest to the package that registers it)" if not backend_import else ""
        raise UsageError(
            f"unknown device '{name}'{hint}; available here: {', '.join(available_devices())}"
        )
    try:
        ok = device_available(name)
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"torch.{name}.is_available() raised {type(exc).__name__}: {exc}") from None
    if not ok:
        raise UsageError(
            f"device '{name}' is not available in this build ({torch.__version__}); "
            f"available here: {', '.join(available_devices())}; see 'torchcts backends' and 'torchcts install'"
        )
    return DeviceInfo(name, derive_gate(name), device_count(name), device_model(name))


def _cpu_model() -> str:
    import platform

    return platform.machine() or "cpu"
