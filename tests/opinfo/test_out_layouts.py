"""The out kind's other destinations (cases/opinfo/out_layouts.py): strided, offset and resized outs,
compared with CPU's write into the same destination, the memory around the view included."""

from __future__ import annotations

import json

import pytest
import torch

from torchcts.cases.opinfo import out_layouts
from torchcts.oracle.compare import assert_matches
from torchcts.oracle.mismatch import OracleMismatch
from torchcts.oracle.tolerances import Tolerance


def test_destinations_have_the_layout_they_name():
    like = torch.empty(4, 5)
    strided = out_layouts.destination(like, "strided")
    assert strided.shape == like.shape and not strided.is_contiguous() and strided.stride() == (1, 4)
    offset = out_layouts.destination(like, "offset")
    assert offset.shape == like.shape and offset.is_contiguous() and offset.storage_offset() == out_layouts.OFFSET
    assert out_layouts.destination(like, "resized").shape == (1,)
    assert out_layouts.destination(torch.empty(()), "resized").shape == (3,)  # one element: still a resize
    step = out_layouts.destination(torch.empty(3, 1), "strided")  # no two dims > 1: every second element
    assert step.shape == (3, 1) and not step.is_contiguous()
    for layout in out_layouts.LAYOUTS:
        made = out_layouts.destination(like, layout)
        assert made.dtype == like.dtype and not made.any()
        assert out_layouts.destination(torch.empty(0, 3), layout) is None  # nothing would be written
    assert out_layouts.destination(torch.empty(()), "strided") is None
    assert out_layouts.destinations((like, torch.empty(4, dtype=torch.int64)), "strided")[1].dtype == torch.int64
    with pytest.raises(ValueError):
        out_layouts.destination(like, "channels_last")


def test_on_device_keeps_the_whole_storage():
    made = out_layouts.destination(torch.empty(2, 3), "offset")
    copy = out_layouts.on_device(made, "cpu")
    assert copy.storage_offset() == made.storage_offset() and copy.stride() == made.stride()
    assert copy.untyped_storage().data_ptr() != made.untyped_storage().data_ptr()
    assert out_layouts.storage_elements(copy) == out_layouts.storage_elements(made) == 6 + out_layouts.OFFSET


def _check(device_call, cpu=None, x=None):
    x = torch.arange(12.0).reshape(3, 4) if x is None else x
    expected = -x
    info: dict = {"sample_index": 2}
    out_layouts.check(expected, "cpu", True, info, cpu=cpu or (lambda o: torch.neg(x, out=o)),
                      zeros=lambda: torch.zeros_like(expected), device_call=lambda o: device_call(x, o),
                      written=lambda got, want: assert_matches(got, want, Tolerance(0.0, 0.0)))
    return info


def test_a_right_kernel_passes_every_destination():
    info = _check(lambda x, o: torch.neg(x, out=o))
    assert info["out_layouts"] == {"checked": {"strided": 2, "offset": 2, "resized": 2}, "skipped": {}}
    assert "out_layout" not in info


def test_a_kernel_writing_in_memory_order_fails_the_strided_destination():
    def memory_order(x, o):  # pytorch/pytorch#100764's bug: the view's strides and offset ignored
        o.as_strided(o.shape, torch.empty(o.shape).stride(), 0).copy_(-x)
        return o

    with pytest.raises(OracleMismatch, match=r"out= into a strided destination \(shape \[3, 4\], strides \[1, 3\]"):
        _check(memory_order)


def test_a_write_outside_the_view_fails_even_when_the_view_is_right():
    def spills(x, o):
        torch.neg(x, out=o)
        if o.storage_offset():  # the offset destination: also writes the element before its view
            o.as_strided((1,), (1,), 0).fill_(5.0)
        return o

    with pytest.raises(OracleMismatch, match="offset destination .*written outside the view"):
        _check(spills)


def test_the_kernel_must_return_its_destination():
    with pytest.raises(OracleMismatch, match="strided destination did not return it"):
        _check(lambda x, o: torch.neg(x, out=o).clone())


def test_destinations_cpu_refuses_or_leaves_unwritten_are_skipped_and_said():
    x = torch.arange(4.0)

    def cpu(o):  # refuses a non-contiguous destination; fills a resized one differently
        if not o.is_contiguous():
            raise RuntimeError("out must be contiguous")
        resized = o.shape != x.shape
        torch.neg(x, out=o)
        if resized:
            o[-1] = 7.0
        return o

    info = _check(lambda x, o: torch.neg(x, out=o), cpu=cpu, x=x)
    assert info["out_layouts"]["checked"] == {"offset": 2}
    assert info["out_layouts"]["skipped"] == {"strided": "CPU raises RuntimeError",
                                              "resized": "CPU leaves elements of a resized destination unwritten"}


def test_the_out_kind_checks_each_destination_on_cpu(workdir, cli, monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert cli(["run", "--validation", "--device", "cpu", "--case", "opinfo/max.reduction_with_dim/float32/out",
                "--case", "opinfo/add/float32/out", "--no-isolation"]) == 0
    run = next((workdir / "results").glob("2*"))
    records = {r["id"]: r for r in map(json.loads, (run / "cases.jsonl").read_text().splitlines())}
    for case in ("opinfo/max.reduction_with_dim/float32/out", "opinfo/add/float32/out"):
        layouts = records[case]["info"]["out_layouts"]
        # add's first sample is 0-dim (no strided destination): a later sample of its checks it
        assert set(layouts["checked"]) == set(out_layouts.LAYOUTS) and not layouts["skipped"], (case, layouts)
    assert records["opinfo/add/float32/out"]["info"]["out_layouts"]["checked"]["strided"] > 0
