"""torch.profiler on the device (level 6): op events by name and order, device kernels, memory events.

Level 6 (integration), beside device_api: the profiler is device runtime, not an operator's value.

- `ops/<program>` (claim `profiler`, float32): a short program of device ops inside a user range
  (`record_function`), profiled with CPU's activity and the device's where PyTorch has one. The
  op events outside any other op event ("top-level": what the program called), in start order, must
  name the same aten ops with the same input shapes as the same program profiled on CPU, each inside
  the user range; the program's values must equal CPU's. Nested events are the backend's business
  (its kernels may call other ops) and are not compared.
- `device/kernels` (claim `profiler_device`): the device's ProfilerActivity is supported, and a
  profiled mm records device-side events of the device type, with device time on aten::mm.
- `memory/alloc_free` (claim `profiler_memory`): with `profile_memory=True`, the op that allocates
  a result is charged at least its bytes on the device, and freeing a tensor records a `[memory]`
  event of at least minus its bytes.

On the host device "cpu" (`--validation`) the CPU activity is the device's: `device/kernels` is
not_applicable there (CPU's ops are their own kernels) and memory is CPU memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from torchcts.cases.api import CaseContext, CaseSet, compat, cpu_reference, expect, synchronize

SUITE = CaseSet("profiler")
cases = SUITE.cases

F32 = ("float32",)
PROFILER = ("profiler",)
RANGE = "torchcts::program"


def _activity_name(device_type: str) -> str | None:
    """The ProfilerActivity (and autograd DeviceType) name of a device type, None for CPU or none."""
    if device_type == "cpu":
        return None
    if device_type in ("cuda", "xpu", "mtia", "hpu"):
        return device_type.upper()
    if device_type == compat.privateuse1_name():
        return "PrivateUse1"
    return None


def _activities(device_type: str) -> list[ProfilerActivity]:
    name = _activity_name(device_type)
    extra = getattr(ProfilerActivity, name, None) if name else None
    return [ProfilerActivity.CPU] + ([extra] if extra is not None and extra in torch.profiler.supported_activities()
                                     else [])


def _top_level(events: Any) -> list[Any]:
    """aten op events with no aten op event around them, in start order (what the program called)."""
    def nested(e: Any) -> bool:
        p = e.cpu_parent
        while p is not None:
            if p.name.startswith("aten::"):
                return True
            p = p.cpu_parent
        return False

    ops = [e for e in events if e.name.startswith("aten::") and e.device_type == torch.autograd.DeviceType.CPU]
    return sorted((e for e in ops if not nested(e)), key=lambda e: e.time_range.start)


def _in_range(e: Any) -> bool:
    p = e.cpu_parent
    while p is not None:
        if p.name == RANGE:
            return True
        p = p.cpu_parent
    return False


# program name -> (inputs' shapes, the program over its inputs); each op is one the user calls
Program = Callable[[list[torch.Tensor]], torch.Tensor]
PROGRAMS: dict[str, tuple[tuple[tuple[int, ...], ...], Program, tuple[str, ...]]] = {
    "pointwise": (((8, 8), (8, 8)), lambda t: torch.relu(torch.add(t[0], t[1]) * t[1]).sum(),
                  ("aten::add.Tensor", "aten::mul.Tensor", "aten::relu", "aten::sum")),
    "matmul": (((8, 16), (16, 4), (4,)), lambda t: torch.addmm(t[2], t[0], t[1]).mm(t[1].t()).neg(),
               ("aten::addmm", "aten::mm", "aten::t", "aten::neg")),
}


def _profiled(device: torch.device, shapes: tuple, program: Program, seed: int) -> tuple[torch.Tensor, list[tuple]]:
    g = torch.Generator().manual_seed(seed)
    inputs = [torch.randn(*s, generator=g).to(device) for s in shapes]
    with profile(activities=_activities(device.type), record_shapes=True) as prof:
        with record_function(RANGE):
            out = program(inputs)
    events = _top_level(prof.events())
    outside = [e.name for e in events if not _in_range(e)]
    expect(not outside, f"op events of the program were recorded outside its record_function range ({device.type})",
           ops=outside)
    return out.cpu(), [(e.name, [list(s) for s in e.input_shapes]) for e in events]


def _member(name: str) -> Callable[[CaseContext, torch.dtype], None]:
    shapes, program, _ = PROGRAMS[name]

    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        """The program's top-level op events: CPU's names, order and input shapes, inside the user range."""
        ref_out, ref = cpu_reference(ctx, lambda: _profiled(torch.device("cpu"), shapes, program, ctx.seed),
                                     f"the '{name}' program profiled")
        out, got = _profiled(ctx.device, shapes, program, ctx.seed)
        ctx.describe(ops=[n for n, _ in got], activities=[str(a) for a in _activities(ctx.device_type)])
        expect(bool(got), "the profile recorded no aten op of the program on the device")
        expect([n for n, _ in got] == [n for n, _ in ref], "the profile's top-level ops differ from the program's "
               "(CPU's profile of the same program)", got=[n for n, _ in got], expected=[n for n, _ in ref])
        expect(got == ref, "the profile's input shapes differ from CPU's", got=got, expected=ref)
        ctx.assert_close(out, ref_out, category="matmul")

    return run


for _name, _entry in PROGRAMS.items():
    SUITE.family(f"ops/{_name}", qualname=f"ops_{_name}", level=6, dtypes=F32, requires=PROFILER,
                 ops=_entry[2])(_member(_name))


@SUITE.case("device/kernels", level=6, dtypes=F32, requires=(*PROFILER, "profiler_device"), ops=("aten::mm",))
def device_kernels(ctx: CaseContext, dtype: torch.dtype) -> None:
    """The device's activity is supported and records device-side events with device time on mm."""
    name = _activity_name(ctx.device_type)
    if name is None:
        ctx.not_applicable(f"'{ctx.device_type}' has no device-side profiler activity (CPU's ops are their own kernels)"
                           if ctx.device_type == "cpu" else f"PyTorch has no ProfilerActivity for '{ctx.device_type}'")
    activity = getattr(ProfilerActivity, name, None)
    expect(activity is not None and activity in torch.profiler.supported_activities(),
           f"ProfilerActivity.{name} is not among torch.profiler.supported_activities() in this build",
           supported=[str(a) for a in torch.profiler.supported_activities()])
    a = torch.randn(128, 128).to(ctx.device)
    with profile(activities=[ProfilerActivity.CPU, activity]) as prof:
        out = a @ a
        synchronize(ctx.device_type)
    kind = getattr(torch.autograd.DeviceType, name)
    device_events = [e for e in prof.events() if e.device_type == kind]
    ctx.describe(device_events=[e.name for e in device_events][:10])
    expect(bool(device_events), f"the profile has no {name} device events for a matmul on the device")
    mm = [e for e in prof.events() if e.name == "aten::mm"]
    expect(bool(mm) and any(e.device_time_total > 0 for e in mm), "aten::mm has no device time (no kernel linked "
           "to the op)", mm_events=len(mm))
    ctx.assert_close(out.cpu(), a.cpu() @ a.cpu(), category="matmul")


def _usage(e: Any, device_type: str) -> int:
    return int(e.cpu_memory_usage if device_type == "cpu" else e.device_memory_usage)


@SUITE.case("memory/alloc_free", level=6, dtypes=F32, requires=(*PROFILER, "profiler_memory"),
            ops=("aten::add.Tensor", "aten::mul.Tensor"))
def memory_alloc_free(ctx: CaseContext, dtype: torch.dtype) -> None:
    """profile_memory charges the allocating op its result's bytes and records the free."""
    a = torch.randn(64, 64).to(ctx.device)
    nbytes = a.numel() * a.element_size()
    with profile(activities=_activities(ctx.device_type), profile_memory=True) as prof:
        kept = a + a
        temp = a * 3
        del temp
    events = prof.events()
    add = [e for e in _top_level(events) if e.name == "aten::add"]
    expect(len(add) == 1, "the profile has not exactly one aten::add", got=len(add))
    charged = _usage(add[0], ctx.device_type)
    frees = [_usage(e, ctx.device_type) for e in events if e.name == "[memory]" and _usage(e, ctx.device_type) < 0]
    ctx.describe(nbytes=nbytes, add_charged=charged, frees=frees)
    expect(charged >= nbytes, "the profile charged aten::add less device memory than its result holds",
           got=charged, expected=f">= {nbytes}")
    expect(any(f <= -nbytes for f in frees), "the profile recorded no free of the deleted tensor's memory",
           frees=frees, expected=f"<= -{nbytes}")
    ctx.assert_close(kept.cpu(), a.cpu() * 2)
