"""Field cases of the values and precision classes (docs/bug-classes.md: V1..V16).

Each case replays one real report of a backend that shipped wrong values: the report's own input
situation, at its smallest, compared with CPU (or with a property CPU also satisfies). The
docstring says what the report showed; `cite=` links it.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, on_cpu, to_device

SUITE = CaseSet("field")
cases = SUITE.cases

NAN_REQ = ("inference", "ieee754")
LOW = ("float16", "bfloat16", "float32")


def _with_nan(n: int, at: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """n uniform values in [0, 1) with a NaN at `at` (CPU)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, generator=g).to(dtype)
    x[at] = float("nan")
    return x


@SUITE.case("V5/pytorch-pytorch-143976", level=2, dtypes=LOW, ops=("aten::maximum", "aten::minimum"),
            requires=NAN_REQ, cite="https://github.com/pytorch/pytorch/issues/143976")
def maximum_minimum_nan_pytorch_143976(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.minimum/maximum of two 32-element tensors, NaN at x[3] and y[5], returned no NaN."""
    x, y = on_cpu(lambda: (_with_nan(32, 3, dtype, ctx.seed), _with_nan(32, 5, dtype, ctx.seed + 1)))
    dx, dy = to_device(ctx, x, y)
    ctx.describe(shape=[32], nan_at={"x": 3, "y": 5})
    ctx.assert_close((torch.minimum(dx, dy), torch.maximum(dx, dy)), on_cpu(lambda: (torch.minimum(x, y),
                                                                                     torch.maximum(x, y))))
