"""Backend gates: the registry, `+` expressions, build gaps, contradictions with the device."""

from __future__ import annotations

import pytest
import torch

from torchcts.backends.gates import GATES, check_gates_for_device, derive_gate, parse_gates
from torchcts.errors import UsageError


def test_registry_and_expressions():
    assert set(GATES) == {"cpu", "cuda", "rocm", "mps", "xpu"}
    assert [g.name for g in parse_gates("cuda+rocm")] == ["cuda", "rocm"]
    assert [g.name for g in parse_gates("cuda+cuda")] == ["cuda"]
    pu1 = parse_gates("openreg")[0]
    assert (pu1.device, pu1.dispatch_key) == ("openreg", "PrivateUse1")
    for bad in ("", "cuda+", "+rocm", "CUDA!", "sources"):
        with pytest.raises(UsageError):
            parse_gates(bad)


def test_gate_contradicting_device_is_usage_error():
    check_gates_for_device(parse_gates("cuda+rocm"), "cuda")
    with pytest.raises(UsageError, match="contradicts --device mps"):
        check_gates_for_device(parse_gates("cuda"), "mps")
    with pytest.raises(UsageError, match="ROCm builds run with --device cuda"):
        check_gates_for_device(parse_gates("rocm"), "cpu")


def test_build_serves_gates(monkeypatch):
    assert GATES["cpu"].why_not_served() is None
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    assert GATES["cuda"].why_not_served() is None
    assert "ROCm" in GATES["rocm"].why_not_served()
    assert derive_gate("cuda") == "cuda"
    monkeypatch.setattr(torch.version, "hip", "6.3")
    assert GATES["rocm"].why_not_served() is None
    assert "HIP build" in GATES["cuda"].why_not_served()
    assert derive_gate("cuda") == "rocm"
    assert "no PrivateUse1 backend named 'npu'" in parse_gates("npu")[0].why_not_served()
