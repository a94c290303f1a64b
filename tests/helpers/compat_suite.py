"""A test-only suite whose one case meets PyTorch 2.7's way of saying "no kernel for this dtype"
(RuntimeError, not NotImplementedError), on any installed PyTorch:
    TORCHCTS_EXTRA_SUITES=compatprobe=helpers.compat_suite  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, cpu_reference

SUITE = CaseSet("compatprobe")
cases = SUITE.cases


@SUITE.case("old_missing_kernel", level=1, dtypes=("bool",), ops=("aten::arange",))
def old_missing_kernel(ctx: CaseContext, dtype: torch.dtype) -> None:
    def cpu() -> None:
        raise RuntimeError("\"arange_cpu\" not implemented for 'Bool'")

    cpu_reference(ctx, cpu, "arange")


@SUITE.case("plain", level=1, dtypes=("float32",), ops=("aten::add.Tensor",))
def plain(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = torch.arange(4, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)
