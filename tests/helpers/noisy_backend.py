"""A test-only suite whose backend prints a build log on every failure, as pytorch_ocl prints its
OpenCL sources (hundreds of lines each): the case fails, the log must stay in its record.

    TORCHCTS_EXTRA_SUITES=noisy=helpers.noisy_backend  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import sys

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("noisy")
cases = SUITE.cases
LINES = 3000


@SUITE.case("build_fails", level=1, dtypes=("float32",), ops=("aten::planted_raise",))
def build_fails(ctx: CaseContext, dtype: torch.dtype) -> None:
    print("Accessing device #0", flush=True)
    for i in range(LINES):
        print(f"__kernel void k{i}() {{ /* program source line {i} */ }}", file=sys.stderr)
    print("clBuildErrorCode: -11 (the last line of the log)", file=sys.stderr, flush=True)
    raise RuntimeError("Failed to build program source softmax")
