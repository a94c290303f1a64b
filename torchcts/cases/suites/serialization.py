"""Serialization (capability `serialization`), level 3: torch.save/torch.load round trips of device
tensors and of a module's state_dict through an in-memory buffer (io.BytesIO, no files).

Checked: values, dtype, shape, device (loaded where saved, or where map_location says), strides
and storage offsets of non-contiguous tensors, and storage sharing between tensors saved together
(a view saved with its base must come back as a view of the loaded base).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchcts.cases.api import (
    ALL_DTYPES,
    FLOATING,
    CaseContext,
    CaseSet,
    cpu_reference,
    expect,
    round_trip,
    same_storage,
    sample,
)

SUITE = CaseSet("serialization")
cases = SUITE.cases
REQUIRES = ("serialization",)
OPS = ("torch.save", "torch.load")



def _expect_same(ctx: CaseContext, got: torch.Tensor, want: torch.Tensor, device_type: str, what: str) -> None:
    info = {"step": what, "got": f"{got.device} {got.dtype} {list(got.shape)} {list(got.stride())}+{got.storage_offset()}",
            "expected": f"{device_type} {want.dtype} {list(want.shape)} {list(want.stride())}+{want.storage_offset()}"}
    expect(got.device.type == device_type, "loaded on the wrong device", **info)
    expect(got.dtype == want.dtype and got.shape == want.shape, "dtype or shape changed", **info)
    expect(got.stride() == want.stride() and got.storage_offset() == want.storage_offset(),
           "strides or storage offset changed", **info)
    ctx.describe(step=what)
    ctx.assert_close(got, want)


@SUITE.case("tensor", level=3, dtypes=ALL_DTYPES, ops=OPS, requires=REQUIRES, oracle="property:round_trip")
def tensor(ctx: CaseContext, dtype: torch.dtype) -> None:
    for shape in ((), (0,), (7,), (3, 4)):
        cpu = sample(shape, dtype, ctx.seed)
        dev = cpu.to(ctx.device, copy=True)
        _expect_same(ctx, round_trip(dev), cpu, ctx.device_type, f"save/load {list(shape)}")
        _expect_same(ctx, round_trip(dev, map_location="cpu"), cpu, "cpu", "map_location='cpu'")
        _expect_same(ctx, round_trip(cpu, map_location=ctx.device), cpu, ctx.device_type, "map_location=device")
        _expect_same(ctx, round_trip(dev, map_location=lambda storage, loc: storage), cpu, "cpu",
                     "map_location=callable keeping the CPU storage")
        _expect_same(ctx, round_trip({"x": cpu}, map_location={"cpu": str(ctx.device)})["x"], cpu, ctx.device_type,
                     "map_location={'cpu': device}")


# name -> view of a base tensor
VIEWS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "transposed": lambda t: t.t(),
    "sliced": lambda t: t[1:, ::2],
    "offset_row": lambda t: t[3],
    "permuted_4d": lambda t: t.view(2, 3, 2, 4).permute(0, 2, 3, 1),
}


@SUITE.case("layout", level=3, dtypes=ALL_DTYPES, ops=OPS, requires=REQUIRES, oracle="property:round_trip")
def layout(ctx: CaseContext, dtype: torch.dtype) -> None:
    cpu_base = sample((6, 8), dtype, ctx.seed)
    dev_base = cpu_base.to(ctx.device, copy=True)
    for map_location, where in ((None, ctx.device_type), ("cpu", "cpu")):
        for name, view in VIEWS.items():
            alone = round_trip(view(dev_base), map_location=map_location)
            _expect_same(ctx, alone, view(cpu_base), where, f"{name} saved alone, map_location={map_location}")
        loaded = round_trip([dev_base, *(v(dev_base) for v in VIEWS.values())], map_location=map_location)
        for (name, view), got in zip(VIEWS.items(), loaded[1:], strict=True):
            _expect_same(ctx, got, view(cpu_base), where, f"{name} saved with its base")
            expect(same_storage(got, loaded[0]), "a view saved with its base came back as a copy", view=name)


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(6, 4)
        self.norm = torch.nn.BatchNorm1d(4)
        self.register_buffer("scale", torch.tensor([1.5, -2.0, 0.5, 3.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.linear(x)) * self.scale


def _net(dtype: torch.dtype, device: torch.device | str, seed: int) -> _Net:
    torch.manual_seed(seed)
    net = _Net().eval()
    net.norm.running_mean.uniform_(-1, 1)
    net.norm.running_var.uniform_(0.5, 2)
    net.norm.num_batches_tracked.fill_(5)
    return net.to(device=device, dtype=dtype)


@SUITE.case("state_dict", level=3, dtypes=FLOATING, ops=OPS, requires=REQUIRES, oracle="cpu+property:round_trip")
def state_dict(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = sample((5, 6), dtype, ctx.seed + 1)
    ref_net = _net(dtype, "cpu", ctx.seed)
    with torch.no_grad():
        expected = cpu_reference(ctx, lambda: ref_net(x), f"the test module in {dtype}")
        net = _net(dtype, ctx.device, ctx.seed)
        sd = net.state_dict()
        loaded = round_trip(sd)
        expect(set(loaded) == set(sd), "state_dict keys changed", got=sorted(loaded))
        for key, value in sd.items():
            _expect_same(ctx, loaded[key], value.cpu(), ctx.device_type, f"state_dict[{key!r}]")
        fresh = _net(dtype, ctx.device, ctx.seed + 1)
        fresh.load_state_dict(loaded)
        dx = x.to(ctx.device, copy=True)
        ctx.assert_close(fresh(dx), net(dx))
        cpu_net = _net(dtype, "cpu", ctx.seed + 2)
        cpu_net.load_state_dict(round_trip(sd, map_location="cpu"))
        ctx.describe(step="state_dict loaded on CPU")
        ctx.assert_close(cpu_net(x), expected)
        ctx.describe(step="device forward vs CPU")
        ctx.assert_close(net(dx), expected, category="matmul")
