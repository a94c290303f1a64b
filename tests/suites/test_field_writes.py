"""What the field suite's effect cases rely on: run_both copies the arguments to the device before
CPU's run writes them, and the sim's `t.data = new` reaches the data it computes with."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from torchcts.cases.api import CaseContext, OracleMismatch, run_both
from torchcts.model.manifest import Manifest


def _ctx() -> CaseContext:
    return CaseContext(device=torch.device("cpu"), manifest=Manifest(device_name="cpu", supported_dtypes={}, capabilities={}))


def test_run_both_gives_the_device_the_arguments_before_cpu_writes_them():
    """A device op that writes nothing fails: were the copies taken after CPU's run, they would carry
    CPU's write and the unwritten result would equal CPU's."""
    calls: list[int] = []

    def writes_only_first_time(t: torch.Tensor) -> torch.Tensor:
        if not calls:
            t.add_(1)  # CPU's run writes; the "device" run (second call) does not
        calls.append(1)
        return t

    with pytest.raises(OracleMismatch):
        run_both(_ctx(), writes_only_first_time, torch.arange(4.0))


def test_run_both_passes_an_in_place_op_done_right():
    got = run_both(_ctx(), lambda t: t.t().add_(1), torch.arange(6.0).reshape(2, 3))
    assert torch.equal(got, torch.arange(6.0).reshape(2, 3).t() + 1)


SIM_SET_DATA = textwrap.dedent("""
    import torch
    import torchcts.sim  # noqa: F401

    t = torch.arange(4.0).to("sim")
    v = t[:2]
    t.data = t.data + 1
    assert t.cpu().tolist() == [1.0, 2.0, 3.0, 4.0], t.cpu()
    assert (t * 2).cpu().tolist() == [2.0, 4.0, 6.0, 8.0]
    assert v.cpu().tolist() == [0.0, 1.0], v.cpu()  # the old view keeps the old storage
    w = torch.nn.Parameter(torch.zeros(3, device="sim"))
    w.data = torch.ones(3, device="sim")
    assert w.detach().cpu().tolist() == [1.0, 1.0, 1.0]
    print("OK")
""")


def test_sim_set_data_reaches_the_wrapped_tensor():
    r = subprocess.run([sys.executable, "-c", SIM_SET_DATA], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_run_both_takes_a_runtime_error_for_cpus_index_error_and_nothing_less():
    """Where CPU raises IndexError (index_select out of range), a device kernel's RuntimeError (CUDA's
    device-side assert) is the same answer; a device that computes something is not."""
    def device_check(t: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        if t.device.type == "cpu" and calls:
            raise RuntimeError("device-side assert: index out of bounds")
        calls.append(1)
        return torch.index_select(t, 0, i)

    calls: list[int] = []
    assert run_both(_ctx(), device_check, torch.arange(4.0), torch.tensor([7])) is None

    def computes_anyway(t: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        if seen:
            return t[:1]
        seen.append(1)
        return torch.index_select(t, 0, i)

    seen: list[int] = []
    with pytest.raises(OracleMismatch, match="no exception raised, expected IndexError or RuntimeError"):
        run_both(_ctx(), computes_anyway, torch.arange(4.0), torch.tensor([7]))


def test_run_both_does_not_take_a_missing_device_kernel_for_cpus_error():
    """NotImplementedError is a RuntimeError, but a device without the op ran no check of the inputs."""
    seen: list[int] = []

    def no_device_kernel(t: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        if seen:
            raise NotImplementedError("Could not run 'aten::index_select' with arguments from the 'sim' backend")
        seen.append(1)
        return torch.index_select(t, 0, i)

    with pytest.raises(OracleMismatch, match="CPU raises IndexError for these inputs; the device has no kernel"):
        run_both(_ctx(), no_device_kernel, torch.arange(4.0), torch.tensor([7]))
