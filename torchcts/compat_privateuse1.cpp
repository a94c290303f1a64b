// A device guard and hooks for a PrivateUse1 backend written in Python, for PyTorch builds that
// cannot register them from Python (torch.utils.backend_registration has no
// _setup_privateuseone_for_python_backend and torch._C has no _acc: 2.7-2.9).
//
// torchcts/compat.py builds this with torch.utils.cpp_extension.load and loads it; the static
// registrations below run at load. It does what PyTorch's own Python fallbacks (_DummyDeviceGuard,
// _DummyPrivateUse1Hook) do: one device, index 0, the default stream, no events, no generator.
// It also registers the AutogradPrivateUse1 backend fallback that later PyTorch registers itself
// (VariableFallbackKernel.cpp): without it an op that has a PrivateUse1 kernel but only a
// CompositeImplicitAutograd one for autograd (linalg_matrix_rank's out= overloads) cannot dispatch.

#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

namespace {

constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

struct PythonBackendGuard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device) const override { return c10::Device(kType, 0); }
  c10::Device getDevice() const override { return c10::Device(kType, 0); }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
};

struct PythonBackendHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, PythonBackendGuard);

struct RegisterHooks {
  RegisterHooks() {
    if (!at::isPrivateUse1HooksRegistered()) {
      at::RegisterPrivateUse1HooksInterface(new PythonBackendHooks());
    }
  }
};
RegisterHooks register_hooks;

}  // namespace

TORCH_LIBRARY_IMPL(_, AutogradPrivateUse1, m) {
  m.fallback(torch::autograd::basicAutogradNotImplementedFallback());
}
