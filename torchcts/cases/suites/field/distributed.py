"""Field cases of the collective class DI1 (docs/bug-classes.md): a collective's result per reduce
op across ranks.

Level 7 and claim `distributed`, as the distributed suite, on its rank processes (`on_ranks`: the
manifest's c10d backend, one device per rank). Each check returns every rank's result to the case,
which compares it with the reduction computed on CPU from the same per-rank inputs.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, RankEnv, expect, on_ranks
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases

DIST = ("distributed",)
_HERE = __name__


def _rank_value(rank: int, dtype: torch.dtype) -> torch.Tensor:
    """Rank `rank`'s input for the MAX case: -1 on rank 1, 0 elsewhere (the report's tensor)."""
    return torch.tensor([-1 if rank == 1 else 0], dtype=dtype)


def _rank_max_negative(env: RankEnv, dtype: str) -> torch.Tensor:
    import torch.distributed as dist

    x = env.to(_rank_value(env.rank, getattr(torch, dtype)))
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    return x.cpu()


@SUITE.case("DI1/intel-torch-xpu-ops-3059", level=7, dtypes=("int64",), requires=DIST, ops=("c10d::allreduce_",),
            cite=GH + "intel/torch-xpu-ops/issues/3059")
def all_reduce_max_negative(ctx: CaseContext, dtype: torch.dtype) -> None:
    """xccl dist.all_reduce(rank_to_use, op=ReduceOp.MAX) of the int64 tensor [-1 if rank == 1 else 0]
    gave the wrong answer on B60; every rank must hold [0]."""
    got = on_ranks(ctx, f"{_HERE}:_rank_max_negative", dtype=str(dtype).removeprefix("torch."))
    want = torch.stack([_rank_value(r, dtype) for r in range(len(got))]).amax(0)
    for rank, value in enumerate(got):
        expect(torch.equal(value, want), f"rank {rank}: all_reduce MAX of [-1 on rank 1, 0 elsewhere]",
               got=value.tolist(), expected=want.tolist())


def _rank_reduce_ops(env: RankEnv, seed: int) -> dict[str, torch.Tensor]:
    import torch.distributed as dist

    out = {}
    for op in ("MIN", "MAX"):
        x = env.to(_rank_data(seed, env.rank))
        dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
        out[op] = x.cpu()
    return out


def _rank_data(seed: int, rank: int) -> torch.Tensor:
    """Distinct per rank and per element, exact in float32: MIN and MAX differ everywhere."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    return (torch.randint(-64, 64, (16,), generator=g) / 4.0).float()


@SUITE.case("DI1/ROCm-rccl-745", level=7, dtypes=("float32",), requires=DIST, ops=("c10d::allreduce_",),
            cite=GH + "ROCm/rccl/pull/745")
def all_reduce_min_max(ctx: CaseContext, dtype: torch.dtype) -> None:
    """RCCL's MSCCL path held its min and max kernels in the wrong order (MIN computed MAX and back).
    all_reduce MIN and MAX of distinct per-rank values, each on every rank."""
    got = on_ranks(ctx, f"{_HERE}:_rank_reduce_ops", seed=ctx.seed)
    stack = torch.stack([_rank_data(ctx.seed, r) for r in range(len(got))])
    want = {"MIN": stack.amin(0), "MAX": stack.amax(0)}
    for rank, values in enumerate(got):
        for op, value in want.items():
            ctx.describe(step=f"rank {rank}: all_reduce {op}")
            ctx.assert_close(values[op], value, category="reduction")


def _rank_labels(seed: int, rank: int) -> torch.Tensor:
    """Rank `rank`'s int64 predicted labels (0 and 1, as in the report's classification example)."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    return torch.randint(0, 2, (32,), generator=g)


def _rank_all_gather_int64(env: RankEnv, seed: int) -> list[torch.Tensor]:
    import torch.distributed as dist

    x = env.to(_rank_labels(seed, env.rank))
    out = [torch.empty_like(x) for _ in range(env.world_size)]
    dist.all_gather(out, x)
    return [t.cpu() for t in out]


@SUITE.case("DI1/huggingface-accelerate-3563", level=7, dtypes=("int64",), requires=DIST, ops=("c10d::allgather_",),
            cite=GH + "huggingface/accelerate/pull/3563")
def all_gather_int64(ctx: CaseContext, dtype: torch.dtype) -> None:
    """oneCCL on XPU gathered INT64 tensors wrongly: accelerate's gather of each rank's int64 predicted
    labels (0 or 1) came back with values like -4763119552675512320 for the other ranks' part.
    all_gather of 32 int64 labels per rank: every rank holds every rank's labels exactly."""
    got = on_ranks(ctx, f"{_HERE}:_rank_all_gather_int64", seed=ctx.seed)
    want = [_rank_labels(ctx.seed, r) for r in range(len(got))]
    for rank, parts in enumerate(got):
        for src, (part, expected) in enumerate(zip(parts, want, strict=True)):
            expect(torch.equal(part, expected), f"rank {rank}: all_gather's part from rank {src} differs",
                   got=part[:8].tolist(), expected=expected[:8].tolist())
