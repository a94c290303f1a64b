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


def test_memory_format_points_and_the_input_they_need():
    import torch
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.cases.explore import codec, layout

    assert switches.takes_memory_format("clone") and not switches.takes_memory_format("add")
    asked = SampleInput(torch.randn(5, 5), kwargs={"memory_format": torch.channels_last})
    shaped, how = layout.fit_memory_format(asked)
    assert shaped.input.shape == (1, 5, 5, 1) and torch.equal(shaped.input.reshape(5, 5), asked.input), how
    assert torch.zeros_like(shaped.input, memory_format=torch.channels_last).stride() != (25, 5, 1, 1)  # it tells
    assert layout.fit_memory_format(SampleInput(torch.randn(5, 5)))[1] is None  # no format asked: unchanged
    assert codec.decode(codec.encode(torch.channels_last_3d)) is torch.channels_last_3d
    with __import__("pytest").raises(codec.CodecError):
        codec.decode({"memory_format": "__class__"})


def test_a_result_in_another_layout_than_asked_fails_though_its_values_match():
    import pytest
    import torch

    from torchcts.cases.opinfo.run import check_memory_format
    from torchcts.oracle.mismatch import OracleMismatch

    want = torch.zeros(1, 3, 2, 2).contiguous(memory_format=torch.channels_last)
    check_memory_format(want.clone(memory_format=torch.preserve_format), want, torch.channels_last)
    check_memory_format(torch.zeros(1, 3, 1, 1), torch.zeros(1, 3, 1, 1).contiguous(memory_format=torch.channels_last),
                        torch.channels_last)  # sizes of 1: any stride is that layout
    with pytest.raises(OracleMismatch, match="not the one asked for"):
        check_memory_format(torch.zeros(1, 3, 2, 2), want, torch.channels_last)
