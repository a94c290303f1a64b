"""Mismatch metrics: 0-d first index, precision of passing sparse results."""

import torch

from torchcts.oracle.compare import find_mismatch
from torchcts.oracle.tolerances import Tolerance


def test_zero_dim_mismatch_reports_values():
    m = find_mismatch(torch.tensor(1.5), torch.tensor(1.0), Tolerance(1e-5, 1e-5))
    assert m is not None and m.first_index == [] and m.first_actual == 1.5 and m.first_expected == 1.0
    assert "got 1.5, expected 1.0" in m.describe()


def test_max_abs_error_of_sparse_results():
    """Passing comparisons record their precision: sparse outputs are compared densely."""
    from torchcts.oracle.compare import max_abs_error

    dense = torch.tensor([[0.0, 1.5], [2.0, 0.0]])
    assert max_abs_error(dense.to_sparse(), (dense + 0.25).to_sparse()) == 0.25
