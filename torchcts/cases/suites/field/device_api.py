"""Field cases of the device-API and profiler classes (docs/bug-classes.md X1, X2): integer
devices and the current device, and the device type the profiler gives device events.

Level 6 (integration), as the device_api and profiler suites. On the host device "cpu"
(`--validation`) there is no accelerator for an integer device to mean and no device-side event:
those cases are not_applicable there.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, compat, expect, synchronize
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases


@SUITE.case("X1/Ascend-pytorch-16", level=6, requires=("device_api",), ops=("aten::_to_copy", "aten::empty.memory_format"),
            cite=GH + "Ascend/pytorch/issues/16")
def integer_device_is_the_accelerator(ctx: CaseContext) -> None:
    """torch_npu: torch.ones(2).to(0) went to CUDA's lazy init ("Torch not compiled with CUDA
    enabled"). An integer device means index 0 of the current accelerator: `.to(0)`, `device=0` of a
    factory and `torch.device(0)` must all land on the device under test."""
    if ctx.device_type == "cpu":
        ctx.not_applicable("an integer device names an accelerator's index; the device under test is the host")
    accelerator = getattr(torch, "accelerator", None)
    current = accelerator.current_accelerator() if accelerator is not None else None
    expect(current is not None and current.type == ctx.device_type,
           "torch.accelerator.current_accelerator() is not the device under test",
           got=str(current), expected=ctx.device_type)
    moved = torch.ones(2).to(0)
    made = torch.empty(2, device=0)
    named = torch.device(0)
    for what, dev in (("torch.ones(2).to(0)", moved.device), ("torch.empty(2, device=0)", made.device),
                      ("torch.device(0)", named)):
        expect(dev.type == ctx.device_type and dev.index in (0, None), f"{what} is not on {ctx.device_type}:0",
               got=str(dev))
    expect(torch.equal(moved.cpu(), torch.ones(2)), "torch.ones(2).to(0) changed the values", got=moved.cpu().tolist())


def _device_type_name(device_type: str) -> str | None:
    """The autograd DeviceType name of a device's events (PrivateUse1 for an out-of-tree backend)."""
    if device_type in ("cuda", "xpu", "mtia", "hpu"):
        return device_type.upper()
    return "PrivateUse1" if device_type == compat.privateuse1_name() else None


def _device_activity(ctx: CaseContext) -> tuple[torch.profiler.ProfilerActivity, torch.autograd.DeviceType]:
    """The device's ProfilerActivity and event DeviceType; not_applicable where PyTorch has none."""
    name = _device_type_name(ctx.device_type)
    if name is None:
        ctx.not_applicable(f"'{ctx.device_type}' has no device-side profiler activity" if ctx.device_type == "cpu"
                           else f"PyTorch has no ProfilerActivity for '{ctx.device_type}'")
    activity = getattr(torch.profiler.ProfilerActivity, name, None)
    expect(activity is not None and activity in torch.profiler.supported_activities(),
           f"ProfilerActivity.{name} is not among torch.profiler.supported_activities()")
    return activity, getattr(torch.autograd.DeviceType, name)


@SUITE.case("X2/intel-torch-xpu-ops-2547", level=6, dtypes=("int32",), requires=("profiler", "profiler_device"),
            ops=("aten::zero_",), cite=GH + "intel/torch-xpu-ops/issues/2547")
def profiler_device_events_typed(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU profiler events of `cache.zero_()` on an int32 buffer, profiled with the XPU activity, carried
    device_type DeviceType.CUDA. Every event that is not CPU's must carry the device's DeviceType."""
    activity, want = _device_activity(ctx)
    cache = torch.empty(1 << 16, dtype=dtype, device=ctx.device)
    with torch.profiler.profile(activities=[activity]) as prof:
        for _ in range(10):
            cache.zero_()
        synchronize(ctx.device_type)
    device_events = [e for e in prof.events() if e.device_type != torch.autograd.DeviceType.CPU]
    expect(device_events, "no device-side events recorded for 10 zero_() calls")
    wrong = sorted({str(e.device_type) for e in device_events if e.device_type != want})
    expect(not wrong, f"device events carry another device type than {want}", got=wrong)


@SUITE.case("X2/intel-torch-xpu-ops-3985", level=6, dtypes=("float32",), requires=("profiler", "profiler_device"),
            ops=("aten::add.Tensor", "aten::relu", "aten::mm"), cite=GH + "intel/torch-xpu-ops/issues/3985")
def profiler_compute_kernels(ctx: CaseContext, dtype: torch.dtype) -> None:
    """On Battlemage the XPU profiler recorded device kernels for copies and fills but none for compute
    ops (add, relu, matmul): self_xpu_time_total was 0. Each of the three must have device time."""
    activity, _ = _device_activity(ctx)
    a = torch.randn(64, 64).to(dtype).to(ctx.device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, activity]) as prof:
        out = torch.relu(a + a) @ a
        synchronize(ctx.device_type)
    events = prof.events()
    for op in ("aten::add", "aten::relu", "aten::mm"):
        found = [e for e in events if e.name == op]
        expect(bool(found) and any(e.device_time_total > 0 for e in found),
               f"{op} has no device time (no device kernel recorded for it)", events=len(found))
    ctx.assert_close(out.cpu(), torch.relu(a.cpu() + a.cpu()) @ a.cpu(), category="matmul")
