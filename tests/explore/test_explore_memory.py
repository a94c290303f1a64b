"""Exploration's memory layouts (cases/explore/layout.py: relayout): permuted memory and ranks 5-6,
kept by the codec so records, corpora and scripts hold the layout that failed."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.explore import codec, layout


def _drawn(sample, elementwise, tries=64):
    """The first of `tries` explored indices whose draw relayouts the sample."""
    for i in range(tries):
        made, how = layout.relayout(sample, "opinfo/x/float32/explore", i, elementwise)
        if how:
            return made, how
    raise AssertionError("no draw in 64")


def test_an_elementwise_sample_is_lifted_to_rank_5_or_6_with_the_same_values():
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    made, how = _drawn(SampleInput(x, args=(y,)), elementwise=True)
    assert made.input.dim() in (5, 6) and made.args[0].shape == made.input.shape, how
    assert not made.input.is_contiguous() and not made.args[0].is_contiguous()
    assert torch.equal(made.input.reshape(4, 6), x) and torch.equal(made.args[0].reshape(4, 6), y)
    assert "lifted to rank" in how


def test_other_samples_get_one_tensor_in_reversed_memory_order():
    x, w = torch.randn(3, 5), torch.randn(5, 2)
    made, how = _drawn(SampleInput(x, args=(w,)), elementwise=False)  # a matmul: shapes differ, no lift
    moved = [t for t in (made.input, made.args[0]) if not t.is_contiguous()]
    assert len(moved) == 1 and "reversed in memory" in how
    assert torch.equal(made.input, x) and torch.equal(made.args[0], w)
    # a broadcasting elementwise sample is not lifted either (its shapes differ)
    _, how = _drawn(SampleInput(torch.randn(3, 5), args=(torch.randn(5),)), elementwise=True)
    assert "lifted" not in how


def test_the_draw_is_its_own_and_rare():
    sample = SampleInput(torch.randn(4, 6))
    hits = [i for i in range(400) if layout.relayout(sample, "c", i, True)[1]]
    assert 60 < len(hits) < 140  # one in MEMORY_EVERY
    assert hits == [i for i in range(400) if layout.relayout(sample, "c", i, True)[1]]  # deterministic
    # nothing to move: a 1-d tensor (one dimension > 1) that is not elementwise, or a tensor needing grad
    one_dim = SampleInput(torch.randn(7))
    assert layout.relayout(one_dim, "c", hits[0], False) == (one_dim, None)
    grad = SampleInput(torch.randn(3, 4, requires_grad=True))
    assert layout.relayout(grad, "c", hits[0], False)[1] is None


@pytest.mark.parametrize(("n", "rank"), [(400, 5), (20, 6), (64, 6), (37, 5), (8, 5)])
def test_factored_shapes_multiply_back(n, rank):
    shape = layout.factored(n, rank)
    assert len(shape) == rank and math.prod(shape) == n
    assert sum(s > 1 for s in shape) == min(rank, sum(1 for _ in _primes(n)))


def _primes(n):
    k = 2
    while n > 1:
        while n % k == 0:
            yield k
            n //= k
        k += 1


def test_the_codec_keeps_the_memory_order():
    t = layout.reversed_memory(torch.randn(2, 3, 4))
    encoded = codec.encode(t)
    assert encoded["tensor"]["order"] == [2, 1, 0]
    back = codec.decode(encoded)
    assert torch.equal(back, t) and back.stride() == t.stride()
    assert "order" not in codec.encode(torch.randn(2, 3))["tensor"]  # contiguous: as before
    assert "order" not in codec.encode(torch.randn(4, 6)[:, ::2])["tensor"]  # not dense: stored contiguous


@pytest.mark.parametrize("order", [[0, 0, 1], [0, 1], [0, 1, 3], "0,1,2", [True, 0, 1]])
def test_a_bad_order_is_refused(order):
    encoded = codec.encode(torch.randn(2, 3, 4))
    encoded["tensor"]["order"] = order
    with pytest.raises(codec.CodecError):
        codec.decode(encoded)


def test_lazy_views_keep_the_values_and_carry_the_bit():
    z, w, x = torch.randn(3, 4, dtype=torch.complex64), torch.randn(3, 4, dtype=torch.complex64), torch.randn(3, 4)
    hits = {}
    for i in range(64):
        made, how = layout.lazy_view(SampleInput(z, args=(w, x)), "opinfo/x/complex64/explore", i)
        if how:
            hits[how] = made
    assert set(hits) == {"input as a lazily conjugated view", "arg0 as a lazily conjugated view"}  # never real x
    conj = hits["input as a lazily conjugated view"]
    assert conj.input.is_conj() and torch.equal(conj.input, z) and not conj.args[0].is_conj()
    # an op that refuses conjugated views by definition (op facts no_lazy_views) gets none
    assert all(layout.lazy_view(SampleInput(z), "opinfo/view_as_real/complex64/explore", i)[1] is None
               for i in range(64))


def test_copies_and_the_codec_keep_conj_and_neg_bits():
    from torchcts.cases.opinfo.samples import copy_sample

    z = torch.randn(2, 3, dtype=torch.complex64).conj().resolve_conj().conj()
    n = torch._neg_view(torch.randn(4).neg())
    on_device = copy_sample(SampleInput(z, args=(n,)), "meta")  # any device but the CPU: the bit kept
    assert on_device.input.is_conj() and on_device.args[0].is_neg()
    # the CPU reference gets the values the bits mean (PyTorch 2.13's CPU max_pool1d ignores a neg bit)
    reference = copy_sample(SampleInput(z, args=(n,)), "cpu")
    assert not reference.input.is_conj() and not reference.args[0].is_neg()
    assert torch.equal(reference.input, z) and torch.equal(reference.args[0], n)
    for t, bit in ((z, "conj"), (n, "neg")):
        encoded = codec.encode(t)
        assert encoded["tensor"][bit] is True
        back = codec.decode(encoded)
        assert torch.equal(back, t) and (back.is_conj(), back.is_neg()) == (t.is_conj(), t.is_neg())
    bad = codec.encode(torch.randn(3))
    bad["tensor"]["conj"] = True  # a real tensor cannot be conjugated lazily
    with pytest.raises(codec.CodecError):
        codec.decode(bad)
