"""The anonymous source of one collection: what software and hardware produced the records.

Only versions, OS name, architecture and the device model are kept: never a host name, user,
path or environment variable. The id is a digest of the content (with the collection time and a
random nonce), so two collections never share one and a record names its source without naming a machine.
"""

from __future__ import annotations

import hashlib
import platform
import secrets
import sys
from typing import Any

from torchcts.model.device import DeviceInfo


def device_details(device: DeviceInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"type": device.type, "count": device.count, "model": device.model}
    if device.type == "cuda":
        import torch

        try:
            major, minor = torch.cuda.get_device_capability(0)
            out["capability"] = f"{major}.{minor}"
        except Exception:  # noqa: BLE001 - capability is informative only
            out["capability"] = None
    return out


def make_source(device: DeviceInfo, collected_at: str) -> dict[str, Any]:
    from torchcts import __version__
    from torchcts.compat import build_info

    build = build_info()
    body: dict[str, Any] = {
        "torchcts": __version__,
        "torch": build["torch"],
        "torch_git": build["git"],
        "cuda": build["cuda"],
        "hip": build["hip"],
        "xpu": build["xpu"],
        "python": platform.python_version(),
        "python_implementation": sys.implementation.name,
        "os": platform.system(),
        "arch": platform.machine(),
        "device": device_details(device),
        "gate_of_device": device.gate,
        "collected_at": collected_at,
        # Random, so two collections in the same second on the same machine still get distinct ids.
        "nonce": secrets.token_hex(8),
    }
    from torchcts.evidence.store import canonical

    body["id"] = hashlib.sha256(canonical(body).encode()).hexdigest()[:16]
    return body
