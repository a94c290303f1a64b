"""A backend that does not claim IEEE 754 owes nothing where CPU's answer is a NaN or an infinity,
but a finite element it gets wrong beside one is still its failure: exploration used to drop the whole
sample as soon as CPU's answer held one non-finite element, a false clean."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.explore.run import NotIeee754, _within_ieee754
from torchcts.oracle.compare import assert_matches, finite_only
from torchcts.oracle.mismatch import OracleMismatch
from torchcts.oracle.tolerances import Tolerance

TOL = Tolerance(atol=1e-5, rtol=1.3e-6)
OP = SimpleNamespace(op=torch.log)  # log(0) = -inf: CPU's answer holds an infinity
SAMPLE = SampleInput(torch.tensor([0.0, 1.0, 2.0, 4.0]))


def device_check(wrong_at: int, by: float):
    """A check whose device answer is CPU's with element `wrong_at` replaced by `by` added to it."""
    def check(sample: SampleInput) -> None:
        expected = torch.log(sample.input)
        actual = expected.clone()
        actual[wrong_at] = actual[wrong_at] + by if torch.isfinite(actual[wrong_at]) else by
        assert_matches(actual, expected, TOL)
    return check


def test_a_finite_error_beside_an_infinity_is_the_devices():
    with pytest.raises(OracleMismatch) as caught:
        _within_ieee754(OP, device_check(wrong_at=2, by=0.1))(SAMPLE)
    m = caught.value.mismatch
    assert m.first_index == [2] and m.mismatched == 1 and m.max_abs_error == pytest.approx(0.1, rel=1e-5)


def test_a_difference_only_where_cpu_is_not_finite_is_not_claimed():
    with pytest.raises(NotIeee754):
        _within_ieee754(OP, device_check(wrong_at=0, by=-3e38))(SAMPLE)


def test_a_device_error_where_cpu_is_not_finite_is_the_devices():
    """OpenReg raised NotImplementedError on conv_transpose3d's overflowing float64 samples: dropped as
    'ieee754 not claimed', the case said 'CPU rejected every explored input'."""
    def raises(sample: SampleInput) -> None:
        raise NotImplementedError("Could not run 'aten::slow_conv3d_forward' with arguments from the backend")

    with pytest.raises(NotImplementedError):
        _within_ieee754(OP, raises)(SAMPLE)
    with pytest.raises(NotImplementedError):
        _within_ieee754(OP, raises, gradient=True)(SAMPLE)


def test_a_device_nan_where_cpu_is_finite_is_the_devices():
    with pytest.raises(OracleMismatch):
        _within_ieee754(OP, device_check(wrong_at=2, by=float("nan")))(SAMPLE)


def test_finite_only_skips_the_elements_cpu_answers_non_finite_and_no_other():
    expected = torch.tensor([float("nan"), 1.0, float("inf"), 2.0])
    with finite_only():
        assert_matches(torch.tensor([5.0, 1.0, float("nan"), 2.0]), expected, TOL)
        with pytest.raises(OracleMismatch):
            assert_matches(torch.tensor([5.0, 1.0, float("nan"), 2.5]), expected, TOL)
        with pytest.raises(OracleMismatch):  # the device's NaN where CPU's answer is finite
            assert_matches(torch.tensor([5.0, float("nan"), float("nan"), 2.0]), expected, TOL)
    with pytest.raises(OracleMismatch):  # outside it, every element counts again
        assert_matches(torch.tensor([5.0, 1.0, float("nan"), 2.0]), expected, TOL)
