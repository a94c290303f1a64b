"""Run as a script (in its own process: importing torchcts.sim renames PrivateUse1 for good).

Checks the sim device behaves like a real backend; prints "OK" at the end, raises otherwise.
"""

from __future__ import annotations

import io
import sys

import torch

import torchcts.sim  # noqa: F401 - registers the device
from torchcts.sim import faults


def check_registration() -> None:
    assert torch._C._get_privateuse1_backend_name() == "sim"
    assert torch.sim.is_available() and torch.sim.device_count() == 1 and torch.sim.current_device() == 0
    t = torch.zeros(2, 3, device="sim")
    assert t.device == torch.device("sim", 0) and t.device.type == "sim" and not t.is_cpu
    torch.sim.set_device(0)
    torch.sim.synchronize()
    try:
        torch.zeros(1, device="sim:1")
    except RuntimeError:
        pass
    else:
        raise AssertionError("sim:1 should not exist")


def check_views_and_mutation() -> None:
    base = torch.arange(12.0).reshape(3, 4).to("sim")
    view = base.t()
    assert view.stride() == (1, 4) and view._base is base
    assert view.data_ptr() == base.data_ptr()
    view.mul_(2)  # in place through a view reaches the base
    assert torch.equal(base.cpu(), torch.arange(12.0).reshape(3, 4) * 2)
    sl = base[1:, 2]
    assert sl.storage_offset() == 6 and sl.stride() == (4,)
    r = base.add_(1)
    assert r is base
    x = torch.tensor([1.0, 2.0], device="sim")
    assert torch.equal(x.cpu(), torch.tensor([1.0, 2.0]))


def check_out_resize() -> None:
    out = torch.empty(0, device="sim")
    r = torch.add(torch.ones(5, device="sim"), 1, out=out)
    assert r is out and out.shape == (5,) and out.stride() == (1,)
    assert torch.equal(out.cpu(), torch.full((5,), 2.0))


def check_layout_and_autograd() -> None:
    cl = torch.randn(2, 3, 4, 4).to(memory_format=torch.channels_last).to("sim")
    assert cl.clone().is_contiguous(memory_format=torch.channels_last)
    x = torch.randn(5, device="sim", requires_grad=True)
    torch.sigmoid(x).sum().backward()
    y = torch.sigmoid(x.detach().cpu())
    assert torch.allclose(x.grad.cpu(), y * (1 - y))


def check_rng_memory_serialization() -> None:
    torch.manual_seed(3)
    a = torch.randn(4, device="sim")
    torch.manual_seed(3)
    b = torch.randn(4, device="sim")
    assert torch.equal(a.cpu(), b.cpu())
    before = torch.sim.memory_allocated()
    big = torch.empty(1 << 16, device="sim")
    assert torch.sim.memory_allocated() >= before + (1 << 18)
    del big
    assert torch.sim.memory_allocated() == before
    buf = io.BytesIO()
    torch.save({"a": a}, buf)
    buf.seek(0)
    loaded = torch.load(buf)["a"]
    assert loaded.device.type == "sim" and torch.equal(loaded.cpu(), a.cpu())


def check_fault_names() -> None:
    from torchcts.errors import UsageError

    try:
        faults.activate(["abs_zero_dimm"])
    except UsageError as exc:  # one line with the closest name, not every name (issue 53)
        assert "unknown fault 'abs_zero_dimm': did you mean 'abs_zero_dim'?" in str(exc), exc
    else:
        raise AssertionError("an unknown fault name must be rejected")


if __name__ == "__main__":
    for name, fn in list(globals().items()):
        if name.startswith("check_"):
            fn()
    print("OK")
    sys.exit(0)
