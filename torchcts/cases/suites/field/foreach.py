"""Field cases of the multi-tensor-apply class F1 (docs/bug-classes.md): foreach kernels that
chunk a list of tensors across launches and lose their place.

Claim `foreach`, as the foreach suite. Each `_foreach_norm` result on the device is compared with
CPU's `_foreach_norm` of the same list and with `torch.norm` of each member on the device (the
report's own check), so a backend whose single-tensor norm is right but whose list kernel is not
fails.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import MB, CaseContext, CaseSet, budget_mb, on_cpu
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases

CITE = GH + "pytorch/pytorch/issues/140066"
# The report's first list (FSDP shards): two empty members before the last, large one.
REPORT_SHAPES = (4915200, 4915200, 4915200, 2457600, 0, 0, 4915200)


def _check_norms(ctx: CaseContext, sizes: list[int], dtype: torch.dtype) -> None:
    def make() -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        return [(torch.rand(n, generator=g) * (i % 7 + 1)).to(dtype) for i, n in enumerate(sizes)]

    ts = on_cpu(make)
    want = on_cpu(lambda: torch.stack(torch._foreach_norm(ts)))
    dev = [t.to(ctx.device) for t in ts]
    got = torch.stack(torch._foreach_norm(dev)).cpu()
    ctx.describe(step="_foreach_norm vs CPU", members=len(sizes))
    ctx.assert_close(got, want, category="reduction")
    singles = torch.stack([torch.norm(t) for t in dev]).cpu()
    ctx.describe(step="_foreach_norm vs torch.norm of each member on the device")
    ctx.assert_close(got, singles, category="reduction")


@SUITE.case("F1/pytorch-pytorch-140066/many_tensors", level=4, dtypes=("float32", "bfloat16"),
            ops=("aten::_foreach_norm.Scalar",), requires=("foreach",), cite=CITE)
def foreach_norm_many(ctx: CaseContext, dtype: torch.dtype) -> None:
    """CUDA _foreach_norm of a 215-tensor list gave norms 10x too large or small (the next launch
    started at the wrong tensor once empty members were skipped). 215 members of varied sizes with
    empty ones among them, some crossing 65,536-element chunks."""
    sizes = [(0 if i % 9 == 4 else (70_000 if i % 23 == 0 else 1 + 37 * i)) for i in range(215)]
    _check_norms(ctx, sizes, dtype)


@SUITE.case("F1/pytorch-pytorch-140066/report_shapes", level=8, dtypes=("float32",),
            ops=("aten::_foreach_norm.Scalar",), requires=("foreach",), cite=CITE)
def foreach_norm_report_shapes(ctx: CaseContext, dtype: torch.dtype) -> None:
    """The report's first list: sizes [4915200] x 3, [2457600], [0], [0], [4915200] (84 MB in
    float32); the last norm came out 0.0461 where torch.norm gives 0.0766."""
    need = sum(REPORT_SHAPES) * torch.tensor([], dtype=dtype).element_size() / MB
    if budget_mb(ctx, need) < need:
        ctx.not_applicable(f"the report's list needs {need:.0f} MB, over the manifest's resource limits")
    _check_norms(ctx, list(REPORT_SHAPES), dtype)
