"""Level-2 reductions at realistic sizes: the values of sum, mean, var, amax, amin and cumsum over
tensors large enough to take a kernel's multi-block paths, vs CPU.

OpInfo's samples are small (tens of elements), while reduction kernels typically change strategy
at block boundaries (powers of two, thousands of elements): sizes just below, at and above such
boundaries, and reductions along the first, last and all dims, are where accumulation-order,
accumulation-precision and tail-handling bugs live. Inputs are non-negative so that the results
have no cancellation and the `reduction` tolerance is meaningful for every dtype; amax and amin get
signed inputs of a range much wider than a row, so that their results are neither zero nor one
constant (oracle/weak.py: such a reference proves nothing).
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet

SUITE = CaseSet("operators")
cases = SUITE.cases  # a part of the operators suite (cases/registry.py)

_FLOATS = ("float16", "bfloat16", "float32", "float64")
_INTS = ("int32", "int64")
# tag -> (shape, dim): 1-D sizes around block boundaries, then 2-D/3-D along different dims
_SHAPES: dict[str, dict[str, object]] = {
    "n1023": {"shape": [1023], "dim": None},
    "n1024": {"shape": [1024], "dim": None},
    "n1025": {"shape": [1025], "dim": None},
    "n65537": {"shape": [65537], "dim": None},
    "rows257x1031_dim0": {"shape": [257, 1031], "dim": 0},
    "rows257x1031_dim1": {"shape": [257, 1031], "dim": 1},
    "3x5x4099_last": {"shape": [3, 5, 4099], "dim": -1},
}

_OPS = {
    "sum": (lambda x, dim: x.sum() if dim is None else x.sum(dim), _FLOATS + _INTS),
    "mean": (lambda x, dim: x.mean() if dim is None else x.mean(dim), _FLOATS),
    "var": (lambda x, dim: x.var() if dim is None else x.var(dim), ("float32", "float64")),
    "amax": (lambda x, dim: x.amax() if dim is None else x.amax(dim), _FLOATS + _INTS),
    "amin": (lambda x, dim: x.amin() if dim is None else x.amin(dim), _FLOATS + _INTS),
    "cumsum": (lambda x, dim: x.flatten().cumsum(0) if dim is None else x.cumsum(dim), ("float32", "float64") + _INTS),
}


def _input(shape: list[int], dtype: torch.dtype, seed: int, signed: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 100 if signed else torch.rand(shape, generator=g)).to(dtype)
    return torch.randint(-2**20, 2**20, shape, generator=g).to(dtype) if signed else \
        torch.randint(0, 8, shape, generator=g).to(dtype)


def _register(op: str) -> None:
    fn, dtypes = _OPS[op]

    @SUITE.family(f"reduction/{op}", qualname=f"reduction_{op}",
                  level=2, dtypes=dtypes, ops=(f"aten::{op}",), requires=("inference",),
                  params=_SHAPES)
    def run(ctx: CaseContext, dtype: torch.dtype, shape: list[int], dim: int | None) -> None:
        x = _input(shape, dtype, ctx.seed, signed=op in ("amax", "amin"))
        ctx.describe(shape=shape, dim=dim)
        expected = fn(x, dim)
        actual = fn(x.to(ctx.device), dim)
        ctx.assert_close(actual, expected, category="reduction")


for _op in _OPS:
    _register(_op)
