"""Explored extremes where CPU's answer is no better than the device's (issue 48 item 3, pytorch_ocl at
level 8): var's gradient at +-FLT_MAX beside -1.45 (CPU's mean absorbs the -1.45, even float64 does in
one summation order: any answer within what rounding the inputs moves is right), std of +-FLT_MAX
(CPU accumulates float32 in float64 and stays finite, a float32 accumulation overflows), and a
gradient that flows back through an overflowed forward. Each was a failure on a correct kernel; a
kernel that is wrong where the sample can tell still fails."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch
from helpers.marked_device import marked_device
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.context import CaseContext
from torchcts.cases.explore.run import BeyondRange, NotIeee754, _within_ieee754, _within_range
from torchcts.cases.opinfo import run as opinfo_run
from torchcts.cases.opinfo.samples import lookup
from torchcts.manifest.templates import validation_manifest
from torchcts.model.case import Case
from torchcts.oracle.compare import assert_matches
from torchcts.oracle.mismatch import OracleMismatch
from torchcts.oracle.tolerances import Tolerance

MAX = torch.finfo(torch.float32).max
# pytorch_ocl's explored find, shrunk: CPU's gradient at the zeros is 0, the device's 0.0322
CANCELLING = torch.tensor([[-MAX, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, MAX], [0.0, -1.4521]])


def _ctx() -> CaseContext:
    case = Case(id="opinfo/var/float32/backward", suite="opinfo", level=4, runner="torchcts.cases.opinfo.run:run",
                params={"op": "var", "kind": "backward", "dtype": "float32"}, dtype="float32", kind="backward")
    manifest = dataclasses.replace(validation_manifest())
    return CaseContext(device=torch.device("cpu"), manifest=manifest, case=case)


def _cancelling_first(fn, sample):
    """var as a kernel that sums the largest terms first (pytorch_ocl's answer): the -1.45 survives
    in the mean, -0.145, so the gradient at the zeros is 2 * 0.145 / 9 = 0.0322 where CPU's is 0."""
    x = sample.input.double()
    flat = x.detach().flatten()
    mean = flat[flat.abs().argsort(descending=True)].sum() / flat.numel()
    return (((x - mean) ** 2).sum() / (flat.numel() - 1)).float()


def test_a_gradient_within_the_rounding_of_a_cancelling_sample_passes():
    var = lookup("var", "unbiased")
    sample = SampleInput(CANCELLING.clone().requires_grad_(), args=(True,))
    ctx = _ctx()
    device, cpu = sample.input.detach().clone().requires_grad_(), sample.input.detach().clone().requires_grad_()
    got, = torch.autograd.grad(_cancelling_first(var.op, SampleInput(device, args=(True,))), [device])
    expected, = torch.autograd.grad(torch.var(cpu, True), [cpu])
    assert expected[1, 0] == 0 and got[1, 0] == pytest.approx(0.0322, rel=1e-2)  # outside any tolerance
    with pytest.MonkeyPatch.context() as mp:
        marked_device(mp, _cancelling_first)
        opinfo_run.check_backward(ctx, var, sample)
    assert ctx.verdict.precision.rescued >= 1


def test_a_wrong_gradient_on_a_well_conditioned_sample_still_fails():
    var = lookup("var", "unbiased")
    sample = SampleInput(torch.randn(5, 2).requires_grad_(), args=(True,))
    with pytest.MonkeyPatch.context() as mp:
        marked_device(mp, lambda fn, s: fn(s.input * 1.01, *s.args))  # 2% off: no rounding of the inputs explains it
        with pytest.raises(OracleMismatch):
            opinfo_run.check_backward(_ctx(), var, sample)


TOL = Tolerance(atol=1e-5, rtol=1.3e-6)


def _check(answer):
    def check(sample: SampleInput) -> None:
        expected = torch.std(sample.input.double()).float().reshape(1)
        assert_matches(answer(expected), expected, TOL)
    return check


EXTREME = SampleInput(torch.tensor([MAX, MAX, -MAX, 0.0, 0.0]))


def test_an_overflow_where_cpu_accumulates_wider_is_dropped():
    with pytest.raises(BeyondRange):
        _within_range(_check(lambda e: torch.full_like(e, float("inf"))))(EXTREME)


def test_a_finite_wrong_answer_on_extreme_inputs_still_fails():
    with pytest.raises(OracleMismatch):
        _within_range(_check(lambda e: e * 0.5))(EXTREME)


def test_an_overflow_on_inputs_whose_squares_fit_still_fails():
    with pytest.raises(OracleMismatch):
        _within_range(_check(lambda e: torch.full_like(e, float("inf"))))(SampleInput(torch.tensor([1e18, -1e18, 0.0])))


def test_an_infinite_input_is_no_range_question():
    """The sim's logsumexp_all_neg_inf (NaN for all -inf inputs, CPU -inf) went undetected when an
    infinite input counted as a magnitude whose square overflows."""
    def check(sample: SampleInput) -> None:
        expected = torch.logsumexp(sample.input, 0)
        assert_matches(torch.full_like(expected, float("nan")), expected, TOL)

    with pytest.raises(OracleMismatch):
        _within_range(check)(SampleInput(torch.tensor([float("-inf"), float("-inf")])))


def test_explore_drops_an_overflow_only_for_ops_that_are_not_pointwise():
    """exp or hypot must not overflow where the answer is finite: their checks are never wrapped."""
    from torchcts.cases.explore import run as explore_run

    for name, wrapped in (("exp", False), ("std", True)):
        checks = explore_run.variants(_ctx(), lookup(name), torch.float32)
        assert (checks["forward"].__qualname__.startswith("_within_range")) is wrapped, name


def test_a_gradient_through_an_overflowed_forward_is_dropped_whole():
    """A gradient flows back through a forward that overflowed on CPU too (std of +-FLT_MAX over 8
    elements: inf; pytorch_ocl's masked.std: NaN where CPU's x / inf gives 0): its finite elements are
    IEEE arithmetic on the infinity, so a backend without ieee754 owes none of it."""
    op = SimpleNamespace(op=lambda x: torch.stack([x[0] * 4, x[1]]))  # [inf, 1]: the forward overflows
    sample = SampleInput(torch.tensor([MAX, 1.0]))

    def gradient_check(s: SampleInput) -> None:
        x = s.input.clone().requires_grad_()
        expected, = torch.autograd.grad(op.op(x).sum(), [x])  # [4, 1], finite
        assert_matches(torch.tensor([float("nan"), 1.0]), expected, TOL)

    with pytest.raises(OracleMismatch):  # a forward check keeps its finite elements' failure
        _within_ieee754(op, gradient_check)(sample)
    with pytest.raises(NotIeee754):
        _within_ieee754(op, gradient_check, gradient=True)(sample)


def test_float64_extremes_are_measured_without_overflowing_python():
    """float(1.8e308) ** 2 raised OverflowError inside the check (kthvalue/float64 explore, an error)."""
    def check(sample: SampleInput) -> None:
        expected = sample.input.max().reshape(1)  # finite; the 'device' overflows
        assert_matches(torch.full_like(expected, float("inf")), expected, TOL)

    with pytest.raises(BeyondRange):
        _within_range(check)(SampleInput(torch.tensor([1.7976931348623157e308, 0.0], dtype=torch.float64)))
