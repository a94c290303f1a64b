"""The manifest schema (README.md, docs/ledger.md): one registry per concept, shared by loading, validation and docs.

Dtypes are kept by name ("float32") everywhere outside a running case so that a manifest can be
hashed, written to run.json and compared across runs.
"""

from __future__ import annotations

import functools
from typing import Any

from torchcts import settings
from torchcts.levels import MAX_LEVEL, MIN_LEVEL
from torchcts.model.manifest import Manifest

# Every dtype a manifest may claim, by its torch attribute name.
DTYPES: tuple[str, ...] = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
)

# Aliases that users write; normalised to the canonical name.
DTYPE_ALIASES: dict[str, str] = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "chalf": "complex32",
}


def dtype_name(key: Any) -> str | None:
    """Canonical dtype name for a torch.dtype or a string, None if it names no dtype.

    DTYPES are known without torch; a name outside them is a dtype when the installed torch has it
    (torch.bcomplex32 since 2.14): a release's new dtype is claimable the day it ships (issue 49)."""
    if not isinstance(key, str):
        text = str(key)
        if not text.startswith("torch."):
            return None
        key = text[len("torch.") :]
    key = key.removeprefix("torch.")
    key = DTYPE_ALIASES.get(key, key)
    return key if key in DTYPES or key in release_dtypes() else None


@functools.lru_cache(maxsize=1)
def release_dtypes() -> frozenset[str]:
    """Dtypes newer than DTYPES: those of the newest validated release (its stored snapshot, read
    without torch, so a typo is still reported before torch's import) and, where torch is already
    loaded, the installed torch's own (a release newer than the snapshot)."""
    import sys

    from torchcts.releases import load_snapshot

    names = set(load_snapshot().dtypes)
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "dtype"):
        names |= {str(v).removeprefix("torch.") for v in vars(torch).values() if isinstance(v, torch.dtype)}
    return frozenset(names - set(DTYPES))


def ordered_dtypes(names: Any) -> list[str]:
    """Dtype names in DTYPES order, any newer ones after them (sorted)."""
    names = set(names)
    return [d for d in DTYPES if d in names] + sorted(names - set(DTYPES))

def claimed_dtypes(manifest: Manifest) -> list[str]:
    """The dtypes `manifest` claims, in DTYPES order."""
    return ordered_dtypes(d for d, claimed in manifest.supported_dtypes.items() if claimed)


# Capability name -> what claiming it promises. A new capability is one entry here.
CAPABILITIES: dict[str, str] = {
    "inference": "forward values of operators match the CPU reference",
    "training": "backward passes and optimizer steps match the CPU reference",
    "rng": "seeded random generation is reproducible and well distributed",
    "device_api": "torch.<device> module: availability, counts, current device, synchronize",
    "multi_device": "more than one device index; copies and ops across indices",
    "autograd": "autograd on device tensors (gradients, hooks, version counters)",
    "double_backward": "gradients of gradients",
    "serialization": "torch.save / torch.load round trips of device tensors",
    "channels_last": "channels_last memory formats preserved by ops",
    "ieee754": "NaN and Inf semantics as on CPU",
    "compile": "torch.compile on the device",
    "autocast": "torch.autocast regions on the device",
    "streams": "device streams",
    "events": "device events",
    "pinned_memory": "pinned host memory",
    "ipc": "device tensors shared between processes through torch.multiprocessing (a queue)",
    "profiler": "torch.profiler records the device's ops by name, in program order (CPU-side events)",
    "profiler_device": "torch.profiler records device-side events (kernels) under the device's ProfilerActivity",
    "profiler_memory": "torch.profiler's profile_memory records the device's allocations and frees",
    "sparse": "sparse tensor layouts",
    "nested": "nested tensors",
    "foreach": "torch._foreach_* kernels",
    "deterministic": "deterministic algorithms and no stale data between allocations",
    "fp8": "float8 dtypes",
    "distributed": "torch.distributed collectives and DDP through the c10d backend named by distributed_backend",
}

REQUIRED_CAPABILITIES = ("inference", "training", "rng", "device_api", "multi_device")

RESOURCE_LIMIT_KEYS = ("max_tensor_mb", "max_device_memory_mb")

# Top-level keys: name -> (required, description).
KEYS: dict[str, tuple[bool, str]] = {
    "manifest_version": (True, "schema version, always 1"),
    "device_name": (True, "runtime device type, e.g. 'cuda', 'npu', 'openreg'"),
    "backend_import": (False, "module imported before the device is used, or None"),
    "supported_dtypes": (True, "{dtype: True|False}; absent means not claimed"),
    "semantic_level": (False, f"claimed semantic level {MIN_LEVEL}..{MAX_LEVEL} (default for --level)"),
    "device_count": (False, "number of devices the backend exposes"),
    "capabilities": (True, "{capability: True|False}"),
    "expectations": (False, "ledger of known failures"),
    "tolerance_overrides": (False, "{category: {dtype: {atol, rtol}}}"),
    "max_samples": (False, "cap on OpInfo samples per case"),
    "seed": (False, "base random seed"),
    "resource_limits": (False, "{max_tensor_mb, max_device_memory_mb}"),
    "distributed_backend": (False, "c10d backend name for the distributed suite (None: the device's default; cpu: gloo)"),
    "subnormals": (False, "'preserve' (default: subnormal results and inputs kept, as CPU and CUDA do) or 'flush' "
                          "(flushed to zero, as torch.set_flush_denormal(True)): the subnormals suite checks it"),
}
# How a backend treats subnormal (denormal) floating values: the `subnormals` claim (docs/oracles.md).
SUBNORMAL_MODES = ("preserve", "flush")


# The words of the expectations ledger (manifest/expectations.py checks entries against them).
# Signature buckets: the coarse failure classes an entry may name instead of a message pattern
# (results/triage/signatures.py decides which bucket a failure is in).
BUCKETS: dict[str, str] = {
    "mismatch": "ran and disagreed with the oracle or property (status failed)",
    "missing_kernel": "Could not run 'aten::...' with arguments from the '...' backend",
    "error": "the backend raised an exception (status error)",
    "crash": "the case killed its worker (status crashed)",
    "timeout": "the case exceeded its time limit (status timeout)",
}

# Suite names reserved for the product's suites; a selection or ledger entry naming one that has no module yet
# selects nothing. cases/registry.py: SUITES maps the registered ones to their modules.
RESERVED_SUITE_NAMES = (
    "opinfo", "operators", "errors", "dtypes", "strides", "autograd", "rng", "device_api", "memory",
    "serialization", "training", "compiler", "workloads", "multi_device", "stress", "generated",
    # detection depth (docs/depth.md)
    "inplace_views", "limits", "tiling", "mixed_dtypes", "random_ops", "compiler_ops",
    # dispatcher surfaces (docs/coverage.md)
    "foreach", "out_variants", "special_values", "query_mutation",
    # issue 32 (docs/semantic-suites.md)
    "amp", "capabilities", "data_loading", "profiler", "distributed",
    # issue 39: the subnormals claim (docs/oracles.md), magnitudes past 2^16
    "subnormals", "magnitude", "transfers",
    # issue 50: one case per real report of a backend bug (docs/bug-classes.md)
    "field",
)
EXTRA_SUITES_ENV = settings.env_name("extra_suites")


def extra_suites() -> dict[str, str]:
    """Testing hook for suite developers: TORCHCTS_EXTRA_SUITES="name=module[,name=module]" adds
    suites (e.g. planted crashes and hangs in the project's own tests) without touching the registry."""
    return dict(settings.current().extra_suites)


KNOWN_SUITE_NAMES = RESERVED_SUITE_NAMES + tuple(n for n in extra_suites() if n not in RESERVED_SUITE_NAMES)
