"""Semantic levels: `--level N` runs 1..N; LEVELS says what each holds. The one source of the level range.

Below every layer that needs it: the manifest checks `semantic_level`, cases declare a level, and
every command that takes `--level` checks it here.
"""

from __future__ import annotations

from torchcts.errors import UsageError

LEVELS: dict[int, str] = {
    1: "core primitives: device registration, creation, copy round trips, elementwise basics",
    2: ("operator values: OpInfo forward for claimed dtypes, factories, reductions, broadcasting, each op's "
        "arguments explored at their switch points with unusual values (docs/exploration.md)"),
    3: ("framework semantics: out=, in-place (also through views), views and aliasing, indexing, errors, promotion and "
        "mixed dtypes, RNG and random ops' values, serialization, basic autograd"),
    4: ("production breadth: backward of every differentiable op, training steps, matmul and conv families, foreach, "
        "low-precision dtypes"),
    5: ("advanced numerics and layout: linalg, fft, special functions, strides, channels_last, NaN/Inf semantics, "
        "accumulation at dtype limits, sparse and nested"),
    6: "integration: torch.compile, device API (streams, events, guards), allocator and memory",
    7: "workloads and multi-device",
    8: "stress and adversarial: large tensors, heavy shapes, sizes at kernel tiling thresholds",
}
MIN_LEVEL, MAX_LEVEL = min(LEVELS), max(LEVELS)


def check_level(flag: str, value: int | None) -> None:
    """A `--level`-like flag's value must be a level; None (not given) passes."""
    if value is not None and not MIN_LEVEL <= value <= MAX_LEVEL:
        raise UsageError(f"{flag} {value} is out of range: use {MIN_LEVEL}..{MAX_LEVEL}")
