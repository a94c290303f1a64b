"""Trivial cases for measuring harness overhead: each does almost nothing."""

from __future__ import annotations

from torchcts.cases.model import Case

N = 500


def noop(ctx) -> None:  # noqa: ANN001
    """Touch the context only, so the measured time is the harness's own."""
    assert ctx.device is not None


def cases() -> list[Case]:
    return [
        Case(id=f"bench_trivial/noop/{i:04d}", suite="bench_trivial", level=1, runner=f"{__name__}:noop")
        for i in range(N)
    ]
