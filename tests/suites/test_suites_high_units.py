"""In-process checks of the level 4-8 suites' guards: resource limits, build gaps, backend choice."""

from __future__ import annotations

import pytest
import torch

from torchcts import compat
from torchcts.cases.context import CaseContext
from torchcts.cases.registry import suite_cases
from torchcts.engine.runner import run_case
from torchcts.manifest.templates import validation_manifest
from torchcts.model.case import NotApplicable


def _case(case_id: str):
    suite = case_id.split("/", 1)[0]
    return next(c for c in suite_cases(suite) if c.id == case_id)


def _ctx(**limits: float) -> CaseContext:
    m = validation_manifest()
    m.resource_limits = dict(limits)
    return CaseContext(torch.device("cpu"), m)


def test_stress_respects_max_tensor_mb(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    real_ones = torch.ones

    def spy(*size, **kw):
        t = real_ones(*size, **kw)
        sizes.append(t.numel() * t.element_size())
        return t

    monkeypatch.setattr(torch, "ones", spy)
    ctx = _ctx(max_tensor_mb=2, max_device_memory_mb=64)
    run_case(_case("stress/large/near_limit"), ctx)
    assert sizes and max(sizes) <= 2 * 2**20
    assert ctx.info["bytes"] >= 0.8 * 2 * 2**20  # near the limit, not far below it


def test_memory_budget_takes_the_smaller_limit() -> None:
    from torchcts.cases.suites.memory import budget_mb

    assert budget_mb(_ctx(), 16) == 16
    assert budget_mb(_ctx(max_tensor_mb=4), 16) == 4
    assert budget_mb(_ctx(max_tensor_mb=100, max_device_memory_mb=8), 16) == 2


def test_fused_optimizer_not_applicable_without_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat, "fused_optimizer_devices", lambda: ["cuda"])
    with pytest.raises(NotApplicable, match="no fused optimizer kernels for 'cpu'"):
        run_case(_case("training/optim_fused/adam/mlp/float32"), _ctx())


def test_multi_device_not_applicable_with_one_device() -> None:
    with pytest.raises(NotApplicable, match="device_count\\(\\) is 1"):
        run_case(_case("multi_device/guard/device_guard"), _ctx())


def test_compile_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(compat.COMPILE_BACKEND_ENV, raising=False)
    assert compat.compile_backend("cuda") == "inductor"
    assert compat.compile_backend("openreg") == "aot_eager"
    monkeypatch.setenv(compat.COMPILE_BACKEND_ENV, "eager")
    assert compat.compile_backend("cpu") == "eager"


def test_deterministic_fill_restores_settings() -> None:
    before = torch.are_deterministic_algorithms_enabled()
    with compat.deterministic_fill():
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.isnan(torch.empty(4)).all()
    assert torch.are_deterministic_algorithms_enabled() == before


def test_tiling_skips_sizes_over_max_tensor_mb_visibly() -> None:
    """Sizes over the limit are counted, not silently passed; a case with no size left is not_applicable."""
    case = _case("tiling/contraction/mm/K/float32")
    ctx = _ctx(max_tensor_mb=0.5)  # K x 24 float32 fits up to K = 5461: 8191, 8192, 8193 do not
    run_case(case, ctx)
    assert ctx.info["sizes_too_large"] == 3 and ctx.info["sizes_checked"] == 21
    with pytest.raises(NotApplicable, match="all 24 sizes exceed"):
        run_case(case, _ctx(max_tensor_mb=0.001))


@pytest.mark.parametrize("mode", ["static", "inplace"])
def test_compiler_ops_never_passes_having_compared_nothing(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """Samples the CPU rejects are not compared; when that is every sample, the case is not_applicable."""
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.cases.opinfo.samples import lookup
    from torchcts.cases.suites import compiler_ops

    bad = SampleInput(torch.ones(2, 3), args=(torch.ones(4),))  # shapes that do not broadcast
    monkeypatch.setattr(compiler_ops, "_samples", lambda ctx, op, dtype: (lookup("add"), [bad, bad]))
    ctx = _ctx()
    with pytest.raises(NotApplicable, match="rejects every OpInfo sample"):
        compiler_ops.compile_op(ctx, torch.float32, "add", mode)
    assert ctx.info["samples_checked"] == 0
