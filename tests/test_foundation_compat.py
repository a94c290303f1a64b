"""The compatibility module: device module APIs, torch.accelerator and OpInfo field access."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from torchcts import compat


def test_device_api_on_cpu_build():
    assert compat.device_available("cpu") and compat.device_count("cpu") == 1
    assert compat.device_available("nosuchdevice") is False
    assert compat.device_module("cuda") is torch.cuda
    if not torch.backends.mps.is_available():
        assert compat.device_available("mps") is False
    assert compat.device_model("nosuchdevice") is None


def test_fake_privateuse1_module(monkeypatch):
    fake = SimpleNamespace(is_available=lambda: True, device_count=lambda: 3, get_device_name=lambda i: f"Fake {i}")
    monkeypatch.setattr(torch, "fakeaccel", fake, raising=False)
    assert compat.device_available("fakeaccel") and compat.device_count("fakeaccel") == 3
    assert compat.device_model("fakeaccel") == "Fake 0"
    broken = SimpleNamespace(get_device_name=lambda i: 1 / 0)
    monkeypatch.setattr(torch, "brokenaccel", broken, raising=False)
    assert compat.device_model("brokenaccel") is None and not compat.device_available("brokenaccel")


def test_current_accelerator(monkeypatch):
    if not any(compat.device_available(d) for d in ("cuda", "mps", "xpu")):
        assert compat.current_accelerator() is None
    monkeypatch.delattr(torch, "accelerator", raising=False)
    assert compat.current_accelerator() is None  # PyTorch without torch.accelerator


def test_opinfo_field_layouts():
    f32, f16 = torch.float32, torch.float16
    modern = SimpleNamespace(name="add", aten_name="add", supported_dtypes=lambda dev: {f32, f16} if dev == "cuda" else {f32})
    assert compat.opinfo_dtypes(modern, "cuda") == {f32, f16} and compat.opinfo_dtypes(modern, "cpu") == {f32}
    by_dict = SimpleNamespace(name="mul", dtypes={f32}, dtypesIf={"xpu": {f16}})
    assert compat.opinfo_dtypes(by_dict, "xpu") == {f16} and compat.opinfo_dtypes(by_dict, "npu") == {f32}
    assert compat.opinfo_aten_name(by_dict) == "mul"
    assert compat.opinfo_aten_name(SimpleNamespace(name="linalg.norm", aten_name="linalg_norm")) == "linalg_norm"


def test_build_info_names_this_build():
    info = compat.build_info()
    assert info["torch"] == torch.__version__
    assert info["family"] in ("cpu", "default", "xpu") or info["family"].startswith(("cu", "rocm"))


def test_privateuse1_name_and_hip(monkeypatch):
    assert compat.privateuse1_name() == torch._C._get_privateuse1_backend_name()
    monkeypatch.delattr(torch._C, "_get_privateuse1_backend_name")
    assert compat.privateuse1_name() == "privateuseone"
    monkeypatch.setattr(torch.version, "hip", "6.4.1", raising=False)
    assert compat.hip_version() == "6.4.1"
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    assert compat.hip_version() is None
