"""Field cases of the memory classes M1-M6 (docs/bug-classes.md): asynchronous copies, out-of-bounds
writes, allocator statistics, events, cached kernels and run-to-run determinism, each the input
situation of one real backend bug report (the `cite=` URL).

An out-of-range index must raise on the device as it does on CPU (the exception type is not compared:
an asynchronous device reports a RuntimeError where CPU raises IndexError, as the errors suite
accepts), and the memory around the target must be unchanged afterwards: the reports' bug is the
write landing outside the tensor, which a raise alone would not show.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

import torch
import torch.nn.functional as F

from torchcts.cases.api import (
    MB,
    CaseContext,
    CaseSet,
    budget_mb,
    compat,
    expect,
    expect_raises,
    on_cpu,
    sample,
    synchronize,
    to_device,
)

SUITE = CaseSet("field")
cases = SUITE.cases
F32 = ("float32",)
ASYNC = 6  # the device runtime around kernels: data_loading's and memory's level
ERRORS = 3  # out-of-range indices: the errors suite's level


def _device_module(ctx: CaseContext, *names: str):  # noqa: ANN202 - torch.<device>
    """torch.<device> when it has every named function, else not_applicable."""
    mod = compat.device_module(ctx.device_type)
    missing = [n for n in names if mod is None or not callable(getattr(mod, n, None))]
    if missing:
        ctx.not_applicable(f"torch.{ctx.device_type} has no {', '.join(missing)}")
    return mod


# ---- M1: async (non_blocking) copies unordered --------------------------------------------------

@SUITE.case("M1/pytorch-pytorch-139550", level=ASYNC, dtypes=("int64", "float32"), requires=("device_api",),
            ops=("aten::_to_copy", "aten::clone"), cite="https://github.com/pytorch/pytorch/issues/139550")
def non_blocking_to_device(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `a.to("mps", non_blocking=True)` of tensor([0..9]) had random values here and there (element 0
    was 6, the last one garbage), where a blocking copy of a clone was right."""
    a = on_cpu(lambda: torch.arange(10).to(dtype))
    blocking = a.clone().to(ctx.device, copy=True)
    fast = a.to(ctx.device, non_blocking=True, copy=True)
    synchronize(ctx.device_type)
    expect(torch.equal(fast.cpu(), a), "a non_blocking copy to the device has wrong values",
           got=fast.cpu().tolist(), expected=a.tolist())
    expect(torch.equal(blocking.cpu(), a), "a blocking copy to the device has wrong values", got=blocking.cpu().tolist())


@SUITE.case("M1/pytorch-pytorch-189690", level=ASYNC, dtypes=F32, requires=("device_api",), ops=("aten::_to_copy", "aten::cat"),
            cite="https://github.com/pytorch/pytorch/issues/189690")
def non_blocking_source_released(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS non_blocking CPU-to-MPS copies read the pageable source after it was released: three scalar
    sources, each replaced by the next before any synchronize, then cat on the device ([0.392, -3e32,
    0.392] for [1.541, 0.661, 0.392])."""
    def make(i: int) -> torch.Tensor:
        return torch.randn(1, generator=torch.Generator().manual_seed(ctx.seed + i)).to(dtype)
    expected = on_cpu(lambda: torch.cat([make(i) for i in range(3)]))
    for eager in (False, True):
        outs = []
        for i in range(3):
            src = make(i)  # pageable; the name is rebound next iteration, freeing the previous source
            dev = src.to(ctx.device, non_blocking=True)
            outs.append(dev.cpu() if eager else dev)
            del src  # the last reference: the pageable memory goes back to the allocator now
        got = torch.cat(outs) if eager else torch.cat(outs).cpu()
        expect(torch.equal(got, expected), "non_blocking copies of released pageable sources have wrong values",
               eager=eager, got=got.tolist(), expected=expected.tolist())


@SUITE.case("M1/pytorch-pytorch-122016", level=ASYNC, dtypes=("float32", "int64"), requires=("device_api",),
            ops=("aten::fill_.Scalar", "aten::copy_"), cite="https://github.com/pytorch/pytorch/issues/122016")
def consecutive_element_writes(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS device-to-device copies were encoded without a sync: `x[1] = 1; x[2] = 3` on zeros(3) gave
    [0, 3, 3] (macOS 14.4); scalar and 0-dim tensor values, written one after another."""
    (x,) = to_device(ctx, torch.zeros(3, dtype=dtype))
    x[1] = 1
    x[2] = 3
    expect(x.cpu().tolist() == [0, 1, 3], "x[1] = 1; x[2] = 3 on zeros(3) is not [0, 1, 3]", got=x.cpu().tolist())
    (y,) = to_device(ctx, torch.zeros(4, dtype=dtype))
    values = to_device(ctx, *(torch.tensor(v, dtype=dtype) for v in (5, 6, 7)))
    for i, v in enumerate(values):
        y[i + 1] = v
    expect(y.cpu().tolist() == [0, 5, 6, 7], "0-dim device values written one after another landed wrong",
           got=y.cpu().tolist())


# ---- M2: out-of-bounds writes -------------------------------------------------------------------

def _raises_and_untouched(ctx: CaseContext, fn: Callable[[torch.Tensor, str], object], size: int, what: str) -> None:
    """fn(storage, device) writes out of range through a view of `storage`: CPU raises, the device
    must raise too (any exception) and leave every element of the storage as it was."""
    base = torch.arange(size, dtype=torch.float32)
    expect_raises(lambda: fn(base.clone(), "cpu"), f"CPU reference: {what}")
    (storage,) = to_device(ctx, base)
    expect_raises(lambda: fn(storage, ctx.device), what)
    got = storage.cpu()
    changed = (got != base).nonzero().reshape(-1).tolist()
    expect(not changed, f"{what} changed memory outside the tensor", changed_positions=changed[:8],
           values=got[changed[:8]].tolist() if changed else [])


@SUITE.case("M2/pytorch-pytorch-189968", level=ERRORS, ops=("aten::index_copy_",),
            cite="https://github.com/pytorch/pytorch/issues/189968")
def index_copy_out_of_range(ctx: CaseContext) -> None:
    """MPS index_copy_ did not validate indices: on storage[:5], index 8 wrote storage[8]; on
    storage[8:13], index -1 wrote storage[7]. Both must raise and leave the storage unchanged."""
    def past(s: torch.Tensor, dev: str) -> object:
        return s[:5].index_copy_(0, torch.tensor([8], device=dev), torch.tensor([999.0], device=dev))

    def before(s: torch.Tensor, dev: str) -> object:
        return s[8:13].index_copy_(0, torch.tensor([-1], device=dev), torch.tensor([555.0], device=dev))
    _raises_and_untouched(ctx, past, 64, "index_copy_ at index 8 of a 5-element view")
    _raises_and_untouched(ctx, before, 64, "index_copy_ at index -1 of a 5-element view")


@SUITE.case("M2/pytorch-pytorch-111669", level=ERRORS, ops=("aten::index_put_",),
            cite="https://github.com/pytorch/pytorch/issues/111669")
def index_put_past_view(ctx: CaseContext) -> None:
    """MPS `y = x[:2]; y[torch.tensor([3])] = -1` wrote x[3] instead of raising IndexError."""
    def write(s: torch.Tensor, dev: str) -> object:
        y = s[:2]
        y[torch.tensor([3], device=dev)] = -1
        return s
    _raises_and_untouched(ctx, write, 4, "y[tensor([3])] = -1 on a 2-element view")


@SUITE.case("M2/pytorch-pytorch-189970", level=ERRORS, ops=("aten::index_reduce_",),
            cite="https://github.com/pytorch/pytorch/issues/189970")
def index_reduce_out_of_range(ctx: CaseContext) -> None:
    """MPS index_reduce_ never validated indices (`uint32(index) * stride`): index 11 on storage[:5]
    atomically wrote storage[11]; a negative index wraps to a huge offset."""
    def reduce(index: int) -> Callable[[torch.Tensor, str], object]:
        return lambda s, dev: s[:5].index_reduce_(0, torch.tensor([index], device=dev),
                                                  torch.tensor([88.0], device=dev), "amax", include_self=True)
    _raises_and_untouched(ctx, reduce(11), 64, "index_reduce_ at index 11 of a 5-element view")
    _raises_and_untouched(ctx, reduce(-7), 64, "index_reduce_ at index -7 of a 5-element view")


# ---- M3: memory statistics ----------------------------------------------------------------------

@SUITE.case("M3/pytorch-pytorch-171451", level=ASYNC, requires=("device_api",), ops=("aten::empty.memory_format",),
            cite="https://github.com/pytorch/pytorch/issues/171451")
def memory_allocated_not_doubled(ctx: CaseContext) -> None:
    """torch.xpu.memory_allocated() reported double the live bytes: a tensor of N bytes grows it by N
    (rounded up to the allocator's block, at most 2 MB or 1/8 more), not 2N."""
    mod = _device_module(ctx, "memory_allocated")  # the wait below: torch.accelerator's where the module has none
    nbytes = int(budget_mb(ctx, 8.0) * MB) // 4 * 4
    if nbytes < 1 << 20:
        ctx.not_applicable(f"resource_limits leave under 1 MB per tensor ({ctx.manifest.resource_limits})")
    gc.collect()
    synchronize(ctx.device_type)
    before = mod.memory_allocated(ctx.device)
    t = torch.empty(nbytes // 4, dtype=torch.float32, device=ctx.device)
    grew = mod.memory_allocated(ctx.device) - before
    del t
    ctx.describe(bytes=nbytes, grew=grew)
    expect(nbytes <= grew <= nbytes + max(2 * MB, nbytes // 8),
           "memory_allocated grew by other than the tensor's size (rounded to a block)", grew=grew, size=nbytes)


# ---- M4: streams and events ---------------------------------------------------------------------

@SUITE.case("M4/pytorch-pytorch-196395", level=ASYNC, requires=("device_api", "events"), ops=("aten::mm",),
            cite="https://github.com/pytorch/pytorch/issues/196395")
def event_intervals_ordered(ctx: CaseContext) -> None:
    """MPS event synchronize() then elapsed_time() could hang, and short intervals came out reversed:
    three timing events around two short pieces of work; each interval is non-negative and the whole
    one is at least as long as its first part."""
    mod = _device_module(ctx, "Event", "synchronize")
    try:
        a, b, c = (mod.Event(enable_timing=True) for _ in range(3))
    except TypeError:
        ctx.not_applicable(f"torch.{ctx.device_type}.Event takes no enable_timing: its events cannot be timed")
    (x,) = to_device(ctx, sample((64, 64), torch.float32, ctx.seed))
    a.record()
    y = x @ x
    b.record()
    z = y @ x
    c.record()
    c.synchronize()
    ab, bc, ac = a.elapsed_time(b), b.elapsed_time(c), a.elapsed_time(c)
    ctx.describe(ab_ms=ab, bc_ms=bc, ac_ms=ac)
    expect(min(ab, bc, ac) >= 0.0, "an elapsed_time between events recorded in order is negative", ab=ab, bc=bc, ac=ac)
    expect(ac + 1e-3 >= ab, "the whole interval is shorter than its first part", ab=ab, ac=ac)
    ctx.assert_close(z.cpu(), on_cpu(lambda: (x.cpu() @ x.cpu()) @ x.cpu()), category="matmul")


# ---- M5: stale cached kernels or graphs ---------------------------------------------------------

@SUITE.case("M5/kulinseth-pytorch-109", level=ERRORS, dtypes=F32, ops=("aten::as_strided", "aten::clone"),
            cite="https://github.com/kulinseth/pytorch/pull/109")
def as_strided_same_size_other_strides(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS cached as_strided's graph keyed without the strides and storage offset: the same base and
    size viewed with other strides and offsets, one after another, each materialized against CPU's."""
    base = sample((64,), dtype, ctx.seed)
    (dev,) = to_device(ctx, base)
    for stride, offset in (((4, 1), 0), ((1, 4), 0), ((4, 1), 3), ((8, 2), 1), ((4, 1), 0), ((0, 1), 7)):
        ctx.describe(stride=list(stride), offset=offset)
        ctx.assert_close(dev.as_strided((3, 4), stride, offset).clone(), base.as_strided((3, 4), stride, offset).clone())


@SUITE.case("M5/pytorch-pytorch-187327", level=ERRORS, dtypes=F32,
            ops=("aten::add.Tensor", "aten::mul.Tensor", "aten::sub.Tensor", "aten::div.Tensor"),
            cite="https://github.com/pytorch/pytorch/pull/187327")
def interleaved_ops_same_shape(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS graph and kernel caches were keyed on a hash, so two ops could collide and silently get each
    other's graph (pytorch/pytorch#77176): four binary ops, the same shapes and dtypes, interleaved with
    broadcast and dtype variants, each result against CPU's."""
    a, b = sample((7, 9), dtype, ctx.seed), sample((7, 9), dtype, ctx.seed + 1).abs() + 1
    da, db = to_device(ctx, a, b)
    ops = (torch.add, torch.mul, torch.sub, torch.div)
    for round_ in range(2):
        for op in ops:
            ctx.describe(op=op.__name__, round=round_)
            ctx.assert_close(op(da, db), op(a, b))
            ctx.assert_close(op(da, db[:1]), op(a, b[:1]))
            ctx.assert_close(op(da.double(), db.double()), op(a.double(), b.double()))


@SUITE.case("M5/tenstorrent-tt-metal-53963", level=ERRORS, dtypes=F32,
            ops=("aten::exp.out", "aten::sqrt.out", "aten::sigmoid.out", "aten::tanh.out", "aten::reciprocal.out",
                 "aten::rsqrt.out"),
            cite="https://github.com/tenstorrent/tt-metal/issues/53963")
def unary_out_dtype_cache(ctx: CaseContext, dtype: torch.dtype) -> None:
    """tt-metal's unary program cache key omitted the preallocated output's dtype: neg of float32 1.5
    into a float32 out, then into a bfloat16 out, was served the first packer (512 of 1024 zeros; the
    other order gave -1.50585). Six of the report's twelve ops (those whose out may have another dtype
    in PyTorch: neg's and abs's must match), float32 into float32 and bfloat16 outs in both orders."""
    x = on_cpu(lambda: sample((32, 32), dtype, ctx.seed).abs() + 1.5)
    (dx,) = to_device(ctx, x)
    for name in ("exp", "sqrt", "sigmoid", "tanh", "reciprocal", "rsqrt"):
        op = getattr(torch, name)
        for outs in ((torch.float32, torch.bfloat16), (torch.bfloat16, torch.float32)):
            for out_dtype in outs:
                ctx.describe(op=name, order=[str(d) for d in outs], out_dtype=str(out_dtype))
                got = op(dx, out=torch.empty(32, 32, dtype=out_dtype, device=ctx.device))
                ctx.assert_close(got, on_cpu(lambda o=op, d=out_dtype: o(x, out=torch.empty(32, 32, dtype=d))))


@SUITE.case("M5/tenstorrent-tt-metal-17975", level=ERRORS, dtypes=("bfloat16", "float32"), ops=("aten::add.Tensor",),
            cite="https://github.com/tenstorrent/tt-metal/issues/17975")
def broadcast_add_cached(ctx: CaseContext, dtype: torch.dtype) -> None:
    """tt-metal: with the program cache on, `x + y` of zeros (64, 1, 256, 384) and a broadcast
    (1, 1, 256, 384) y, repeated in a loop, gave slices other than y (cache off was right): the same add
    on fresh tensors twice (the second served from a cache); each of the 64 slices must be y exactly."""
    y = sample((1, 1, 256, 384), dtype, ctx.seed)
    for step in range(2):
        dx, dy = to_device(ctx, torch.zeros(64, 1, 256, 384, dtype=dtype), y)
        z = (dx + dy).cpu()
        wrong = [i for i in range(64) if not torch.equal(z[i:i + 1], y)]
        expect(not wrong, "slices of zeros + a broadcast y differ from y", step=step, wrong_slices=wrong[:8])


# ---- M6: run-to-run nondeterminism --------------------------------------------------------------

@SUITE.case("M6/huggingface-transformers-30774", level=4, dtypes=F32, requires=("deterministic",),
            ops=("aten::linear", "aten::addmm"), cite="https://github.com/huggingface/transformers/pull/30774")
def linear_repeatable_deterministic(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU nn.Linear(768, 768) of the same (768, 768) input twice gave results differing in the last bits
    (oneDNN is not deterministic by default), failing model tests that compare two runs; with
    torch.use_deterministic_algorithms(True) they must be bit-identical: three runs, and close to CPU."""
    x, b = sample((768, 768), dtype, ctx.seed), sample((768,), dtype, ctx.seed + 2)
    w = on_cpu(lambda: sample((768, 768), dtype, ctx.seed + 1) / 32)
    expected = on_cpu(F.linear, x, w, b)
    dx, dw, db = to_device(ctx, x, w, b)
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        runs = [F.linear(dx, dw, db).cpu() for _ in range(3)]
    finally:
        torch.use_deterministic_algorithms(previous)
    for i, run in enumerate(runs[1:], start=2):
        diff = float((run - runs[0]).abs().max())
        expect(diff == 0.0, f"nn.Linear run {i} differs from run 1 with deterministic algorithms on", max_difference=diff)
    ctx.assert_close(runs[0], expected, category="matmul")
