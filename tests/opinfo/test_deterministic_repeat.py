"""The `deterministic` claim (cases/opinfo/effects.py: Retained._deterministic): the forward kind's first
sample twice more with deterministic algorithms on, bit for bit; without the claim, within tolerance."""

from __future__ import annotations

import pytest
import torch

from torchcts.cases.opinfo.effects import Repeat, Retained
from torchcts.oracle.mismatch import OracleMismatch
from torchcts.oracle.tolerances import Tolerance


def _retained(results, bitwise):
    calls = iter(results)
    retained = Retained(repeats=True)
    first = torch.tensor([1.0, 2.0])
    retained.keep({"sample_index": 0}, first, Repeat(lambda: next(calls), None, Tolerance(1e-3, 1e-3), bitwise=bitwise))
    return retained


def test_last_bits_that_differ_fail_only_under_the_claim():
    wobbly = [torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0000002])]
    _retained(wobbly, bitwise=False).repeat(lambda **_: None)  # within the tolerance: no claim, no failure
    described = {}
    with pytest.raises(OracleMismatch, match="deterministic algorithms on .* differ bit for bit"):
        _retained(wobbly, bitwise=True).repeat(described.update)
    assert described["retained_sample"] == 0


def test_equal_bits_pass_and_the_mode_is_on_and_restored():
    modes = []

    def same():
        modes.append(torch.are_deterministic_algorithms_enabled())
        return torch.tensor([1.0, 2.0])

    retained = Retained(repeats=True)
    retained.keep({}, torch.tensor([1.0, 2.0]), Repeat(same, None, Tolerance(0.0, 0.0), bitwise=True))
    retained.repeat(lambda **_: None)
    assert modes == [False, True, True] and not torch.are_deterministic_algorithms_enabled()


def test_an_op_without_a_deterministic_implementation_is_said_not_failed():
    def raises_in_mode():
        if torch.are_deterministic_algorithms_enabled():
            raise RuntimeError("index_add_cuda_ does not have a deterministic implementation")
        return torch.tensor([1.0, 2.0])

    retained = Retained(repeats=True)
    retained.keep({}, torch.tensor([1.0, 2.0]), Repeat(raises_in_mode, None, Tolerance(0.0, 0.0), bitwise=True))
    said = {}
    retained.repeat(said.update)
    assert said["deterministic_repeat"].startswith("not checked: deterministic mode raised RuntimeError")
