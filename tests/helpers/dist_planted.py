"""A test-only distributed suite whose ranks misbehave: one hangs in a collective, one is killed by
a signal, both raise; then a plain all_reduce shows the next case gets fresh ranks.

    TORCHCTS_EXTRA_SUITES=dist_planted=helpers.dist_planted  (with tests/ on PYTHONPATH)

The `_rank_*` functions run inside the rank processes (torchcts/cases/ranks.py).
"""

from __future__ import annotations

import os
import signal

import torch

from torchcts.cases.api import CaseContext, CaseSet, RankEnv, on_ranks

SUITE = CaseSet("dist_planted")
cases = SUITE.cases
F32 = ("float32",)
HERE = __name__
SHORT = 4.0  # the hang's bound: seconds, not the suite's 30


def _rank_all_reduce(env: RankEnv) -> torch.Tensor:
    import torch.distributed as dist

    x = env.to(torch.full((4,), float(env.rank + 1)))
    dist.all_reduce(x)
    return x.cpu()


def _rank_skips_collective(env: RankEnv) -> torch.Tensor:
    """The last rank never enters the all_reduce: the others wait in it forever (a hang)."""
    if env.rank == env.world_size - 1:
        return torch.zeros(4)
    return _rank_all_reduce(env)


def _rank_segfault(env: RankEnv) -> torch.Tensor:
    if env.rank == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    return _rank_all_reduce(env)


def _rank_raises(env: RankEnv) -> None:
    raise RuntimeError(f"planted collective error on rank {env.rank}")


def _rank_not_applicable(env: RankEnv) -> torch.Tensor:
    """Rank 0's reference cannot run; the others wait for it inside the all_reduce."""
    from torchcts.model.case import NotApplicable

    if env.rank == 0:
        raise NotApplicable("planted: rank 0's CPU reference raises")
    return _rank_all_reduce(env)


@SUITE.case("a_hang", level=1, dtypes=F32, requires=("distributed",))
def a_hang(ctx: CaseContext, dtype: torch.dtype) -> None:
    on_ranks(ctx, f"{HERE}:_rank_skips_collective", timeout=SHORT)


@SUITE.case("b_segfault", level=1, dtypes=F32, requires=("distributed",))
def b_segfault(ctx: CaseContext, dtype: torch.dtype) -> None:
    on_ranks(ctx, f"{HERE}:_rank_segfault", timeout=SHORT)


@SUITE.case("c_raises", level=1, dtypes=F32, requires=("distributed",))
def c_raises(ctx: CaseContext, dtype: torch.dtype) -> None:
    on_ranks(ctx, f"{HERE}:_rank_raises", timeout=SHORT)


@SUITE.case("c_one_rank_not_applicable", level=1, dtypes=F32, requires=("distributed",))
def c_one_rank_not_applicable(ctx: CaseContext, dtype: torch.dtype) -> None:
    on_ranks(ctx, f"{HERE}:_rank_not_applicable", timeout=120)  # ends after the grace, not 120 s


@SUITE.case("d_ok", level=1, dtypes=F32, requires=("distributed",))
def d_ok(ctx: CaseContext, dtype: torch.dtype) -> None:
    got = on_ranks(ctx, f"{HERE}:_rank_all_reduce")
    for value in got:
        ctx.assert_close(value, torch.full((4,), 3.0))
