"""Distributed collectives (claim `distributed`, level 7): the device's c10d backend with 2 local ranks.

A device backend registers a c10d process-group backend (`torch.distributed.Backend.register_backend`)
and names it in the manifest (`distributed_backend`; None: PyTorch's default for the device type,
gloo for cpu). Each case runs one check on every rank (`cases/ranks.py`: the ranks are started once
per pytest worker, every wait bounded, a hang or a dead rank a failure): the rank builds its inputs
on CPU from its rank number, moves them to the device, runs the collective and returns its results
on CPU. The case computes what every rank must hold from the same inputs on CPU and compares.
Checked: joining, leaving and re-joining the group; all_reduce for each ReduceOp; broadcast,
all_gather, all_gather_into_tensor, reduce_scatter, reduce_scatter_tensor, all_to_all (and
all_to_all_single), send/recv (and isend/irecv), barrier, async work handles and wait(), the object
collectives, and DDP (one step's gradients equal those of one process on the whole batch).

The functions named `_rank_*` run inside the rank processes (`env`: `cases/ranks.py: RankEnv`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

from torchcts.cases.api import (
    CaseContext,
    CaseSet,
    NotApplicable,
    OracleMismatch,
    RankEnv,
    expect,
    first_line,
    on_ranks,
)

SUITE = CaseSet("distributed")
cases = SUITE.cases

LEVEL = 7
F32 = ("float32",)
DIST = ("distributed",)
N = 8  # elements per rank and chunk: small, the collectives' logic is the subject
REDUCE_OPS = ("sum", "product", "min", "max", "avg")
_HERE = __name__


def _data(seed: int, rank: int, n: int = N) -> torch.Tensor:
    """Rank `rank`'s input, the same on the rank and in the case: distinct per rank, exact in float32."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    return (torch.randint(-32, 32, (n,), generator=g) / 8.0).float()


def _chunks(seed: int, rank: int, world: int) -> list[torch.Tensor]:
    return list(_data(seed, rank, N * world).chunk(world))


def _run(ctx: CaseContext, name: str, timeout: float | None = None, **params: Any) -> list[Any]:
    extra = {} if timeout is None else {"timeout": timeout}
    return on_ranks(ctx, f"{_HERE}:_rank_{name}", seed=ctx.seed, **extra, **params)


def _close(ctx: CaseContext, value: Any, want: Any, what: str, category: str = "reduction") -> None:
    """One rank's result against the CPU expectation; a mismatch says which rank and check."""
    try:
        ctx.assert_close(value, want, category=category)
    except OracleMismatch as exc:
        exc.mismatch.what = f"{what}: {exc.mismatch.what}"
        raise OracleMismatch(exc.mismatch) from None


def _per_rank(ctx: CaseContext, got: list[Any], want: Any, what: str, category: str = "reduction") -> None:
    """Every rank must hold the same expected value."""
    for rank, value in enumerate(got):
        _close(ctx, value, want, f"rank {rank}: {what}", category)


@contextmanager
def _reference_only(env: RankEnv, what: str) -> Iterator[None]:
    """Around a collective: the reference backend lacking it makes the case not_applicable; a device
    backend's exception stays its failure."""
    try:
        yield
    except (RuntimeError, ValueError) as exc:
        if env.backend != "gloo":
            raise
        raise NotApplicable(f"gloo (the reference c10d backend) does not support {what} in this PyTorch: "
                            f"{first_line(exc, 200)}") from exc


# --- joining and leaving ------------------------------------------------------------------------

def _rank_init_destroy(env: RankEnv, seed: int) -> dict[str, Any]:
    import torch.distributed as dist

    out: dict[str, Any] = {"initialized": dist.is_initialized(), "rank": dist.get_rank(),
                           "world_size": dist.get_world_size(), "backend": str(dist.get_backend())}
    sub = dist.new_group(list(range(env.world_size)))
    x = env.to(torch.ones(N))
    dist.all_reduce(x, group=sub)
    out["subgroup_sum"] = x.cpu()
    dist.destroy_process_group(sub)
    dist.destroy_process_group()
    out["after_destroy"] = dist.is_initialized()
    env.init()
    y = env.to(_data(seed, env.rank))
    dist.all_reduce(y)
    out["rejoined"] = dist.is_initialized()
    out["rejoined_sum"] = y.cpu()
    return out


@SUITE.case("init_destroy", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::allreduce_",))
def init_destroy(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Each rank joins with its rank and the world size; a subgroup works and is destroyed; the default
    group is destroyed (is_initialized turns False) and joined again, and collectives work after."""
    got = _run(ctx, "init_destroy")
    for rank, r in enumerate(got):
        expect(r["initialized"] and r["rank"] == rank and r["world_size"] == len(got),
               f"rank {rank}: is_initialized/get_rank/get_world_size disagree with the rank's place",
               got={k: r[k] for k in ("initialized", "rank", "world_size")})
        expect(not r["after_destroy"], f"rank {rank}: is_initialized() still True after destroy_process_group()")
        expect(r["rejoined"], f"rank {rank}: joining again after destroy_process_group() failed")
    world = len(got)
    _per_rank(ctx, [r["subgroup_sum"] for r in got], torch.full((N,), float(world)), "all_reduce on a new_group")
    want = sum(_data(ctx.seed, r) for r in range(world))
    _per_rank(ctx, [r["rejoined_sum"] for r in got], want, "all_reduce after re-joining")


# --- all_reduce, per ReduceOp -------------------------------------------------------------------

def _rank_all_reduce(env: RankEnv, seed: int, op: str) -> torch.Tensor:
    import torch.distributed as dist

    x = env.to(_data(seed, env.rank))
    with _reference_only(env, f"all_reduce with ReduceOp.{op.upper()}"):
        dist.all_reduce(x, op=getattr(dist.ReduceOp, op.upper()))
    return x.cpu()


def _reduce(op: str, xs: list[torch.Tensor]) -> torch.Tensor:
    stack = torch.stack(xs)
    return {"sum": stack.sum(0), "product": stack.prod(0), "min": stack.amin(0), "max": stack.amax(0),
            "avg": stack.mean(0)}[op]


@SUITE.case("all_reduce", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::allreduce_",),
            params={op: {"op": op} for op in REDUCE_OPS})
def all_reduce(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    """all_reduce leaves the op's reduction of every rank's tensor on every rank."""
    got = _run(ctx, "all_reduce", op=op)
    _per_rank(ctx, got, _reduce(op, [_data(ctx.seed, r) for r in range(len(got))]), f"all_reduce {op}")


# --- one-to-all, all-to-all ---------------------------------------------------------------------

def _rank_broadcast(env: RankEnv, seed: int) -> torch.Tensor:
    import torch.distributed as dist

    x = env.to(_data(seed, env.rank))
    dist.broadcast(x, src=env.world_size - 1)  # not rank 0: a backend that ignores src shows
    return x.cpu()


@SUITE.case("broadcast", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::broadcast_",))
def broadcast(ctx: CaseContext, dtype: torch.dtype) -> None:
    """broadcast from the last rank leaves its tensor on every rank."""
    got = _run(ctx, "broadcast")
    _per_rank(ctx, got, _data(ctx.seed, len(got) - 1), "broadcast from the last rank")


def _rank_all_gather(env: RankEnv, seed: int) -> list[torch.Tensor]:
    import torch.distributed as dist

    outs = [env.to(torch.zeros(N)) for _ in range(env.world_size)]
    dist.all_gather(outs, env.to(_data(seed, env.rank)))
    return [o.cpu() for o in outs]


@SUITE.case("all_gather", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::allgather_",))
def all_gather(ctx: CaseContext, dtype: torch.dtype) -> None:
    """all_gather fills every rank's list with each rank's tensor, in rank order."""
    got = _run(ctx, "all_gather")
    _per_rank(ctx, got, [_data(ctx.seed, r) for r in range(len(got))], "all_gather", "elementwise")


def _rank_all_gather_into_tensor(env: RankEnv, seed: int) -> torch.Tensor:
    import torch.distributed as dist

    out = env.to(torch.zeros(N * env.world_size))
    with _reference_only(env, "all_gather_into_tensor"):
        dist.all_gather_into_tensor(out, env.to(_data(seed, env.rank)))
    return out.cpu()


@SUITE.case("all_gather_into_tensor", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::_allgather_base_",))
def all_gather_into_tensor(ctx: CaseContext, dtype: torch.dtype) -> None:
    """all_gather_into_tensor concatenates every rank's tensor, in rank order, on every rank."""
    got = _run(ctx, "all_gather_into_tensor")
    _per_rank(ctx, got, torch.cat([_data(ctx.seed, r) for r in range(len(got))]), "all_gather_into_tensor",
              "elementwise")


def _scattered(seed: int, world: int) -> list[torch.Tensor]:
    """What reduce_scatter leaves on rank k: the sum over ranks of each rank's chunk k."""
    per_rank = [_chunks(seed, r, world) for r in range(world)]
    return [sum(per_rank[r][k] for r in range(world)) for k in range(world)]


def _rank_reduce_scatter(env: RankEnv, seed: int) -> torch.Tensor:
    import torch.distributed as dist

    out = env.to(torch.zeros(N))
    with _reference_only(env, "reduce_scatter"):
        dist.reduce_scatter(out, [env.to(c) for c in _chunks(seed, env.rank, env.world_size)])
    return out.cpu()


@SUITE.case("reduce_scatter", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::reduce_scatter_",))
def reduce_scatter(ctx: CaseContext, dtype: torch.dtype) -> None:
    """reduce_scatter (lists) leaves on rank k the sum of every rank's k-th tensor."""
    got = _run(ctx, "reduce_scatter")
    for rank, want in enumerate(_scattered(ctx.seed, len(got))):
        _close(ctx, got[rank], want, f"rank {rank}: reduce_scatter's chunk")


def _rank_reduce_scatter_tensor(env: RankEnv, seed: int) -> torch.Tensor:
    import torch.distributed as dist

    out = env.to(torch.zeros(N))
    with _reference_only(env, "reduce_scatter_tensor"):
        dist.reduce_scatter_tensor(out, env.to(_data(seed, env.rank, N * env.world_size)))
    return out.cpu()


@SUITE.case("reduce_scatter_tensor", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::_reduce_scatter_base_",))
def reduce_scatter_tensor(ctx: CaseContext, dtype: torch.dtype) -> None:
    """reduce_scatter_tensor leaves on rank k the sum of every rank's k-th chunk."""
    got = _run(ctx, "reduce_scatter_tensor")
    for rank, want in enumerate(_scattered(ctx.seed, len(got))):
        _close(ctx, got[rank], want, f"rank {rank}: reduce_scatter_tensor's chunk")


def _rank_all_to_all(env: RankEnv, seed: int) -> dict[str, Any]:
    import torch.distributed as dist

    chunks = [env.to(c) for c in _chunks(seed, env.rank, env.world_size)]
    outs = [env.to(torch.zeros(N)) for _ in range(env.world_size)]
    single = env.to(torch.zeros(N * env.world_size))
    with _reference_only(env, "all_to_all"):
        dist.all_to_all(outs, chunks)
        dist.all_to_all_single(single, env.to(_data(seed, env.rank, N * env.world_size)))
    return {"list": [o.cpu() for o in outs], "single": single.cpu()}


@SUITE.case("all_to_all", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::alltoall_", "c10d::alltoall_base_"))
def all_to_all(ctx: CaseContext, dtype: torch.dtype) -> None:
    """all_to_all and all_to_all_single send rank r's chunk k to rank k, which keeps it at place r."""
    got = _run(ctx, "all_to_all")
    world = len(got)
    per_rank = [_chunks(ctx.seed, r, world) for r in range(world)]
    for k, r in enumerate(got):
        want = [per_rank[src][k] for src in range(world)]
        _close(ctx, r["list"], want, f"rank {k}: all_to_all's list", "elementwise")
        _close(ctx, r["single"], torch.cat(want), f"rank {k}: all_to_all_single", "elementwise")


# --- point to point, barrier, async handles -----------------------------------------------------

def _rank_send_recv(env: RankEnv, seed: int) -> dict[str, torch.Tensor]:
    import torch.distributed as dist

    peer = (env.rank + 1) % env.world_size
    source = (env.rank - 1) % env.world_size
    got = env.to(torch.zeros(N))
    if env.rank % 2 == 0:  # blocking pairs: evens send first, odds receive first
        dist.send(env.to(_data(seed, env.rank)), dst=peer, tag=7)
        dist.recv(got, src=source, tag=7)
    else:
        dist.recv(got, src=source, tag=7)
        dist.send(env.to(_data(seed, env.rank)), dst=peer, tag=7)
    back = env.to(torch.zeros(N))
    works = [dist.isend(env.to(_data(seed, env.rank) * 2), dst=source, tag=9), dist.irecv(back, src=peer, tag=9)]
    for w in works:
        w.wait()
    return {"recv": got.cpu(), "irecv": back.cpu()}


@SUITE.case("send_recv", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::send", "c10d::recv_"))
def send_recv(ctx: CaseContext, dtype: torch.dtype) -> None:
    """send/recv around the ring (each rank gets its predecessor's tensor), isend/irecv back the other way."""
    got = _run(ctx, "send_recv")
    world = len(got)
    for rank, r in enumerate(got):
        _close(ctx, r["recv"], _data(ctx.seed, (rank - 1) % world), f"rank {rank}: recv", "elementwise")
        _close(ctx, r["irecv"], _data(ctx.seed, (rank + 1) % world) * 2, f"rank {rank}: irecv", "elementwise")


def _rank_barrier(env: RankEnv, seed: int, tag: str) -> dict[str, Any]:
    import torch.distributed as dist

    if env.rank == env.world_size - 1:
        time.sleep(0.3)  # the last rank arrives late: a barrier that does not wait lets the others past
    env.store.set(f"{tag}/arrived/{env.rank}", "1")
    dist.barrier()
    keys = [f"{tag}/arrived/{r}" for r in range(env.world_size)]
    return {"all_arrived": bool(env.store.check(keys))}


@SUITE.case("barrier", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::barrier",))
def barrier(ctx: CaseContext, dtype: torch.dtype) -> None:
    """No rank leaves barrier() before every rank entered it (the last one enters 0.3 s late)."""
    got = _run(ctx, "barrier", tag=f"barrier-{time.monotonic_ns()}")
    for rank, r in enumerate(got):
        expect(r["all_arrived"], f"rank {rank} left barrier() before every rank had entered it")


def _rank_async_work(env: RankEnv, seed: int) -> dict[str, Any]:
    import torch.distributed as dist

    x = env.to(_data(seed, env.rank))
    gathered = env.to(torch.zeros(N * env.world_size))
    w1 = dist.all_reduce(x, async_op=True)
    w2 = dist.all_gather_into_tensor(gathered, env.to(_data(seed, env.rank) + 1), async_op=True)
    w2.wait()  # in the other order than issued
    w1.wait()
    return {"is_work": all(isinstance(w, dist.Work) for w in (w1, w2)),
            "completed": [w1.is_completed(), w2.is_completed()], "sum": x.cpu(), "gathered": gathered.cpu()}


@SUITE.case("async_work", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::allreduce_", "c10d::_allgather_base_"))
def async_work(ctx: CaseContext, dtype: torch.dtype) -> None:
    """async_op=True returns Work handles; after wait() (in either order) each is completed and the
    results are in place."""
    got = _run(ctx, "async_work")
    world = len(got)
    for rank, r in enumerate(got):
        expect(r["is_work"], f"rank {rank}: async_op=True did not return torch.distributed.Work handles")
        expect(all(r["completed"]), f"rank {rank}: is_completed() is False after wait()", got=r["completed"])
    _per_rank(ctx, [r["sum"] for r in got], sum(_data(ctx.seed, r) for r in range(world)), "async all_reduce")
    _per_rank(ctx, [r["gathered"] for r in got], torch.cat([_data(ctx.seed, r) + 1 for r in range(world)]),
              "async all_gather_into_tensor", "elementwise")


def _rank_objects(env: RankEnv, seed: int) -> dict[str, Any]:
    import torch.distributed as dist

    gathered: list[Any] = [None] * env.world_size
    dist.all_gather_object(gathered, {"rank": env.rank, "name": f"rank-{env.rank}", "items": list(range(env.rank + 2))})
    objects = [{"from": env.rank, "seed": seed}, f"text of rank {env.rank}", (env.rank, 1.5)]
    dist.broadcast_object_list(objects, src=env.world_size - 1)
    return {"gathered": gathered, "broadcast": objects}


@SUITE.case("object_collectives", level=LEVEL, dtypes=F32, requires=DIST,
            ops=("c10d::allgather_", "c10d::broadcast_"))
def object_collectives(ctx: CaseContext, dtype: torch.dtype) -> None:
    """all_gather_object collects every rank's object in rank order; broadcast_object_list copies the
    last rank's list to every rank (pickles of different lengths: the sizes travel first)."""
    got = _run(ctx, "objects")
    world = len(got)
    want_gathered = [{"rank": r, "name": f"rank-{r}", "items": list(range(r + 2))} for r in range(world)]
    src = world - 1
    want_broadcast = [{"from": src, "seed": ctx.seed}, f"text of rank {src}", (src, 1.5)]
    for rank, r in enumerate(got):
        expect(r["gathered"] == want_gathered, f"rank {rank}: all_gather_object's list is wrong",
               got=repr(r["gathered"])[:300], expected=repr(want_gathered)[:300])
        expect(r["broadcast"] == want_broadcast, f"rank {rank}: broadcast_object_list did not copy the last rank's list",
               got=repr(r["broadcast"])[:300], expected=repr(want_broadcast)[:300])


# --- DDP ----------------------------------------------------------------------------------------

BATCH = 4  # per rank


def _model_and_batch(seed: int, world: int) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    x = torch.randn(BATCH * world, 8, generator=g)
    y = torch.randn(BATCH * world, 4, generator=g)
    return model, x, y


def _rank_ddp(env: RankEnv, seed: int) -> list[torch.Tensor]:
    from torch.nn.parallel import DistributedDataParallel

    model, x, y = _model_and_batch(seed, env.world_size)
    ddp = DistributedDataParallel(model.to(env.device))
    rows = slice(env.rank * BATCH, (env.rank + 1) * BATCH)
    F.mse_loss(ddp(env.to(x[rows])), env.to(y[rows])).backward()
    return [p.grad.detach().cpu() for p in ddp.module.parameters()]


@SUITE.case("ddp", level=LEVEL, dtypes=F32, requires=DIST, ops=("c10d::allreduce_", "c10d::broadcast_"))
def ddp(ctx: CaseContext, dtype: torch.dtype) -> None:
    """DistributedDataParallel: after one backward on each rank's quarter of the batch, every rank's
    gradients equal one process's gradients on the whole batch (DDP averages them)."""
    got = _run(ctx, "ddp", timeout=60.0)
    model, x, y = _model_and_batch(ctx.seed, len(got))
    F.mse_loss(model(x), y).backward()
    _per_rank(ctx, got, [p.grad for p in model.parameters()], "DDP gradients vs one process on the whole batch",
              "training")
