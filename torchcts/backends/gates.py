"""Backend gates: a gate names a build family, a device names where tensors live (SPEC §3)."""

from __future__ import annotations

IN_TREE_DEVICES = ("cpu", "cuda", "mps", "xpu")


def derive_gate(device_type: str) -> str:
    """The gate of the running build for a device: ROCm builds expose HIP through `cuda`."""
    if device_type == "cuda":
        from torchcts.compat import hip_version

        return "rocm" if hip_version() else "cuda"
    return device_type
