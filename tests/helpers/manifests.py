"""Manifest texts the tests write."""

from __future__ import annotations

import textwrap

GOOD_CAPS = '{"inference": True, "training": False, "rng": False, "device_api": False, "multi_device": False}'


def py_manifest(body: str) -> str:
    return "import torch\n\n" + textwrap.dedent(body)


def good_py(**override: str) -> str:
    fields = {
        "manifest_version": "1",
        "device_name": '"cpu"',
        "backend_import": "None",
        "supported_dtypes": "{torch.float32: True}",
        "semantic_level": "1",
        "capabilities": GOOD_CAPS,
    }
    fields.update(override)
    items = ",\n    ".join(f'"{k}": {v}' for k, v in fields.items() if v is not None)
    return py_manifest(f"manifest = {{\n    {items},\n}}\n")
