"""Issue 48 item 3 on PyTorch's OpenReg (a C++ PrivateUse1 backend with a CPU fallback, built from
PyTorch's sources for the eighteenth session's sweep, docs/backends.md): the five verdicts TorchCTS
gave there that the backend did not earn, each closed as a class and shown without OpenReg.

1. A boxed fallback's provenance followed an out= overload to itself (logsumexp.out: RecursionError).
2. A case that only needs its copies finished failed on a device module without synchronize().
3. The shrinker cut running statistics below the input's channels; CPU's native_batch_norm wrote past
   them and the heap corruption was recorded as the backend's crash.
4. An out= that PyTorch keeps on the host for every device (_pack_padded_sequence's batch_sizes) was
   put on the device.
5. A CPU-only code path (`_grid_sampler_2d_cpu_fallback`) was called on the device.

And one pass it did not earn: multi_device/errors/cross_device tried only add, which OpenReg refuses
across indices; its mm, cat and where compute silently.
"""

from __future__ import annotations

import types

import pytest
import torch
from helpers.runs import latest_run, records, run_cli
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases import fallback, helpers
from torchcts.cases.explore.shrink import shrink
from torchcts.cases.opinfo.recheck import writes_outside
from torchcts.cases.surface_exclusions import excluded_reason
from torchcts.engine.selftest import ENV, SIM_MANIFEST
from torchcts.oracle.allowed import host_arguments


def test_an_out_overload_is_not_followed_to_itself() -> None:
    # PrivateUse2: a key with no kernel for it, as OpenReg's PrivateUse1 has none for logsumexp.out
    fallback.served_by_fallback.cache_clear()
    assert fallback.out_overload("aten::logsumexp.out") == "aten::logsumexp.out"
    assert fallback.served_by_fallback("aten::logsumexp.out", "PrivateUse2") is None  # its composite serves it


def test_a_sync_falls_back_to_the_accelerator_where_the_device_module_has_none(monkeypatch) -> None:
    synced: list[str] = []
    monkeypatch.setattr(helpers, "device_module", lambda device_type: types.SimpleNamespace())
    monkeypatch.setattr(torch, "accelerator", types.SimpleNamespace(synchronize=lambda: synced.append("acc")),
                        raising=False)
    monkeypatch.setattr(helpers, "current_accelerator", lambda: "openreg")
    helpers.synchronize("openreg")
    assert synced == ["acc"]
    monkeypatch.setattr(helpers, "current_accelerator", lambda: "cuda")  # another device's accelerator: no sync
    with pytest.raises(AssertionError, match=r"torch\.openreg\.synchronize does not exist"):
        helpers.synchronize("openreg")
    monkeypatch.setattr(helpers, "device_module", lambda device_type: types.SimpleNamespace(
        synchronize=lambda: synced.append("module")))
    helpers.synchronize("openreg")
    assert synced == ["acc", "module"]


STATS = (True, 0.1, 1e-5)


def test_cpu_writing_past_its_arguments_is_seen_and_never_a_shrink_step() -> None:
    x = torch.randn(5, 5, 1)
    short = SampleInput(x, args=(torch.ones(1), torch.zeros(1), torch.zeros(1), torch.ones(1), *STATS))
    whole = SampleInput(x, args=(torch.ones(5), torch.zeros(5), torch.zeros(5), torch.ones(5), *STATS))
    assert writes_outside(torch.native_batch_norm, short)  # 1-element running stats, 5 channels
    assert not writes_outside(torch.native_batch_norm, whole)
    assert not writes_outside(torch.Tensor.add_, SampleInput(torch.randn(3, 4).t(), args=(torch.randn(4, 3),)))
    assert not writes_outside(torch.add, SampleInput(torch.ones(2), args=("no",)))  # rejected: not this question
    # a failure that every candidate keeps: the shrinker never takes one CPU writes past
    tried: list[SampleInput] = []

    def fails(s: SampleInput) -> bool:
        if writes_outside(torch.native_batch_norm, s):
            return False
        tried.append(s)
        return True

    shrink(whole, fails)
    assert tried and all(s.args[2].numel() >= s.input.shape[1] for s in tried if s.input.dim() > 1)


def test_the_shrunk_batch_norm_failure_is_a_failure_not_a_crash(tmp_path) -> None:
    """The sim's batch_norm_stats_unchanged fails native_batch_norm's explore case; its shrinking once
    corrupted the worker's heap (SIGABRT: recorded as the device's crash)."""
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--level", "8",
                "--case", "opinfo/native_batch_norm/float32/explore", cwd=tmp_path,
                env={ENV: "batch_norm_stats_unchanged"}, timeout=600)
    rec = {x["id"]: x for x in records(latest_run(tmp_path))}["opinfo/native_batch_norm/float32/explore"]
    assert r.returncode == 1 and rec["status"] == "failed", (rec["status"], rec.get("message"), r.stdout[-2000:])
    assert "argument after the call differs" in rec["message"]


def test_host_outputs_and_cpu_only_paths_stay_off_the_device() -> None:
    assert {"lengths", "out1"} <= host_arguments("_pack_padded_sequence")
    assert excluded_reason("aten::_grid_sampler_2d_cpu_fallback") is not None
    assert excluded_reason("aten::_grid_sampler_2d_cpu_fallback_backward") is not None
    assert excluded_reason("aten::_grid_sampler_2d_cpu_fallback.out") is not None
    assert excluded_reason("aten::grid_sampler_2d") is None  # the op every device implements


def test_cross_device_operands_are_refused_by_each_kernel_family(monkeypatch) -> None:
    from torchcts.cases.suites import multi_device

    def refuses(a, b):
        raise RuntimeError("Expected all tensors to be on the same device")

    assert set(multi_device.CROSS_DEVICE) == {"add", "mm", "cat", "where"}  # one op per kernel family
    monkeypatch.setattr(multi_device, "two_devices", lambda ctx: (None, "cpu", "cpu"))
    monkeypatch.setattr(multi_device, "CROSS_DEVICE", {"add": refuses, "mm": lambda a, b: a + b, "cat": refuses,
                                                       "where": lambda a, b: b})
    with pytest.raises(AssertionError, match=r"^mm, where of tensors on index 0 and index 1 did not raise"):
        multi_device.cross_device_error(None)
    monkeypatch.setattr(multi_device, "CROSS_DEVICE", {"add": refuses})
    multi_device.cross_device_error(None)
