"""The comparator behind every value oracle: tolerance edges, NaN/Inf, complex, bool, int, scalars."""

from __future__ import annotations

import math

import pytest
import torch

from torchcts.oracle.compare import OracleMismatch, assert_matches, find_mismatch
from torchcts.oracle.tolerances import Tolerance, tolerance_for

TOL = Tolerance(atol=1e-3, rtol=1e-2)
EXACT = Tolerance(0.0, 0.0)


def test_tolerance_edge_is_inclusive_and_just_beyond_fails():
    e = torch.tensor([1.0, 100.0], dtype=torch.float64)
    # allowed |a-e| <= atol + rtol*|e|: 1e-3 + 1e-2 = 0.011 at 1.0, 1.001 at 100.0
    inside = e + torch.tensor([0.0109, 1.0009], dtype=torch.float64)
    assert find_mismatch(inside, e, TOL) is None
    outside = e + torch.tensor([0.0, 1.0011], dtype=torch.float64)
    m = find_mismatch(outside, e, TOL)
    assert m is not None and m.mismatched == 1 and m.total == 2
    assert m.first_index == [1]
    assert m.max_abs_error == pytest.approx(1.0011)
    assert m.max_rel_error == pytest.approx(1.0011 / 100.0)
    assert (m.atol, m.rtol) == (TOL.atol, TOL.rtol)


def test_nan_matches_nan_but_not_a_number():
    e = torch.tensor([1.0, math.nan, math.inf, -math.inf])
    assert find_mismatch(e.clone(), e, TOL) is None
    a = torch.tensor([1.0, 2.0, math.inf, -math.inf])
    m = find_mismatch(a, e, TOL)
    assert m is not None and m.first_index == [1] and m.mismatched == 1
    assert m.max_abs_error == math.inf


def test_inf_sign_and_nan_for_inf_are_mismatches():
    e = torch.tensor([math.inf, 0.0])
    assert find_mismatch(torch.tensor([-math.inf, 0.0]), e, TOL).first_index == [0]
    assert find_mismatch(torch.tensor([math.nan, 0.0]), e, TOL).first_index == [0]


def test_complex_compares_both_parts_and_reports_pairs():
    e = torch.tensor([1 + 1j, 2 - 3j], dtype=torch.complex64)
    assert find_mismatch(e.clone(), e, TOL) is None
    a = torch.tensor([1 + 1j, 2 + 3j], dtype=torch.complex64)
    m = find_mismatch(a, e, TOL)
    assert m is not None and m.first_index == [1]
    assert m.first_actual == [2.0, 3.0] and m.first_expected == [2.0, -3.0]
    assert m.max_abs_error == pytest.approx(6.0)
    # conjugate views are resolved, not compared bit-wise
    assert find_mismatch(e.conj(), e.conj().resolve_conj(), TOL) is None


def test_bool_and_int_are_exact():
    assert find_mismatch(torch.tensor([True, False]), torch.tensor([True, False]), EXACT) is None
    m = find_mismatch(torch.tensor([True, True]), torch.tensor([True, False]), EXACT)
    assert m is not None and m.first_index == [1]
    assert tolerance_for("reduction", "int64").exact and tolerance_for("matmul", "bool").exact
    m = find_mismatch(torch.tensor([5, 7]), torch.tensor([5, 8]), tolerance_for("elementwise", "int32"))
    assert m is not None and m.max_abs_error == 1.0 and m.first_actual == 7


def test_shape_and_dtype_mismatch_are_named():
    assert find_mismatch(torch.zeros(2), torch.zeros(3), TOL).what == "shape mismatch"
    m = find_mismatch(torch.zeros(2, dtype=torch.float64), torch.zeros(2), TOL)
    assert m.what == "dtype mismatch" and m.extra["actual"] == "torch.float64"


def test_per_dtype_tolerance_callable():
    # float values beside int indices: each tensor gets its own dtype's tolerance
    def tol(dt: torch.dtype) -> Tolerance:
        return tolerance_for("elementwise", str(dt).removeprefix("torch."))

    e = (torch.tensor([1.0]), torch.tensor([3]))
    assert find_mismatch((torch.tensor([1.000001]), torch.tensor([3])), e, tol) is None
    m = find_mismatch((torch.tensor([1.0]), torch.tensor([4])), e, tol)
    assert m is not None and m.path == "[1]" and m.atol == 0.0


def test_structures_and_scalars():
    assert find_mismatch([torch.ones(1), 2, None], [torch.ones(1), 2, None], TOL) is None
    assert find_mismatch((1.0,), [1.0, 2.0], TOL).what.startswith("expected a sequence")
    assert find_mismatch(1.5, 1.5 + 1e-9, TOL) is None
    assert find_mismatch(1.5, 2.5, TOL) is not None
    assert find_mismatch(complex(1, 2), complex(1, 2), TOL) is None
    assert find_mismatch(3, 4, EXACT) is not None
    assert find_mismatch(torch.ones(1), 1.0, TOL).what.startswith("expected float")


def test_low_precision_dtypes_are_widened_for_comparison():
    e = torch.tensor([1.0, 2.0]).to(torch.complex32)
    assert find_mismatch(e.clone(), e, TOL) is None
    if hasattr(torch, "float8_e4m3fn"):
        f = torch.tensor([1.0, 2.0]).to(torch.float8_e4m3fn)
        assert find_mismatch(f.clone(), f, TOL) is None


def test_assert_matches_raises_with_description():
    with pytest.raises(OracleMismatch) as info:
        assert_matches(torch.tensor([1.0, 5.0]), torch.tensor([1.0, 2.0]), TOL)
    text = str(info.value)
    assert "1/2 elements differ" in text and "max abs error 3" in text and "index [1]" in text


def test_zero_dim_mismatch_names_the_empty_index():
    m = find_mismatch(torch.tensor(2.0), torch.tensor(1.0), TOL)
    assert m.first_index == [] and m.first_actual == 2.0 and m.first_expected == 1.0
    assert m.to_json()["first_index"] == []
