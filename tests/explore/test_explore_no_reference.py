"""A reference that turns out to be none is no verdict, on exploration's second look too.

Found on torch 2.14.1's level-8 CPU validation: `native_group_norm` on a zero batch returns
uninitialised memory on CPU, so an explored sample first mismatched (two CPU answers compared),
then the shrunk sample's re-check found the reference differing from itself (recheck.py) and its
SkipSample escaped as the case's `error`: a false verdict, on CPU itself. Exploration now drops such
a sample like any other input without a reference, and saves nothing of it.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.explore import run as explore_run
from torchcts.cases.explore.generate import Explored, Plan
from torchcts.cases.opinfo.run import SkipSample
from torchcts.oracle.mismatch import Mismatch, OracleMismatch


def _mismatch() -> OracleMismatch:
    return OracleMismatch(Mismatch("values differ", first_actual=1.0, first_expected=2.0))


class FlipFlop:
    """A check whose CPU reference is garbage: the first call mismatches, every later one finds no reference."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, sample) -> None:
        self.calls += 1
        if self.calls == 1:
            raise _mismatch()
        raise SkipSample("no reference: the CPU reference differs from itself on a second call")


def _made() -> Explored:
    return Explored(index=3, sample=SampleInput(torch.zeros(0, 6, 3)), base=0, switches=[], value_classes=("zero",))


def test_a_second_look_without_reference_drops_the_sample_and_saves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(explore_run, "shrink", lambda s, fails, reverts, keeps=None: SimpleNamespace(sample=s, calls=0, steps=0))
    ctx = SimpleNamespace(info={"explored": {"samples": 1}}, corpus=tmp_path / "corpus", run_dir=tmp_path)
    made = _made()
    check = FlipFlop()
    assert explore_run.outcome(check, made.sample) == "mismatch"  # what exploration saw first
    assert explore_run._fail(ctx, "opinfo/x/float32/explore", "forward", check, made, "mismatch",
                             Plan([(0, made.sample)], [], 0, None, {}), torch.neg) is False
    assert ctx.info == {"explored": {"samples": 1}}  # the case's info as it was
    assert not (tmp_path / "corpus").exists() and not list(tmp_path.rglob("*.json"))  # no find saved


def test_a_real_failure_still_raises_with_its_evidence_and_a_pass_twice_is_flaky():
    def fails(sample):
        raise _mismatch()

    failure = explore_run.confirmed(fails, "shrunk", "original", "flaky")
    assert isinstance(failure, OracleMismatch)
    seen = []

    def shrunk_skips(sample):  # the shrunk sample has no reference, the original still fails
        seen.append(sample)
        if sample == "shrunk":
            raise SkipSample("no reference")
        raise RuntimeError("device error")

    assert isinstance(explore_run.confirmed(shrunk_skips, "shrunk", "original", "flaky"), RuntimeError)
    assert seen == ["shrunk", "original"]
    passes = explore_run.confirmed(lambda s: None, "shrunk", "original", "sample 3 passed twice: flaky")
    assert isinstance(passes, AssertionError) and "flaky" in str(passes)


def test_replaying_a_find_whose_reference_is_none_raises_nothing():
    def skips(sample):
        raise SkipSample("no reference")

    def fails(sample):
        raise _mismatch()

    explore_run.again(skips, None)
    with pytest.raises(OracleMismatch):
        explore_run.again(fails, None)
