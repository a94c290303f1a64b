"""Manifest templates for `torchcts init`, and the built-in claim sets (validation, plain CPU)."""

from __future__ import annotations

from torchcts.manifest.schema import CAPABILITIES
from torchcts.model.manifest import Manifest

# Template name -> (semantic level, dtypes claimed, capabilities claimed, one-line purpose).
TEMPLATES: dict[str, tuple[int, tuple[str, ...], tuple[str, ...], str]] = {
    "smoke": (1, ("float32",), (), "the first minutes of bring-up: registration, creation, copies"),
    "minimal": (2, ("float32", "int64", "bool"), ("inference",), "forward values of operators for a few dtypes"),
    "inference": (
        3,
        ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32"),
        ("inference", "rng", "device_api", "serialization"),
        "an inference backend: operator values and framework semantics",
    ),
    "training": (
        4,
        ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32"),
        ("inference", "training", "autograd", "rng", "device_api", "serialization", "foreach"),
        "a training backend: backward passes and optimizer steps",
    ),
    "complete": (
        8,
        ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
         "complex64", "complex128"),
        tuple(c for c in CAPABILITIES if c not in ("multi_device", "sparse", "nested", "fp8")),
        "everything a production accelerator offers",
    ),
}

# What CPU is used to prove about the harness itself; never backend evidence.
VALIDATION_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
                     "float64", "complex64", "complex128")
# profiler_device: CPU's ops are their own kernels, there is no device-side activity to record
CPU_LACKS = ("multi_device", "streams", "events", "pinned_memory", "fp8", "compile", "profiler_device")


def validation_manifest() -> Manifest:
    """The fixed broad claim set of `--validation` (cpu)."""
    return Manifest(
        device_name="cpu",
        backend_import=None,
        supported_dtypes={d: True for d in VALIDATION_DTYPES},
        capabilities={c: c not in CPU_LACKS for c in CAPABILITIES},
        semantic_level=8,
        seed=0,
        resource_limits={"max_tensor_mb": 256.0, "max_device_memory_mb": 2048.0},
        source="<validation>",
    )


def cpu_manifest() -> Manifest:
    """Claims used for `--device cpu` when no manifest exists: the validation set at level 2."""
    m = validation_manifest()
    m.semantic_level = 2
    m.source = "<built-in cpu>"
    return m


def _py_dtype_lines(dtypes: tuple[str, ...]) -> str:
    return "\n".join(f"        torch.{d}: True," for d in dtypes)


def _py_cap_lines(caps: tuple[str, ...]) -> str:
    lines = []
    for name, doc in CAPABILITIES.items():
        lines.append(f"        {name!r}: {name in caps},  # {doc}")
    return "\n".join(lines)


def render_python(template: str, device_name: str = "my_device", backend_import: str | None = None) -> str:
    level, dtypes, caps, purpose = TEMPLATES[template]
    return f'''"""TorchCTS manifest ({template} template): {purpose}.

Every claim here is a promise: claimed dtypes and capabilities are tested and their failures fail
the run. What is absent or False is recorded as not_claimed. Check it with `torchcts check-manifest`.
"""

import torch

manifest = {{
    "manifest_version": 1,
    # The runtime device type: cpu, cuda (also ROCm), mps, xpu, or the name your PrivateUse1
    # backend registers (see `torchcts backends`); run with the same --device.
    "device_name": {device_name!r},
    # The module that registers the device (None for in-tree devices).
    "backend_import": {backend_import!r},
    # Dtypes the backend supports; absent or False means not claimed.
    "supported_dtypes": {{
{_py_dtype_lines(dtypes)}
    }},
    # The semantic level the backend claims (1..8); the default for --level.
    "semantic_level": {level},
    "device_count": 1,
    "capabilities": {{
{_py_cap_lines(caps)}
    }},
    # Known failures, e.g. {{"match": "opinfo/atan2/float16/*", "status": "xfail", "reason": "...",
    #                       "tracker": "BUG-123", "expires": "2027-06-30"}}
    "expectations": [],
    # Per category and dtype, e.g. {{"reduction": {{torch.float16: {{"atol": 1e-3, "rtol": 1e-2}}}}}}
    "tolerance_overrides": {{}},
    "seed": 0,
    "resource_limits": {{"max_tensor_mb": 256, "max_device_memory_mb": 4096}},
    # The c10d backend the distributed suite initialises (the name your backend passes to
    # torch.distributed.Backend.register_backend); None: PyTorch's default for the device type.
    "distributed_backend": None,
}}
'''
