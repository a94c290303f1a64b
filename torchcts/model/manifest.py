"""The claims a backend makes (a validated, normalised manifest): what run.json's "manifest" holds.

manifest/ loads, validates and renders manifests; this is only their typed form, so that a run's
one record (model/run.py) holds its claims typed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

MANIFEST_VERSION = 1


@dataclass
class Manifest:
    """A validated, normalised manifest."""

    device_name: str
    supported_dtypes: dict[str, bool]
    capabilities: dict[str, bool]
    manifest_version: int = MANIFEST_VERSION
    backend_import: str | None = None
    semantic_level: int = 1
    device_count: int = 1
    expectations: list[dict[str, Any]] = field(default_factory=list)
    tolerance_overrides: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    max_samples: int | None = None
    seed: int = 0
    resource_limits: dict[str, float] = field(default_factory=dict)
    # The c10d backend (torch.distributed.Backend.register_backend name) the distributed suite
    # initialises; None: the one PyTorch maps the device type to (gloo for cpu).
    distributed_backend: str | None = None
    # SUBNORMAL_MODES: kept (PyTorch's default on CPU and CUDA) or flushed to zero, the backend's claim
    subnormals: str = "preserve"
    source: str = "<built-in>"

    def claims_dtype(self, dtype: str | None) -> bool:
        return dtype is None or bool(self.supported_dtypes.get(dtype, False))

    def claims(self, capability: str) -> bool:
        return bool(self.capabilities.get(capability, False))

    def to_json(self) -> dict[str, Any]:
        """JSON form with the source left out: two identical claims hash the same."""
        data = asdict(self)
        data.pop("source")
        return data

    def hash(self) -> str:
        blob = json.dumps(self.to_json(), sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @classmethod
    def from_json(cls, data: dict[str, Any], source: str = "<run.json>") -> Manifest:
        return cls(**data, source=source)

    @classmethod
    def known_fields(cls, data: dict[str, Any]) -> dict[str, Any]:
        """The keys of `data` this Manifest has fields for (run.json of another TorchCTS may hold others)."""
        return {k: v for k, v in data.items() if k in _FIELDS}


_FIELDS = frozenset(f.name for f in fields(Manifest)) - {"source"}
