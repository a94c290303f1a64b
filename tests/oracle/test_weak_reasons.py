"""oracle/weak.py's reasons, one reference at a time: what a backend returning zeros, a constant,
NaN or noise of the tolerance's scale would also pass (docs/oracles.md, "Weak comparisons")."""

from __future__ import annotations

import pytest
import torch

from torchcts.oracle.tolerances import Tolerance
from torchcts.oracle.weak import BELOW_ATOL, CONSTANT, EMPTY, NAN, ZEROS, tensor_weakness, weakness

TOL = Tolerance(1e-5, 1.3e-6)
EXACT = Tolerance(0.0, 0.0)
nan, inf = float("nan"), float("inf")


@pytest.mark.parametrize(("values", "dtype", "tol", "reason"), [
    ([], torch.float32, TOL, EMPTY),
    ([0.0, 0.0, -0.0], torch.float32, TOL, ZEROS),
    ([nan, nan], torch.float32, TOL, NAN),
    ([nan, 1.0], torch.float32, TOL, None),
    ([1.0, nan], torch.float32, TOL, None),
    ([2.5, 2.5, 2.5], torch.float32, TOL, CONSTANT),
    ([2.5], torch.float32, TOL, None),  # one non-zero element: a wrong value fails
    ([0.0], torch.float32, TOL, ZEROS),
    ([1e-6, -3e-6], torch.float32, TOL, BELOW_ATOL),
    ([1e-6, -3e-6], torch.float32, EXACT, None),  # bit for bit: small values still tell
    ([1e-6, inf], torch.float32, TOL, None),
    ([1e-6, nan], torch.float32, TOL, None),
    ([1.0, 2.0], torch.float16, TOL, None),
    ([False, False], torch.bool, EXACT, ZEROS),
    ([True, True], torch.bool, EXACT, CONSTANT),
    ([True, False], torch.bool, EXACT, None),
    ([7, 7], torch.int64, EXACT, CONSTANT),
    ([0, 1], torch.uint8, EXACT, None),
])
def test_reason_of_one_reference(values, dtype, tol, reason) -> None:
    assert tensor_weakness(torch.tensor(values, dtype=dtype), tol) == reason


def test_complex_and_views_and_cases() -> None:
    assert tensor_weakness(torch.tensor([complex(nan, 0.0), complex(0.0, nan)]), TOL) == NAN
    assert tensor_weakness(torch.zeros(3, dtype=torch.complex64), TOL) == ZEROS
    assert tensor_weakness(torch.tensor([1 + 2j, 1 - 2j]).conj(), TOL) is None
    assert tensor_weakness(torch.ones(4, 4).t(), TOL) == CONSTANT
    # a case is weak only if every tensor it compared was; one that tells is evidence
    assert weakness([torch.zeros(2), torch.tensor([1.0, 2.0])], TOL) == (True, None)
    assert weakness([torch.zeros(2), torch.full((2,), nan)], TOL) == (True, ZEROS)
    assert weakness(3.0, TOL) == (False, None)
