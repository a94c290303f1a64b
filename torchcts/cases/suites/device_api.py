"""Level 6 device API: the torch.<device> module, device guards, streams, events, torch.accelerator.

These are property checks (oracle "property:..."): the API answers consistently with itself, with
the manifest and with where tensors land. On cpu, torch.cpu implements the module functions as
documented single-device stubs; cases that would only exercise a no-op report not_applicable.
"""

from __future__ import annotations

import inspect

import torch

from torchcts.cases.api import CaseContext, CaseSet, compat, expect

SUITE = CaseSet("device_api")
cases = SUITE.cases

API = ("device_api",)


def device_mod(ctx: CaseContext):  # the torch.<device> module
    mod = compat.device_module(ctx.device_type)
    expect(mod is not None, f"torch.{ctx.device_type} does not exist or has no is_available()")
    return mod


def _work(ctx: CaseContext, n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """A matmul chain on the device and its CPU result, to give streams something to order."""
    g = torch.Generator().manual_seed(ctx.seed)
    a = torch.randn(n, n, generator=g) / n**0.5
    expected = a
    for _ in range(4):
        expected = expected @ a
    return a.to(ctx.device), expected


def _chain(a: torch.Tensor) -> torch.Tensor:
    out = a
    for _ in range(4):
        out = out @ a
    return out


@SUITE.case("module/is_available", level=6, requires=API, oracle="property:device_api")
def is_available(ctx: CaseContext) -> None:
    expect(device_mod(ctx).is_available() is True, f"torch.{ctx.device_type}.is_available() is not True")


@SUITE.case("module/device_count", level=6, requires=API, oracle="property:device_api")
def device_count(ctx: CaseContext) -> None:
    count = device_mod(ctx).device_count()
    ctx.describe(device_count=count, manifest_device_count=ctx.manifest.device_count)
    expect(isinstance(count, int) and count >= 1, f"torch.{ctx.device_type}.device_count() is not a positive int", got=count)
    expect(count >= ctx.manifest.device_count, "fewer devices than the manifest's device_count",
           got=count, claimed=ctx.manifest.device_count)
    if ctx.device_type != "cpu":  # every index it reports must exist: over-reporting breaks data-parallel code
        for idx in range(count):
            ctx.describe(index=idx)
            t = torch.empty(1, device=torch.device(ctx.device_type, idx))
            expect(t.device.index == idx, "a tensor on an index device_count() reports landed elsewhere", got=str(t.device))


@SUITE.case("module/current_device", level=6, requires=API, oracle="property:device_api")
def current_device(ctx: CaseContext) -> None:
    mod = device_mod(ctx)
    cur = mod.current_device()
    ctx.describe(current_device=str(cur))
    if ctx.device_type == "cpu":
        expect(cur == "cpu", "torch.cpu.current_device() is documented to return 'cpu'", got=cur)
        return
    expect(isinstance(cur, int) and 0 <= cur < mod.device_count(), "current_device() is not a valid index", got=cur)
    t = torch.empty(1, device=ctx.device_type)
    expect(t.device.index == cur, "a tensor on the bare device type did not land on current_device()",
           got=t.device.index, expected=cur)


def _not_on_cpu(ctx: CaseContext, what: str) -> None:
    if ctx.device_type == "cpu":
        ctx.not_applicable(f"cpu has one device: {what} is a documented no-op on torch.cpu")


@SUITE.case("module/set_device", level=6, requires=API, oracle="property:device_api")
def set_device(ctx: CaseContext) -> None:
    _not_on_cpu(ctx, "set_device")
    mod = device_mod(ctx)
    before = mod.current_device()
    try:
        for idx in range(min(mod.device_count(), 2)):
            mod.set_device(idx)
            expect(mod.current_device() == idx, "set_device(i) did not make i current", index=idx, got=mod.current_device())
            t = torch.ones(2, device=ctx.device_type)
            expect(t.device.index == idx, "a tensor on the bare device type ignored set_device", index=idx)
    finally:
        mod.set_device(before)


@SUITE.case("guard/device_context", level=6, requires=API, oracle="property:device_api")
def device_context(ctx: CaseContext) -> None:
    """torch.<dev>.device(i) makes i current inside and restores the previous device on exit."""
    _not_on_cpu(ctx, "the device context manager")
    mod = device_mod(ctx)
    expect(hasattr(mod, "device"), f"torch.{ctx.device_type} has no device context manager")
    before = mod.current_device()
    target = mod.device_count() - 1
    with mod.device(target):
        expect(mod.current_device() == target, "inside torch.<dev>.device(i) the current device is not i",
               got=mod.current_device(), expected=target)
    expect(mod.current_device() == before, "the device context manager did not restore the current device")


@SUITE.case("guard/default_device", level=6, requires=API, ops=("aten::empty.memory_format",), oracle="property:device_api")
def default_device(ctx: CaseContext) -> None:
    """`with torch.device(dev):` sends factory calls to the device, and only inside the block."""
    with torch.device(ctx.device):
        inside = torch.zeros(3)
    expect(inside.device.type == ctx.device_type, "a factory inside `with torch.device(...)` ignored it", got=str(inside.device))
    expect(torch.zeros(3).device.type == "cpu", "the default device leaked out of `with torch.device(...)`")


@SUITE.case("module/synchronize", level=6, requires=API, ops=("aten::mm",), oracle="cpu")
def synchronize(ctx: CaseContext) -> None:
    mod = device_mod(ctx)
    a, expected = _work(ctx)
    out = _chain(a)
    mod.synchronize()
    mod.synchronize(ctx.device)
    ctx.assert_close(out.cpu(), expected, category="matmul")


@SUITE.case("streams/current_stream", level=6, requires=(*API, "streams"), oracle="property:device_api")
def current_stream(ctx: CaseContext) -> None:
    """A new stream becomes current inside torch.<dev>.stream(s) and the previous one returns after."""
    mod = device_mod(ctx)
    before = mod.current_stream()
    side = mod.Stream()
    with mod.stream(side):
        expect(mod.current_stream() == side, "inside torch.<dev>.stream(s) the current stream is not s")
    expect(mod.current_stream() == before, "the stream context manager did not restore the current stream")


@SUITE.case("streams/ordering", level=6, requires=(*API, "streams", "events"), ops=("aten::mm", "aten::add"),
            params={"wait_event": {"sync": "event"}, "wait_stream": {"sync": "stream"}})
def stream_ordering(ctx: CaseContext, sync: str) -> None:
    """Work on stream 2 that waits for stream 1 (by event or wait_stream) sees stream 1's result."""
    mod = device_mod(ctx)
    a, expected = _work(ctx, n=256)
    s1, s2 = mod.Stream(), mod.Stream()
    s1.wait_stream(mod.current_stream())  # `a` was produced on the current stream
    with mod.stream(s1):
        x = _chain(a)
        done = mod.Event()
        done.record(s1)
    if sync == "event":
        s2.wait_event(done)
    else:
        s2.wait_stream(s1)
    with mod.stream(s2):
        y = x + 1
    mod.synchronize()
    ctx.assert_close(y.cpu(), expected + 1, category="matmul")


@SUITE.case("events/query", level=6, requires=(*API, "events"), ops=("aten::mm",), oracle="property:device_api")
def event_query(ctx: CaseContext) -> None:
    """A recorded event completes: query() is True after synchronize(), and the work it follows is done."""
    mod = device_mod(ctx)
    done = mod.Event()
    a, expected = _work(ctx)
    out = _chain(a)
    done.record()
    done.synchronize()
    expect(done.query() is True, "event.query() is not True after event.synchronize()")
    ctx.assert_close(out.cpu(), expected, category="matmul")


def _timing_event(ctx: CaseContext, mod) -> object:  # mod: the torch.<device> module
    """An event with timing, or not_applicable when the device type's Event API has no timing flag
    (torch.cpu.Event takes no arguments); an Event that offers the flag and then fails is an error."""
    try:
        return mod.Event(enable_timing=True)
    except TypeError as exc:
        try:
            params = inspect.signature(mod.Event).parameters.values()
        except (TypeError, ValueError):
            raise exc from None
        if not any(p.name == "enable_timing" or p.kind is p.VAR_KEYWORD for p in params):
            ctx.not_applicable(f"torch.{ctx.device_type}.Event has no enable_timing: events of this device type "
                               f"cannot be timed ({exc})")
        raise


@SUITE.case("events/elapsed_time", level=6, requires=(*API, "events"), ops=("aten::mm",), oracle="property:device_api")
def event_timing(ctx: CaseContext) -> None:
    """Two timing events around device work give a non-negative elapsed time."""
    mod = device_mod(ctx)
    start, end = _timing_event(ctx, mod), _timing_event(ctx, mod)
    a, expected = _work(ctx)
    start.record()
    out = _chain(a)
    end.record()
    end.synchronize()
    expect(end.query() is True, "event.query() is not True after event.synchronize()")
    ms = start.elapsed_time(end)
    ctx.describe(elapsed_ms=ms)
    expect(isinstance(ms, float) and ms >= 0.0, "elapsed_time is not a non-negative float", got=ms)
    ctx.assert_close(out.cpu(), expected, category="matmul")


def _accelerator(ctx: CaseContext):  # torch.accelerator, or not_applicable
    acc = torch.accelerator
    current = acc.current_accelerator() if acc.is_available() else None
    if current is None or current.type != ctx.device_type:
        ctx.not_applicable(f"'{ctx.device_type}' is not the torch.accelerator device of this process (found {current})")
    return acc


@SUITE.case("accelerator/consistency", level=6, requires=API, oracle="property:device_api")
def accelerator_consistency(ctx: CaseContext) -> None:
    """torch.accelerator agrees with torch.<dev> on count and current index, and synchronizes."""
    acc, mod = _accelerator(ctx), device_mod(ctx)
    expect(acc.device_count() == mod.device_count(), "torch.accelerator.device_count() disagrees with the device module",
           accelerator=acc.device_count(), module=mod.device_count())
    expect(acc.current_device_index() == mod.current_device(), "torch.accelerator.current_device_index() disagrees")
    a, expected = _work(ctx)
    out = _chain(a)
    acc.synchronize()
    ctx.assert_close(out.cpu(), expected, category="matmul")


@SUITE.case("accelerator/set_device_index", level=6, requires=API, oracle="property:device_api")
def accelerator_set_index(ctx: CaseContext) -> None:
    acc = _accelerator(ctx)
    before = acc.current_device_index()
    target = acc.device_count() - 1
    try:
        acc.set_device_index(target)
        expect(acc.current_device_index() == target, "set_device_index(i) did not make i current")
    finally:
        acc.set_device_index(before)
