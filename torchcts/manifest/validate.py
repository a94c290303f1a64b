"""Validation: collect every problem of a raw manifest, each with its key path and the fix."""

from __future__ import annotations

from typing import Any

from torchcts.errors import UsageError, did_you_mean
from torchcts.manifest.expectations import normalise_entries, validate_entries
from torchcts.manifest.schema import (
    CAPABILITIES,
    DTYPES,
    KEYS,
    MAX_LEVEL,
    MIN_LEVEL,
    REQUIRED_CAPABILITIES,
    RESOURCE_LIMIT_KEYS,
    SUBNORMAL_MODES,
    dtype_name,
)
from torchcts.model.manifest import MANIFEST_VERSION, Manifest
from torchcts.model.run import Run


def suggest(word: str, choices: list[str] | tuple[str, ...], prefix: str = "") -> str:
    """The fix for an unknown name: the closest known one, or the list of known names."""
    return did_you_mean(word, choices, f"known: {', '.join(sorted(choices))}", prefix)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class _Collector:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, path: str, message: str, fix: str = "") -> None:
        """One problem: what is wrong, where (key path), then the fix."""
        self.problems.append(f"{message} under {path}{fix}" if path else f"{message}{fix}")


def _check_dtypes(raw: Any, c: _Collector) -> dict[str, bool]:
    out: dict[str, bool] = {}
    if not isinstance(raw, dict):
        c.add("supported_dtypes", "expected a dict {dtype: True|False}, got " + type(raw).__name__)
        return out
    for key, value in raw.items():
        name = dtype_name(key)
        if name is None:
            c.add("supported_dtypes", f"unknown dtype '{key}'", suggest(str(key).removeprefix("torch."), DTYPES))
            continue
        if not isinstance(value, bool):
            c.add(f"supported_dtypes.{name}", f"expected True or False, got {value!r}")
            continue
        out[name] = value
    return out


def _check_capabilities(raw: Any, c: _Collector) -> dict[str, bool]:
    out: dict[str, bool] = {}
    if not isinstance(raw, dict):
        c.add("capabilities", "expected a dict {capability: True|False}, got " + type(raw).__name__)
        return out
    for key, value in raw.items():
        if key not in CAPABILITIES:
            c.add("capabilities", f"unknown capability '{key}'", suggest(str(key), tuple(CAPABILITIES)))
            continue
        if not isinstance(value, bool):
            c.add(f"capabilities.{key}", f"expected True or False, got {value!r}")
            continue
        out[key] = value
    missing = [k for k in REQUIRED_CAPABILITIES if k not in raw] if isinstance(raw, dict) else []
    if missing:
        c.add("capabilities", f"missing capabilities {missing}: declare each as True or False")
    return out


def _check_tolerances(raw: Any, c: _Collector) -> dict[str, dict[str, dict[str, float]]]:
    from torchcts.oracle.tolerances import CATEGORIES

    out: dict[str, dict[str, dict[str, float]]] = {}
    if not isinstance(raw, dict):
        c.add("tolerance_overrides", "expected {category: {dtype: {'atol': x, 'rtol': y}}}")
        return out
    for cat, per_dtype in raw.items():
        if cat not in CATEGORIES:
            c.add("tolerance_overrides", f"unknown tolerance category '{cat}'", suggest(str(cat), tuple(CATEGORIES)))
            continue
        if not isinstance(per_dtype, dict):
            c.add(f"tolerance_overrides.{cat}", "expected {dtype: {'atol': x, 'rtol': y}}")
            continue
        for dkey, tol in per_dtype.items():
            name = dtype_name(dkey)
            path = f"tolerance_overrides.{cat}"
            if name is None:
                c.add(path, f"unknown dtype '{dkey}'", suggest(str(dkey).removeprefix("torch."), DTYPES))
                continue
            if not isinstance(tol, dict) or set(tol) - {"atol", "rtol"} or not all(
                _is_number(v) and v >= 0 for v in tol.values()
            ):
                c.add(f"{path}.{name}", "expected {'atol': non-negative number, 'rtol': non-negative number}")
                continue
            out.setdefault(cat, {})[name] = {k: float(v) for k, v in tol.items()}
    return out


def _check_limits(raw: Any, c: _Collector) -> dict[str, float]:
    out: dict[str, float] = {}
    if not isinstance(raw, dict):
        c.add("resource_limits", "expected a dict {max_tensor_mb: N, max_device_memory_mb: N}")
        return out
    for key, value in raw.items():
        if key not in RESOURCE_LIMIT_KEYS:
            c.add("resource_limits", f"unknown key '{key}'", suggest(str(key), RESOURCE_LIMIT_KEYS))
        elif not _is_number(value) or value <= 0:
            c.add(f"resource_limits.{key}", f"expected a positive number of MB, got {value!r}")
        else:
            out[key] = float(value)
    return out


def validate(raw: Any, source: str = "manifest") -> tuple[Manifest | None, list[str]]:
    """Validate a raw manifest mapping; returns (manifest or None, every problem found)."""
    c = _Collector()
    if not isinstance(raw, dict):
        return None, [f"the manifest must be a dict, got {type(raw).__name__}: define manifest = {{...}}"]
    for key in raw:
        if key not in KEYS:
            c.add("", f"unknown key '{key}'", suggest(str(key), tuple(KEYS)))
    for key, (required, _doc) in KEYS.items():
        if required and key not in raw:
            c.add("", f"missing required key '{key}': add it ({KEYS[key][1]})")

    version = raw.get("manifest_version", MANIFEST_VERSION)
    if version != MANIFEST_VERSION:
        c.add("manifest_version", f"unsupported version {version!r}: set manifest_version = 1")
    device = raw.get("device_name", "")
    if "device_name" in raw and (not isinstance(device, str) or not device.isidentifier()):
        c.add("device_name", f"expected a device type name such as 'cuda' or 'npu', got {device!r}")
    backend = raw.get("backend_import")
    if backend is not None and (not isinstance(backend, str) or not all(p.isidentifier() for p in backend.split("."))):
        c.add("backend_import", f"expected a module name or None, got {backend!r}")

    dist_backend = raw.get("distributed_backend")
    if dist_backend is not None and (not isinstance(dist_backend, str) or not dist_backend.isidentifier()):
        c.add("distributed_backend", f"expected a c10d backend name such as 'gloo' or None, got {dist_backend!r}")

    dtypes = _check_dtypes(raw.get("supported_dtypes", {}), c)
    caps = _check_capabilities(raw.get("capabilities", {}), c)

    level = raw.get("semantic_level", 1)
    if not _is_int(level) or not MIN_LEVEL <= level <= MAX_LEVEL:
        c.add("semantic_level", f"expected an integer {MIN_LEVEL}..{MAX_LEVEL}, got {level!r}")
    count = raw.get("device_count", 1)
    if not _is_int(count) or count < 1:
        c.add("device_count", f"expected a positive integer, got {count!r}")
    max_samples = raw.get("max_samples")
    if max_samples is not None and (not _is_int(max_samples) or max_samples < 1):
        c.add("max_samples", f"expected a positive integer or None, got {max_samples!r}")
    seed = raw.get("seed", 0)
    if not _is_int(seed) or seed < 0:
        c.add("seed", f"expected a non-negative integer, got {seed!r}")
    subnormals = raw.get("subnormals", "preserve")
    if subnormals not in SUBNORMAL_MODES:
        c.add("subnormals", f"expected one of {', '.join(repr(m) for m in SUBNORMAL_MODES)}, got {subnormals!r}")
    tolerances = _check_tolerances(raw.get("tolerance_overrides", {}), c)
    limits = _check_limits(raw.get("resource_limits", {}), c)
    expectations = raw.get("expectations", [])
    if not isinstance(expectations, list) or not all(isinstance(e, dict) for e in expectations):
        c.add("expectations", "expected a list of {match, status, reason, ...} entries")
        expectations = []
    else:
        for problem in validate_entries(expectations):
            c.problems.append(problem)
        expectations = normalise_entries(expectations)

    if c.problems:
        return None, c.problems
    return (
        Manifest(
            manifest_version=MANIFEST_VERSION,
            device_name=device,
            backend_import=backend,
            supported_dtypes=dtypes,
            capabilities=caps,
            semantic_level=level,
            device_count=count,
            expectations=list(expectations),
            tolerance_overrides=tolerances,
            max_samples=max_samples,
            seed=seed,
            resource_limits=limits,
            distributed_backend=dist_backend,
            subnormals=subnormals,
            source=source,
        ),
        [],
    )


def check_run_claims(run: Run, where: str) -> Run:
    """`run` when its claims pass `run_manifest_problem`, else the one-line UsageError naming `where`:
    every reader of a run.json (rundir.read_run, RunSpec.from_json) asks it after Run.from_json."""
    problem = run_manifest_problem(run.source_of("manifest"))
    if problem:
        raise UsageError(f"{where}: {problem} (edited or damaged): restore it or rerun")
    return run


def run_manifest_problem(manifest: Any) -> str | None:
    """`manifest: <why>` for the first key of a run.json's manifest that validation refuses (a key or
    capability a run.json from an older or newer TorchCTS lacks or adds is no problem); None if none.
    results/records/rundir.py: read_run asks it of every run.json it reads (model/run.py cannot)."""
    if not isinstance(manifest, dict) or not manifest:
        return None
    _, problems = validate(manifest, source="run.json")
    for problem in problems:
        if not problem.startswith("missing ") and "unknown key" not in problem:
            return f"manifest: {problem[:200]}"
    return None
