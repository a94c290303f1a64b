"""The shrinker: a failing explored sample reduced to a small one that still fails the same way.

Greedy and bounded: each pass tries the candidates below in order, takes the first that still
fails (the same way: a mismatch stays a mismatch, an exception the same exception type; an input
CPU rejects does not count) and starts a new pass from it, until no candidate fails or `max_calls`
device calls are spent. Candidates, largest step first:

1. fewer non-default arguments: a keyword dropped (never `device`: a factory would leave the device),
   a switched positional argument put back;
2. fewer elements: one dimension (counted from the right, as broadcasting aligns them) cut to
   size 1, to its first half, to its second half, in every tensor at once and then in each alone;
3. fewer dimensions: the leading one dropped (index 0), in every tensor of the top rank at once,
   then in each alone;
4. simpler values: blocks of elements (all, halves, quarters, ... single) set to 0.

Delta debugging over a sample's parts, written here rather than taken from hypothesis: its shrinker
works on the choice sequence a strategy drew, so every tensor element would have to be drawn
through it, and it would own the random generation the explored samples must share with repro
scripts and the corpus (docs/exploration.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from torchcts.cases.explore.generate import with_switches
from torchcts.cases.explore.switches import SwitchPoint
from torchcts.cases.opinfo.samples import flat, rebuilt, unflat

MAX_CALLS = 48  # device calls one failure's shrinking may spend (each also runs the CPU reference)


@dataclass
class Shrunk:
    sample: Any
    calls: int  # predicate calls spent (each one device call and one CPU call)
    steps: int  # candidates taken


def shrink(sample: Any, fails: Callable[[Any], bool], reverts: Sequence[SwitchPoint] = (),
           max_calls: int = MAX_CALLS, keeps: Callable[[Any], bool] = lambda s: True) -> Shrunk:
    """The smallest failing sample the greedy passes reach within `max_calls` calls of `fails`,
    among candidates that `keeps` (the case's dtype, generate.carries: dropping eye's `dtype=` is another
    dtype's call, not a smaller one). A candidate that passed once is not retried until a pass finds
    nothing else (its step rarely fails later, and the calls are the budget)."""
    calls = steps = 0
    current = sample
    passed: set[str] = set()
    retried = False
    while calls < max_calls:
        progress = False
        for label, candidate in candidates(current, reverts):
            if calls >= max_calls:
                break
            if label in passed or not keeps(candidate):
                continue
            calls += 1
            if fails(candidate):
                current, steps, progress = candidate, steps + 1, True
                break
            passed.add(label)
        if progress:
            retried = False
            continue
        if not passed or retried:
            break
        passed.clear()  # one full pass more: a step that passed earlier may fail now
        retried = True
    return Shrunk(current, calls, steps)


def _tensor_slots(leaves: list[Any]) -> list[int]:
    return [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and x.layout == torch.strided
            and x.device.type != "meta"]


def _replaced(sample: Any, change: dict[int, torch.Tensor]) -> Any:
    leaves, spec = flat(sample)
    for i, t in change.items():
        leaves[i] = t.detach().contiguous().clone()
    return unflat(sample, leaves, spec)


def candidates(sample: Any, reverts: Sequence[SwitchPoint] = ()) -> Iterator[tuple[str, Any]]:
    """(label, sample) for every one-step reduction of `sample`, largest first (the module's
    docstring); the label names the step, not its result."""
    for key in [k for k in sample.kwargs if k != "device"]:  # without it a factory runs on CPU: no finding
        kwargs = {k: v for k, v in sample.kwargs.items() if k != key}
        yield f"drop {key}", rebuilt(sample, sample.input, sample.args, kwargs)
    for where, value in reverts:
        if isinstance(where, int) and where < len(sample.args) and sample.args[where] is not value:
            yield f"revert {where}", with_switches(sample, [(where, value)])
    leaves, _ = flat(sample)
    slots = _tensor_slots(leaves)
    yield from _fewer_elements(sample, leaves, slots)
    yield from _fewer_dims(sample, leaves, slots)
    yield from _simpler_values(sample, leaves, slots)


def _fewer_elements(sample: Any, leaves: list[Any], slots: list[int]) -> Iterator[tuple[str, Any]]:
    """Per dimension from the right: size 1, then the first half, then the second half; all
    tensors that have the dimension at once, then each alone."""
    rank = max((leaves[i].dim() for i in slots), default=0)
    for r in range(1, rank + 1):
        for how in ("one", "first", "second"):
            def keep(t: torch.Tensor, r: int = r, how: str = how) -> torch.Tensor | None:
                d = t.dim() - r
                if d < 0 or t.shape[d] <= 1:
                    return None
                n = t.shape[d]
                start, size = {"one": (0, 1), "first": (0, n // 2), "second": (n // 2, n - n // 2)}[how]
                return t.narrow(d, start, size)

            joint = {i: c for i in slots if (c := keep(leaves[i])) is not None}
            if joint:
                yield f"cut {r} {how}", _replaced(sample, joint)
            if len(joint) > 1:
                for i, c in joint.items():
                    yield f"cut {r} {how} of {i}", _replaced(sample, {i: c})


def _fewer_dims(sample: Any, leaves: list[Any], slots: list[int]) -> Iterator[tuple[str, Any]]:
    rank = max((leaves[i].dim() for i in slots), default=0)
    if rank == 0:
        return
    top = {i: leaves[i].select(0, 0) for i in slots if leaves[i].dim() == rank and leaves[i].shape[0] > 0}
    if top:
        yield "drop a dim", _replaced(sample, top)
    for i in slots:
        t = leaves[i]
        if t.dim() > 0 and t.shape[0] > 0 and (len(top) > 1 or i not in top):
            yield f"drop a dim of {i}", _replaced(sample, {i: t.select(0, 0)})


def _simpler_values(sample: Any, leaves: list[Any], slots: list[int]) -> Iterator[tuple[str, Any]]:
    """Blocks of elements set to 0 (all, halves, quarters, ...), skipping blocks already all +0."""
    for i in slots:
        t = leaves[i]
        flat = t.detach().reshape(-1)
        n = flat.numel()
        block = n
        while block >= 1 and n:
            for start in range(0, n, block):
                part = flat[start:start + block]
                signed = part.real if part.is_complex() else part
                negative_zero = bool(torch.signbit(signed).any()) if signed.is_floating_point() else False
                if bool((part != 0).any()) or negative_zero:
                    new = flat.clone()
                    new[start:start + block] = 0
                    yield f"zero {i} {start}:{block}", _replaced(sample, {i: new.reshape(t.shape)})
            block //= 2
