"""Level 5 special functions at their domains' edges: every `aten::special_*` overload of this build.

OpInfo's samples for the special functions are mostly moderate random values; the bugs of a
special-function kernel live at the edges of its domain: the poles of the gamma family at 0 and
the negative integers, ndtri/erfinv/logit at 0 and ±1, the overflow of i0/exp2/erfcx at large
magnitudes, subnormal and tiny inputs (flushed to zero or not), ±inf and NaN. Each case runs one
op family (its functional overloads and its out= overloads, the out sized like CPU's result) on
EDGES in the case's float dtype, as a column against a row of edges for the two-argument
functions (every pair), and compares with CPU (the `special` tolerance category; NaN where CPU
has NaN). Orthogonal polynomials take small integer degrees (DEGREES): a degree of inf would loop.
The functions reducing over a dim (softmax, log_softmax, logsumexp: REDUCING) take the edges as a
row over ordinary values (ALONGSIDE), one edge per reduced slice: over the column of every edge
the NaN reached every output, an all-NaN reference any backend returning NaN matches
(docs/oracles.md, "Weak comparisons"), and each edge is now reduced with ordinary values.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts.cases.api import (
    FLOATING,
    CaseContext,
    CaseSet,
    overload_names,
    qualified,
    resolve,
    run_overloads,
    settle,
)

SUITE = CaseSet("special_values")
cases = SUITE.cases
LEVEL = 5
DEGREES = (0.0, 1.0, 2.0, 3.0, 6.0, -1.0)  # n of the orthogonal polynomials
ROW = (0.0, 0.5, 1.0, 2.0, -1.0, 30.0, float("inf"), float("nan"))  # the other argument of binary ops
INT_ARGS = {"n": 1, "p": 2, "dim": 0}  # polygamma's order, multigammaln's p, softmax's dim
REDUCING = frozenset({"special_softmax", "special_log_softmax", "special_logsumexp"})  # over `dim` 0
ALONGSIDE = (0.5, -1.0)  # the ordinary values reduced with each edge (rows under the edges)


def edges(dtype: torch.dtype) -> torch.Tensor:
    """The edge values of the special functions' domains, representable (or overflowing) in dtype."""
    fi = torch.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, -3.0, -10.0, 2.5, -2.5, 1e-3, -1e-3, 30.0, -30.0,
              1e4, -1e4, fi.max, -fi.max, fi.tiny, -fi.tiny, fi.tiny / 4, -fi.tiny / 4, fi.eps, 1 - fi.eps,
              -1 + fi.eps, float("inf"), float("-inf"), float("nan")]
    return torch.tensor(values, dtype=torch.float64).to(dtype)


class EdgeArgs:
    """The synth of the special functions: the first tensor the edges, a second one a row."""

    def __init__(self, dtype: torch.dtype, family: str, binary: bool) -> None:
        self.dtype, self.binary = dtype, binary  # binary: the edges as a column against a row
        self.polynomial = "polynomial" in family
        self.reducing = family in REDUCING  # one edge per reduced slice

    def __call__(self, arg: Any, device: torch.device) -> Any:
        kind, name = str(arg.type), arg.name
        if kind == "Tensor" and name == "out":  # CPU cannot compute the functional form: any out
            return torch.empty(0, dtype=self.dtype, device=device)
        if kind == "Tensor" and name == "n":
            return torch.tensor(DEGREES, dtype=self.dtype, device=device)[None, :]
        if kind == "Tensor" and name == "other":
            return torch.tensor(ROW, dtype=torch.float64).to(self.dtype).to(device)[None, :]
        if kind == "Tensor":
            column = edges(self.dtype)
            if self.reducing:
                rows = [column, *(torch.full_like(column, v) for v in ALONGSIDE)]
                return torch.stack(rows).to(device)  # reduced over dim 0: each column one edge
            column = column.to(device)
            return column[:, None] if self.binary else column
        if kind == "number":
            return 3 if name == "n" else (0.5 if self.polynomial else 2.0)
        if kind == "int" and name in INT_ARGS:
            return INT_ARGS[name]
        if kind == "List[int]" and name == "dim":
            return [0]
        raise KeyError(name)  # the schema's default


def special_case(ctx: CaseContext, dtype: torch.dtype, family: str) -> None:
    outcome: dict[str, str] = {}
    for name, overload in FAMILIES[family]:
        op = resolve(name, overload)
        binary = op is not None and sum(str(a.type) == "Tensor" and a.name != "out" for a in op._schema.arguments) > 1
        outcome.update(run_overloads(ctx, [(name, overload)], EdgeArgs(dtype, family, binary), category="special"))
    ctx.describe(edges=[float(v) for v in edges(dtype)])
    settle(ctx, outcome)


FAMILIES: dict[str, list[tuple[str, str]]] = {
    name: [(name, o) for o in overloads] for name, overloads in overload_names("special_").items()
}

for _family, _overloads in FAMILIES.items():
    SUITE.case(_family.removeprefix("special_"), level=LEVEL, dtypes=FLOATING,
               ops=tuple(qualified(n, o) for n, o in _overloads), params={"edges": {"family": _family}})(special_case)
