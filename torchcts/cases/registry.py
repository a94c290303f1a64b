"""The suite registry: a new suite is one entry here and one module that defines `cases()`."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass

from torchcts.cases.model import Case


@dataclass(frozen=True)
class Suite:
    name: str
    module: str
    description: str


SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        Suite("operators", "torchcts.cases.suites.operators", "hand-written operator checks: core primitives"),
        Suite("opinfo", "torchcts.cases.opinfo", "every OpInfo op, dtype and variant against the CPU oracle"),
    )
}

# Names the SPEC reserves; a selection naming one that has no module yet selects nothing.
KNOWN_SUITE_NAMES = (
    "opinfo", "operators", "errors", "dtypes", "strides", "autograd", "rng", "device_api", "memory",
    "serialization", "training", "compiler", "workloads", "multi_device", "stress", "generated",
)


def suite_cases(name: str) -> list[Case]:
    """Every case of one suite, in a stable order."""
    module = importlib.import_module(SUITES[name].module)
    return list(module.cases())


def iter_cases(suites: list[str] | None = None) -> Iterator[Case]:
    for name in SUITES:
        if suites is None or name in suites:
            yield from suite_cases(name)
