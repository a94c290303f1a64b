"""Which TorchCTS cases cover which surfaces.

The rule, applied to each op name a case declares (`cases/ops.py: case_op_names`, whose
refs `--op` selection and ledger op selectors match):

- `aten::NAME.OVERLOAD` covers exactly that overload.
- `aten::NAME` covers every overload of the packet NAME except its out= overloads (kind `out`, or
  any other kind with an out= argument, such as a random op's `bernoulli.out`; cases/ops.py: writes_out):
  `aten::add` covers add.Tensor and add.Scalar, not add.out (name `aten::add.out` to claim it). In-place is a
  different packet (`aten::add_`), so it is never covered implicitly either.
- Any other name is an OpInfo-style name, resolved to the first aten packet among: the name itself,
  dots replaced by underscores (`linalg.norm` -> linalg_norm), the last component
  (`nn.functional.relu` -> relu), the first component (`max.reduction_with_dim` -> max); then the
  packet rule applies. A name that resolves to no overload is reported as unmapped.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

from torchcts.cases.ops import case_op_names, resolve_op_name
from torchcts.coverage.surfaces import Surface, all_surfaces, by_op
from torchcts.model.case import Case


def resolve_op(name: str, surfaces: tuple[Surface, ...] | None = None) -> list[str]:
    """The surfaces (overload names) a case's op entry covers, by the module's rule."""
    surfaces = surfaces if surfaces is not None else all_surfaces()
    return resolve_op_name(name, *_packet_covers(surfaces))


@functools.lru_cache(maxsize=4)
def _packet_covers(surfaces: tuple[Surface, ...]) -> tuple[dict[str, list[str]], frozenset[str]]:
    """`_index` as resolve_op_name takes it: each packet's overloads that naming the packet covers."""
    packets, overloads = _index(surfaces)
    return {op: [s.name for s in group if s.kind != "out" and not s.writes_out] for op, group in packets.items()}, overloads


@functools.lru_cache(maxsize=4)
def _index(surfaces: tuple[Surface, ...]) -> tuple[dict[str, list[Surface]], frozenset[str]]:
    return by_op(surfaces), frozenset(s.name for s in surfaces)


@dataclass
class Coverage:
    """Surface name -> ids of the cases covering it; and the case op names that map to nothing."""

    cases_by_surface: dict[str, list[str]] = field(default_factory=dict)
    unmapped: dict[str, list[str]] = field(default_factory=dict)  # op name -> case ids
    cases: dict[str, Case] = field(default_factory=dict)

    def covering(self, surface: str) -> list[Case]:
        return [self.cases[i] for i in self.cases_by_surface.get(surface, ())]


def build_coverage(cases: Iterable[Case], surfaces: tuple[Surface, ...] | None = None) -> Coverage:
    surfaces = surfaces if surfaces is not None else all_surfaces()
    cov = Coverage()
    resolved: dict[str, list[str]] = {}
    for case in cases:
        cov.cases[case.id] = case
        for name in case_op_names(case):
            if name not in resolved:
                resolved[name] = resolve_op(name, surfaces)
            if not resolved[name]:
                cov.unmapped.setdefault(name, []).append(case.id)
            for s in resolved[name]:
                ids = cov.cases_by_surface.setdefault(s, [])
                if not ids or ids[-1] != case.id:
                    ids.append(case.id)
    return cov


def select_surfaces(patterns: Iterable[str], surfaces: tuple[Surface, ...] | None = None) -> list[str]:
    """`--surface` values: an overload name, an op name (all its overloads), or a glob; `aten::` optional.

    Raises UsageError naming the first pattern that selects nothing.
    """
    from torchcts.errors import UsageError

    surfaces = surfaces if surfaces is not None else all_surfaces()
    packets, overloads = _index(surfaces)
    chosen: dict[str, None] = {}
    for raw in patterns:
        pat = raw if raw.startswith("aten::") else f"aten::{raw}"
        if any(c in pat for c in "*?["):
            found = [s.name for s in surfaces if fnmatch.fnmatchcase(s.name, pat)]
        elif pat in overloads:
            found = [pat]
        else:
            found = [s.name for s in packets.get(pat, ())]
        if not found:
            raise UsageError(
                f"--surface '{raw}' matches no aten overload of this build (torch {_torch_version()}); "
                "use an overload such as aten::add.Tensor, an op such as aten::add, or a glob"
            )
        chosen.update(dict.fromkeys(found))
    return sorted(chosen)


def _torch_version() -> str:
    import torch

    return torch.__version__
