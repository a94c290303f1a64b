"""The device a run's cases run on, as `backends/devices.py: resolve_device` found it: what run.json's
"device" holds and evidence records name."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceInfo:
    type: str
    gate: str
    count: int
    model: str | None = None
    # What the device module lacks and what TorchCTS did instead (compat.module_gaps_note), or None.
    note: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type, "gate": self.gate, "count": self.count, "model": self.model}
        if self.note:
            out["note"] = self.note
        return out
