"""A 0-d mismatch names its (empty) index and both values."""

import torch

from torchcts.oracle.compare import find_mismatch
from torchcts.oracle.tolerances import Tolerance


def test_zero_dim_mismatch_reports_values():
    m = find_mismatch(torch.tensor(1.5), torch.tensor(1.0), Tolerance(1e-5, 1e-5))
    assert m is not None and m.first_index == [] and m.first_actual == 1.5 and m.first_expected == 1.0
    assert "got 1.5, expected 1.0" in m.describe()
