"""Field cases of the serialization class (docs/bug-classes.md S1): saving on the device and
loading with and without `map_location`.

Level 3, claim `serialization`, as the serialization suite; through an in-memory buffer (no files).
Each case saves what its report saved (a tensor, a module's state_dict) on the device and loads it
the way the report did; the loaded values must equal what was saved, on the device map_location says.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, expect, round_trip
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases

REQUIRES = ("serialization",)
OPS = ("torch.save", "torch.load")


def _net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))


def _model(ctx: CaseContext, dtype: torch.dtype, device: torch.device | str) -> torch.nn.Module:
    torch.manual_seed(ctx.seed)
    return _net().to(device=device, dtype=dtype)


def _same_state(ctx: CaseContext, loaded: dict[str, torch.Tensor], saved: dict[str, torch.Tensor], where: str,
                what: str) -> None:
    expect(set(loaded) == set(saved), f"{what}: state_dict keys changed", got=sorted(loaded))
    for key, value in saved.items():
        got = loaded[key]
        expect(got.device.type == where, f"{what}: {key} loaded on the wrong device", got=str(got.device),
               expected=where)
        ctx.describe(step=f"{what}: {key}")
        ctx.assert_close(got.cpu(), value.cpu())


@SUITE.case("S1/pytorch-pytorch-87504", level=3, dtypes=("float32",), ops=OPS, requires=REQUIRES,
            cite=GH + "pytorch/pytorch/issues/87504")
def device_saved_model_loads_on_cpu(ctx: CaseContext, dtype: torch.dtype) -> None:
    """A model saved on MPS could not be loaded on a machine without MPS. Its state_dict saved on the
    device loads with map_location='cpu' onto CPU tensors, into a CPU model that computes as the
    device model did."""
    model = _model(ctx, dtype, ctx.device)
    sd = model.state_dict()
    loaded = round_trip(sd, map_location="cpu")
    _same_state(ctx, loaded, sd, "cpu", "map_location='cpu'")
    cpu_model = _net().to(dtype)
    cpu_model.load_state_dict(loaded)
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(ctx.seed)).to(dtype)
    with torch.no_grad():
        ctx.describe(step="CPU model from the device's state_dict vs the device model")
        ctx.assert_close(cpu_model(x), model(x.to(ctx.device)).cpu(), category="matmul")


@SUITE.case("S1/pytorch-pytorch-79384", level=3, dtypes=("float32",), ops=OPS, requires=REQUIRES,
            cite=GH + "pytorch/pytorch/issues/79384")
def map_location_device_string(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch.load(f, map_location='mps') raised "don't know how to restore data location of
    torch.storage._UntypedStorage (tagged with mps)": a device-saved tensor and a state_dict load with
    map_location='<device type>' onto the device."""
    t = torch.randn(3, 5, generator=torch.Generator().manual_seed(ctx.seed)).to(dtype)
    got = round_trip(t.to(ctx.device), map_location=ctx.device_type)
    expect(got.device.type == ctx.device_type, "loaded on the wrong device", got=str(got.device))
    ctx.assert_close(got.cpu(), t)
    sd = _model(ctx, dtype, ctx.device).state_dict()
    _same_state(ctx, round_trip(sd, map_location=ctx.device_type), sd, ctx.device_type,
                f"map_location={ctx.device_type!r}")


@SUITE.case("S1/pytorch-pytorch-77874", level=3, dtypes=("float32",), ops=OPS, requires=REQUIRES,
            cite=GH + "pytorch/pytorch/issues/77874")
def map_location_device_object(ctx: CaseContext, dtype: torch.dtype) -> None:
    """net.load_state_dict(torch.load(path, map_location=torch.device('mps'))) raised a RuntimeError:
    a device-saved state_dict loaded with map_location=torch.device(...) fills a device model that
    computes as the saved one."""
    model = _model(ctx, dtype, ctx.device)
    sd = model.state_dict()
    loaded = round_trip(sd, map_location=torch.device(ctx.device))
    _same_state(ctx, loaded, sd, ctx.device_type, "map_location=torch.device(...)")
    fresh = _net().to(ctx.device, dtype)
    fresh.load_state_dict(loaded)
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(ctx.seed)).to(dtype).to(ctx.device)
    with torch.no_grad():
        ctx.assert_close(fresh(x).cpu(), model(x).cpu())


@SUITE.case("S1/pytorch-pytorch-90532", level=3, dtypes=("float32",), ops=OPS, requires=REQUIRES,
            cite=GH + "pytorch/pytorch/issues/90532")
def save_tensor_requiring_grad(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch.save of a textual-inversion embedding on MPS (a tensor requiring grad) failed with "Can't
    call numpy() on Tensor that requires grad": a device tensor requiring grad, a Parameter and a
    non-leaf result save, and load back with their values (map_location='cpu' and as saved)."""
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(ctx.seed)).to(dtype)
    leaf = x.to(ctx.device).requires_grad_()
    obj = {"leaf": leaf, "param": torch.nn.Parameter(x.to(ctx.device)), "result": leaf * 2}
    for where, kwargs in ((ctx.device_type, {}), ("cpu", {"map_location": "cpu"})):
        loaded = round_trip(obj, **kwargs)
        for key, want in (("leaf", x), ("param", x), ("result", x * 2)):
            got = loaded[key]
            expect(got.device.type == where, f"{key} loaded on the wrong device", got=str(got.device), expected=where)
            ctx.describe(step=f"{key}, loaded on {where}")
            ctx.assert_close(got.detach().cpu(), want)
