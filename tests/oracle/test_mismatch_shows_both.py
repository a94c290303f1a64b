"""Messages that show what differs (issue 48 item 4): a sequence of the wrong length, dict keys and
a scalar that differs name both sides, so the reader sees the shapes or values, never guesses."""

from __future__ import annotations

import torch

from torchcts.oracle.compare import find_mismatch
from torchcts.oracle.tolerances import Tolerance

TOL = Tolerance(atol=0.0, rtol=0.0)


def test_a_shape_of_the_wrong_length_shows_both_shapes():
    m = find_mismatch({"shape": torch.Size([6])}, {"shape": (2, 3)}, TOL)
    assert m.describe() == "expected a sequence of length 2, got a Size of length 1 at ['shape']: got (6,), expected (2, 3)"
    m = find_mismatch([torch.zeros(2)], [torch.zeros(2), torch.ones(3)], TOL)
    assert "got [tensor float32[2]], expected [tensor float32[2], tensor float32[3]]" in m.describe()
    assert "got a int" in find_mismatch(3, (1, 2), TOL).describe()


def test_dict_keys_and_scalars_show_both_sides():
    assert find_mismatch({"a": 1}, {"a": 1, "b": 2}, TOL).describe() == \
        "dict keys differ: got ['a'], expected ['a', 'b']"
    assert find_mismatch(3, 4, TOL).describe() == "values differ: got 3, expected 4"
    long = find_mismatch(list(range(40)), list(range(41)), TOL).describe()
    assert long.count(", ...]") == 2 and len(long) < 600  # long sequences elided, never whole


def test_a_long_repr_is_cut_in_the_message():
    m = find_mismatch("x" * 1000, "y" * 1000, TOL)
    assert len(m.describe()) < 450 and m.describe().startswith("values differ: got 'xxx")
