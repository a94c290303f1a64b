"""Level 6 memory: allocator statistics, empty_cache, no stale data between allocations, recoverable OOM.

Nothing here allocates beyond the manifest's resource_limits: sizes are capped by max_tensor_mb and
max_device_memory_mb, and the out-of-memory probe asks for an impossible size (2**62 bytes) that
an allocator refuses at once instead of exhausting the device.
"""

from __future__ import annotations

import gc

import torch

from torchcts.cases.api import MB, CaseContext, CaseSet, budget_mb, compat, expect, first_line, synchronize

SUITE = CaseSet("memory")
cases = SUITE.cases

IMPOSSIBLE_BYTES = 1 << 62


def stats_module(ctx: CaseContext, *names: str):  # torch.<dev> with the named functions
    """torch.<dev> when it reports every named statistic, else not_applicable."""
    mod = compat.device_module(ctx.device_type)
    missing = [n for n in names if mod is None or not callable(getattr(mod, n, None))]
    if missing:
        ctx.not_applicable(f"torch.{ctx.device_type} reports no {', '.join(missing)}")
    return mod


def _alloc_bytes(ctx: CaseContext) -> int:
    nbytes = int(budget_mb(ctx) * MB) // 4 * 4
    if nbytes < 4 * 1024:
        ctx.not_applicable(f"resource_limits leave under 4 KiB per tensor ({ctx.manifest.resource_limits})")
    return nbytes


@SUITE.case("stats/alloc_free", level=6, ops=("aten::empty.memory_format",), oracle="property:memory")
def alloc_free(ctx: CaseContext) -> None:
    """memory_allocated grows by at least the tensor's size and returns to its value after del."""
    mod = stats_module(ctx, "memory_allocated")  # a device module without synchronize (OpenReg): torch.accelerator's
    nbytes = _alloc_bytes(ctx)
    gc.collect()  # garbage an earlier case left in this worker must not be freed between before and after
    synchronize(ctx.device_type)
    before = mod.memory_allocated(ctx.device)
    t = torch.empty(nbytes // 4, dtype=torch.float32, device=ctx.device)
    during = mod.memory_allocated(ctx.device)
    del t
    gc.collect()
    synchronize(ctx.device_type)
    after = mod.memory_allocated(ctx.device)
    ctx.describe(bytes=nbytes, before=before, during=during, after=after)
    expect(during - before >= nbytes, "memory_allocated did not grow by the tensor's size", grew=during - before, size=nbytes)
    expect(after == before, "memory_allocated did not return to its value after the tensor was freed")


@SUITE.case("stats/peak", level=6, oracle="property:memory")
def peak(ctx: CaseContext) -> None:
    """max_memory_allocated remembers a freed tensor until reset_peak_memory_stats."""
    mod = stats_module(ctx, "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats")
    nbytes = _alloc_bytes(ctx)
    mod.reset_peak_memory_stats(ctx.device)
    base = mod.memory_allocated(ctx.device)
    t = torch.empty(nbytes // 4, dtype=torch.float32, device=ctx.device)
    del t
    gc.collect()
    peak_after = mod.max_memory_allocated(ctx.device)
    expect(peak_after - base >= nbytes, "max_memory_allocated forgot a freed tensor", peak=peak_after, base=base)
    mod.reset_peak_memory_stats(ctx.device)
    expect(mod.max_memory_allocated(ctx.device) < base + nbytes, "reset_peak_memory_stats did not reset the peak")


@SUITE.case("stats/empty_cache", level=6, oracle="property:memory")
def empty_cache(ctx: CaseContext) -> None:
    """After freeing a tensor, empty_cache does not increase reserved memory and the device still works."""
    mod = stats_module(ctx, "empty_cache", "memory_reserved")
    nbytes = _alloc_bytes(ctx)
    t = torch.ones(nbytes // 4, dtype=torch.float32, device=ctx.device)
    del t
    gc.collect()
    held = mod.memory_reserved(ctx.device)
    mod.empty_cache()
    released = mod.memory_reserved(ctx.device)
    ctx.describe(reserved_before=held, reserved_after=released)
    expect(released <= held, "empty_cache increased reserved memory", before=held, after=released)
    ctx.assert_close(torch.arange(5, device=ctx.device).cpu(), torch.arange(5))


@SUITE.case("alloc/reuse", level=6, ops=("aten::fill_", "aten::empty.memory_format"), oracle="property:memory")
def reuse(ctx: CaseContext) -> None:
    """Allocate, fill and free repeatedly: every live tensor keeps its own value while others come and go."""
    n = max(1, int(budget_mb(ctx, 1.0) * MB) // 4 // 8)
    live = []
    for i in range(32):
        live.append(torch.full((n,), float(i), device=ctx.device))
        if i % 3 == 2:
            live.pop(0)
    for t in live:
        first = float(t[0])
        ctx.assert_close(t.cpu(), torch.full((n,), first))
    values = sorted(float(t[0]) for t in live)
    expect(values == sorted({*values}), "two live tensors share storage", values=values)


@SUITE.case("stale/fill_uninitialized", level=6, requires=("deterministic",), ops=("aten::empty.memory_format",),
            oracle="property:memory", params={"float32": {"dtype_name": "float32"}, "int32": {"dtype_name": "int32"}})
def fill_uninitialized(ctx: CaseContext, dtype_name: str) -> None:
    """With fill_uninitialized_memory, torch.empty never shows the previous tensor's data (NaN / max int)."""
    dtype = getattr(torch, dtype_name)
    n = max(1, int(budget_mb(ctx, 0.25) * MB) // 4)
    with compat.deterministic_fill():
        for attempt in range(3):
            secret = torch.full((n,), 7, dtype=dtype, device=ctx.device)
            del secret
            fresh = torch.empty(n, dtype=dtype, device=ctx.device).cpu()
            if dtype.is_floating_point:
                ok = bool(torch.isnan(fresh).all())
            else:
                ok = bool((fresh == torch.iinfo(dtype).max).all())
            expect(ok, "torch.empty returned memory not filled as fill_uninitialized_memory promises",
                   attempt=attempt, leaked_previous=bool((fresh == 7).any()))


@SUITE.case("oom/recoverable", level=6, ops=("aten::empty.memory_format",), oracle="property:memory")
def oom_recoverable(ctx: CaseContext) -> None:
    """An impossible allocation raises a catchable RuntimeError; afterwards the device computes correctly."""
    mod = compat.device_module(ctx.device_type)
    has_stats = mod is not None and callable(getattr(mod, "memory_allocated", None))
    before = mod.memory_allocated(ctx.device) if has_stats else None
    big = None
    try:
        big = torch.empty(IMPOSSIBLE_BYTES, dtype=torch.uint8, device=ctx.device)
    except RuntimeError as exc:  # torch.OutOfMemoryError is a RuntimeError
        ctx.describe(error=f"{type(exc).__name__}: {first_line(exc, 200)}")
    if big is not None:
        size = big.numel()
        del big
        expect(False, "an allocation of 2**62 bytes did not raise", got_numel=size)
    if has_stats:
        expect(mod.memory_allocated(ctx.device) == before, "a failed allocation left memory allocated")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    ctx.assert_close((x.to(ctx.device) @ x.to(ctx.device).T).cpu(), x @ x.T, category="matmul")


@SUITE.case("oom/allocator_limit", level=6, ops=("aten::empty.memory_format",), oracle="property:memory")
def oom_at_allocator_limit(ctx: CaseContext) -> None:
    """A real OOM inside the manifest's limit: cap the allocator at max_device_memory_mb, ask for more.

    The allocator refuses before touching the device, so nothing beyond the limit is ever allocated.
    """
    mod = stats_module(ctx, "set_per_process_memory_fraction", "mem_get_info", "empty_cache")
    limit_mb = ctx.manifest.resource_limits.get("max_device_memory_mb")
    if not limit_mb:
        ctx.not_applicable("resource_limits sets no max_device_memory_mb: no safe size for a real OOM probe")
    _, total = mod.mem_get_info(ctx.device)
    fraction = limit_mb * MB / total
    if not 0 < fraction < 1:
        ctx.not_applicable(f"max_device_memory_mb ({limit_mb}) is not below the device's memory ({total // MB} MB)")
    ctx.describe(limit_mb=limit_mb, total_mb=total // MB, fraction=fraction)
    mod.set_per_process_memory_fraction(fraction, ctx.device)
    try:
        raised = False
        try:
            torch.empty(int(limit_mb * MB) + MB, dtype=torch.uint8, device=ctx.device)
        except RuntimeError:
            raised = True
        expect(raised, "an allocation above the allocator's memory fraction did not raise")
    finally:
        mod.set_per_process_memory_fraction(1.0, ctx.device)
        mod.empty_cache()
    with ctx.helper_op("aten::mul.Tensor"):  # the device still computes: reported against mul, not the allocator
        ctx.assert_close((torch.ones(3, device=ctx.device) * 2).cpu(), torch.full((3,), 2.0))
