"""A suite of N trivial cases (N from TORCHCTS_BENCH_CASES) for measuring harness overhead."""

from __future__ import annotations

import os

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("trivial")
cases = SUITE.cases


@SUITE.case("noop", level=1, params={str(i): {} for i in range(int(os.environ.get("TORCHCTS_BENCH_CASES", "10")))})
def noop(ctx: CaseContext) -> None:
    """Does nothing: its time is the harness's time."""
