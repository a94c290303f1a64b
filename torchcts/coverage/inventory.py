"""`coverage inventory`: one row per aten overload with its kind, kernels and covering cases."""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from torchcts.coverage.mapping import Coverage, build_coverage
from torchcts.coverage.surfaces import all_surfaces, dispatch_key_for_device, kernel_table, registration
from torchcts.model.case import Case


@functools.lru_cache(maxsize=8)
def load_cases(suites: tuple[str, ...] | None = None) -> tuple[Case, ...]:
    """Every case of the given suites (all registered suites when None), once per process."""
    from torchcts.cases.registry import iter_cases

    return tuple(iter_cases(list(suites) if suites is not None else None))


@dataclass
class Row:
    name: str
    op: str
    kind: str
    registration: dict[str, Any]
    cases: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "op": self.op, "kind": self.kind, "kernel": self.registration["kernel"],
                "keys": self.registration["keys"], "cases": self.cases}


@dataclass
class Inventory:
    device: str
    dispatch_key: str
    suites: list[str] | None
    rows: list[Row]
    coverage: Coverage

    def to_json(self) -> dict[str, Any]:
        from torchcts.compat import build_info

        return {
            "build": build_info(),
            "device": self.device,
            "dispatch_key": self.dispatch_key,
            "suites": self.suites,
            "surfaces": [r.to_json() for r in self.rows],
            "unmapped_case_ops": {k: len(v) for k, v in sorted(self.coverage.unmapped.items())},
        }


def build_inventory(device: str = "cpu", suites: Iterable[str] | None = None,
                    cases: Iterable[Case] | None = None) -> Inventory:
    key = dispatch_key_for_device(device)
    suite_key = tuple(suites) if suites else None
    cov = build_coverage(cases if cases is not None else load_cases(suite_key))
    table = kernel_table()
    rows = [
        Row(s.name, s.op, s.kind, registration(s.name, key, table), cov.cases_by_surface.get(s.name, []))
        for s in all_surfaces()
    ]
    return Inventory(device, key, list(suite_key) if suite_key else None, rows, cov)


def filter_rows(rows: list[Row], *, kinds: list[str], pattern: str | None, uncovered: bool) -> list[Row]:
    out = rows
    if kinds:
        out = [r for r in out if r.kind in kinds]
    if pattern:
        pat = pattern if pattern.startswith("aten::") else f"aten::{pattern}"
        out = [r for r in out if fnmatch.fnmatchcase(r.name, pat) or fnmatch.fnmatchcase(r.op, pat)]
    if uncovered:
        out = [r for r in out if not r.cases]
    return out


def render_text(inv: Inventory, rows: list[Row]) -> str:
    width = max((len(r.name) for r in rows), default=10)
    lines = [f"# {len(rows)} aten overloads; kernel column is for --device {inv.device} (key {inv.dispatch_key})"]
    for r in rows:
        lines.append(f"{r.name:<{width}}  {r.kind:<10}  {r.registration['kernel']:<18}  "
                     f"{len(r.cases):>4} cases  {','.join(r.registration['keys'])}")
    return "\n".join(lines) + "\n"
