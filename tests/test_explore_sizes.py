"""Exploration's size lists (cases/explore/switches.py: by_value): an output size or shape gets 1 and
0 at each position (class L10), the list's type kept; dims keep their own points."""

from __future__ import annotations

from torchcts.cases.explore import switches


def test_a_size_list_gets_one_and_zero_at_each_position():
    points = switches.by_value(0, (5, 7))  # adaptive pooling's positional output size
    assert all(p in points for p in ((1, 7), (0, 7), (5, 1), (5, 0)))
    assert all(type(p) is type((5, 7)) for p in points if p not in switches.SHAPE_SAFE_LISTS)
    assert switches.by_value("output_size", [1, 3]) == ([0, 3], [1, 1], [1, 0])  # 1 is not moved to 1


def test_a_size_of_none_is_kept_and_dims_are_not_sizes():
    assert switches.by_value(0, (None, 7)) == ((None, 1), (None, 0))
    assert switches.by_value("dim", [0, 1]) == switches.DIM_LISTS
    assert switches.by_value("weights", [2, 3]) == ()  # a named list that holds no sizes
