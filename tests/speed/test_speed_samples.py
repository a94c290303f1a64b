"""CPU per OpInfo case (issue 21): samples generated once per op and dtype in a worker, copied without
pytree's per-node cost; neither may change what a case computes."""

from __future__ import annotations

import collections

import pytest
import torch
from torch.utils import _pytree as pytree

from torchcts.cases.context import CaseContext
from torchcts.cases.opinfo import samples as S
from torchcts.cases.opinfo.run import run
from torchcts.manifest.templates import validation_manifest


@pytest.fixture(autouse=True)
def fresh_recent():
    S._RECENT.clear()
    yield
    S._RECENT.clear()


def _tensors(x):
    return [t for t in pytree.tree_leaves(x) if isinstance(t, torch.Tensor)]


def _same_tree(a, b):
    la, sa = pytree.tree_flatten(a)
    lb, sb = pytree.tree_flatten(b)
    assert sa == sb
    for x, y in zip(la, lb, strict=True):
        if isinstance(x, torch.Tensor):
            assert (x.shape, x.stride(), x.storage_offset(), x.dtype, x.requires_grad) == (
                y.shape, y.stride(), y.storage_offset(), y.dtype, y.requires_grad)
            # bit-equal, NaN included: 2.15's addcmul samples hold NaN, which torch.equal calls unequal
            torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True)
        else:
            assert type(x) is type(y) and (x == y or x is y)


Pair = collections.namedtuple("Pair", "a b")


@pytest.mark.parametrize("tree", [
    (torch.ones(2), [1, 2.5, None], {"k": torch.zeros(1), "d": torch.float32, "s": torch.Size([2, 3])}),
    (torch.ones(1), (Pair(torch.ones(1), 2),), {}),  # a namedtuple: pytree's walk
    (collections.OrderedDict(a=torch.ones(1)), ("cpu", slice(0, 2), ...), {"h": S.HostArg(torch.ones(1))}),
    torch.max(torch.ones(2, 3), dim=1),  # a return type (structseq)
])
def test_leaves_are_pytrees_leaves(tree):
    got = S.leaves_of(tree)
    want = pytree.tree_leaves(tree)
    assert [t for t in got if isinstance(t, torch.Tensor)] == [t for t in want if isinstance(t, torch.Tensor)]
    assert all(any(g is w for w in want) or isinstance(g, torch.Size) for g in got)


@pytest.mark.parametrize("op", ["add", "index_put", "expand", "nn.functional.conv2d", "as_strided", "tensor_split"])
def test_plain_copy_equals_pytree_copy(op, monkeypatch):
    info = S.lookup(op)
    samples = [s for _, s in S.select_samples(S.generate(info, torch.float32, device="cpu"), 6, None)]
    fast = [S.copy_sample(s, "cpu") for s in samples]
    monkeypatch.setattr(S, "_plain_leaves", lambda obj, out: False)
    slow = [S.copy_sample(s, "cpu") for s in samples]
    for f, s, orig in zip(fast, slow, samples, strict=True):
        _same_tree((f.input, f.args, f.kwargs), (s.input, s.args, s.kwargs))
        assert not any(a is b for a in _tensors((f.input, f.args)) for b in _tensors((orig.input, orig.args)))


def test_an_op_and_dtype_is_generated_once_and_equals_a_fresh_generation(monkeypatch):
    calls = []
    real = S.generate
    monkeypatch.setattr(S, "generate", lambda *a, **k: calls.append(a[1:]) or real(*a, **k))
    add, mul = S.lookup("add"), S.lookup("mul")
    first = list(S.selected_samples(add, torch.float32, None, None, device="cpu"))
    again = S.selected_samples(add, torch.float32, None, None, device="cpu")
    assert isinstance(again, list) and again == first and len(calls) == 1  # the kept list itself
    list(S.selected_samples(add, torch.float32, None, None, requires_grad=True, device="cpu"))
    list(S.selected_samples(add, torch.float32, 2, None, device="cpu"))  # another max_samples: its own list
    assert len(calls) == 3 and len(S._RECENT) == S.RECENT_KEPT
    list(S.selected_samples(mul, torch.float64, None, None, device="cpu"))
    list(S.selected_samples(add, torch.float32, None, None, device="cpu"))  # evicted: generated again
    assert len(calls) == 5
    fresh = S.select_samples(real(add, torch.float32, device="cpu"), None, None)
    assert [i for i, _ in first] == [i for i, _ in fresh]
    for (_, a), (_, b) in zip(first, fresh, strict=True):
        _same_tree((a.input, a.args, a.kwargs), (b.input, b.args, b.kwargs))


@pytest.mark.parametrize("op", ["add", "addcmul", "nn.functional.layer_norm", "index_add", "clamp"])
def test_no_kind_changes_the_samples_the_next_kind_reuses(op):
    """The soundness of the reuse: after every kind of the op ran on CPU, its cached samples still
    equal a fresh generation (a runner that wrote into a sample would make the next case wrong)."""
    info = S.lookup(op)
    for kind in ("forward", "method", "inplace", "out", "noncontiguous", "special_values", "backward"):
        ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest())
        try:
            run(ctx, op=op, kind=kind, dtype=torch.float32)
        except Exception:  # noqa: BLE001 - not applicable kinds; only the samples matter here
            pass
    assert S._RECENT
    for (name, variant, dtype, grad, errors, device, max_samples, index), cached in S._RECENT.items():
        assert (name, variant) == (info.name, info.variant_test_name)
        fresh = S.select_samples(S.generate(info, dtype, grad, errors, device), max_samples, index)
        for (_, a), (_, b) in zip(cached, fresh, strict=True):
            _same_tree((a.input, a.args, a.kwargs), (b.input, b.args, b.kwargs))


def test_large_sample_lists_are_not_kept(monkeypatch):
    """A list over RECENT_MAX_BYTES is generated again rather than held (grid_sampler_3d's float64
    samples took a worker past 1.9 GB); a small one is reused."""
    op = S.lookup("add")
    small = list(S.selected_samples(op, torch.float32, None, None))
    assert S.selected_samples(op, torch.float32, None, None) == small
    size = S._nbytes(small)
    assert size == sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                        for _, s in small for t in _tensors((s.input, s.args, s.kwargs))}.values())
    monkeypatch.setattr(S, "RECENT_MAX_BYTES", size - 1)
    S._RECENT.clear()
    first = list(S.selected_samples(op, torch.float32, None, None))
    again = S.selected_samples(op, torch.float32, None, None)
    assert not isinstance(again, list) and not S._RECENT  # made again, one sample at a time
    again = list(again)
    for (i, a), (j, b) in zip(first, again, strict=True):  # the same seeded samples, generated again
        assert i == j
        _same_tree((a.input, a.args, a.kwargs), (b.input, b.args, b.kwargs))


def test_error_inputs_are_sized_and_kept_too():
    """ErrorInput wraps its SampleInput (`.sample_input`): the size check must read through it (it
    once raised AttributeError and turned 215 `errors` cases of a level-8 run into harness errors)."""
    op = S.lookup("cov")
    first = list(S.selected_samples(op, None, None, None, errors=True))
    assert first and hasattr(first[0][1], "sample_input") and S._nbytes(first) > 0
    assert S.selected_samples(op, None, None, None, errors=True) == first


@pytest.mark.parametrize("op", ["add", "nn.functional.dropout", "grid_sampler_2d"])
def test_samples_made_one_at_a_time_equal_an_up_front_generation(op):
    """Whatever random numbers a case draws between samples (random ops, dropout), sample N is the
    one a repro generates up front; and the case's own random stream is not moved by generation."""
    import random

    import numpy

    info = S.lookup(op)
    fresh = S.select_samples(S.generate(info, torch.float32), None, None)
    torch.manual_seed(123)
    lazy = []
    for item in S.selected_samples(info, torch.float32, None, None):
        lazy.append(item)
        torch.rand(1000), random.random(), numpy.random.rand(7)  # what a case body may draw
    assert [i for i, _ in lazy] == [i for i, _ in fresh]
    for (_, a), (_, b) in zip(lazy, fresh, strict=True):
        _same_tree((a.input, a.args, a.kwargs), (b.input, b.args, b.kwargs))
    torch.manual_seed(123)
    expected = [torch.rand(1000) for _ in lazy]
    torch.manual_seed(123)
    S._RECENT.clear()
    drawn = [torch.rand(1000) for _ in S.selected_samples(info, torch.float32, None, None)]
    assert all(torch.equal(x, y) for x, y in zip(drawn, expected, strict=True))
