"""Samples made able to tell a right result from a wrong one (docs/oracles.md, "Weak comparisons").

OpInfo's random samples give some ops a reference that proves nothing: `eq` of two random float
tensors is all False (so is a backend returning zeros), `logical_or` of nonzero values all True,
`isnan` of finite values all False, `round(x, -3)` of |x| < 500 all zeros. For those ops (and only
those) the runner rewrites each sample first: some elements made equal, zero or special, or the
input scaled, integer inputs moved to their domain's other edge or made odd, so the result mixes
values. The rewrite is of a copy (OpInfo's sample lists are
cached per dtype), and CPU stays the reference of the rewritten sample.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.opinfo.samples import inject_special_values, rebuilt
from torchcts.oracle.opfacts import FACTS


def _fresh(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone(memory_format=torch.contiguous_format)


def _dense(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.layout == torch.strided and x.numel() > 1


def _other(sample: Any) -> torch.Tensor | None:
    """The second operand when it is a tensor of the input's shape and dtype, else None."""
    other = sample.args[0] if sample.args else None
    x = sample.input
    if _dense(x) and _dense(other) and other.shape == x.shape and other.dtype == x.dtype:
        return other
    return None


def _agree(sample: Any) -> Any:
    """Every other element of the second operand equals the input's (eq, ne, isclose: both answers)."""
    other = _other(sample)
    if other is None:
        return sample
    new = _fresh(other)
    new.view(-1)[::2] = sample.input.detach().reshape(-1)[::2]
    return rebuilt(sample, sample.input, (new, *sample.args[1:]))


def _shared_test_elements(sample: Any) -> Any:
    """isin: half the test elements taken from the input, so some elements are found."""
    test = sample.args[0] if sample.args else None
    if not (_dense(sample.input) and isinstance(test, torch.Tensor) and test.numel() and test.dtype == sample.input.dtype):
        return sample
    new = _fresh(test)
    k = min(new.numel(), sample.input.numel(), max(1, new.numel() // 2))
    new.view(-1)[:k] = sample.input.detach().reshape(-1)[:k]
    return rebuilt(sample, sample.input, (new, *sample.args[1:]))


def _specials(sample: Any) -> Any:
    return inject_special_values(sample)[0]


def _scaled(factor: float) -> Callable[[Any], Any]:
    def rewrite(sample: Any) -> Any:
        x = sample.input
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
            return sample
        return rebuilt(sample, (_fresh(x) * factor).requires_grad_(x.requires_grad), tuple(sample.args))

    return rewrite


def _input(sample: Any) -> torch.Tensor | None:
    return sample.input if _dense(sample.input) else None


def _integer(pick: Callable[[Any], torch.Tensor | None]) -> Callable[[Any], torch.Tensor | None]:
    """`pick`'s tensor when it is an integer or bool tensor."""

    def picked(sample: Any) -> torch.Tensor | None:
        t = pick(sample)
        return t if t is not None and not (t.is_floating_point() or t.is_complex()) else None

    return picked


def _first_arg(sample: Any) -> torch.Tensor | None:
    other = sample.args[0] if sample.args else None
    return other if _dense(other) else None


Pick = tuple[int, Callable[[Any], "torch.Tensor | None"]]  # operand (0 the input, 1 the first argument), its tensor


def _places(step: int, value: Any, *operands: Pick) -> Callable[[Any], Any]:
    """Every `step`-th element of each picked operand set to `value`; no rewrite when the input is
    picked and not there (the other operand alone would not mix the result)."""

    def rewrite(sample: Any) -> Any:
        parts, changed = [sample.input, *sample.args], False
        for index, pick in operands:
            t = pick(sample)
            if t is None and index == 0:
                return sample
            if t is not None:
                parts[index] = _fresh(t)
                parts[index].view(-1)[::step] = value
                changed = True
        return rebuilt(sample, parts[0], tuple(parts[1:])) if changed else sample

    return rewrite


# Every third element zero in the input (logical ops, bool: both answers), and at the same places
# in a second operand of the input's shape and dtype (logical_or of nonzero values is all True).
_zeros = _places(3, 0, (0, _input))
_both_zeros = _places(3, 0, (0, _input), (1, _other))


def _integral_places(value: int) -> Callable[[Any], Any]:
    """Every other element of an integer or bool input set to `value`: OpInfo keeps these samples inside
    the op's domain, where a bool or uint8 input can take one value only (asin's [-1, 1]: all 0;
    acosh's [1, inf): all True; logit's and ndtri's [0, 1]: all 0), so the result was one value;
    `value` is the domain's other edge (asin(1) = pi/2, atanh(1) = inf, logit(1) = inf) or just
    outside it (acosh(0) = NaN), both defined."""
    return _places(2, value, (0, _integer(_input)))


def _other_places(value: int) -> Callable[[Any], Any]:
    """Every third element of an integer or bool second operand set to `value`: xlogy's samples keep
    `other` in log's domain, so a bool `other` was all True and x * log(y) all 0; at 0 it is -inf
    where x is not 0 (and 0 where x is: xlogy's definition)."""
    return _places(3, value, (1, _integer(_first_arg)))


def _odd_unsigned(sample: Any) -> Any:
    """uint8 inputs made odd and varied (1, 3 or 5 added to the even part by position): OpInfo's values
    0-9 put a 0 in every min (all zeros), cumprod's samples are all 0, and a wrapped uint8 product is
    0 modulo 256 (enough even factors); odd values keep products and minima away from 0."""
    x = sample.input
    if not (_dense(x) and x.dtype == torch.uint8):
        return sample
    steps = (torch.arange(x.numel()) % 3 * 2).to(torch.uint8).reshape(x.shape)
    return rebuilt(sample, (_fresh(x) | 1) + steps, tuple(sample.args))


def _real_places(sample: Any) -> Any:
    """isreal: every third complex element's imaginary part zero (random complex values are never real)."""
    x = sample.input
    if not (_dense(x) and x.is_complex()):
        return sample
    inp = _fresh(x)
    inp.view(-1)[::3] = inp.view(-1)[::3].real.to(inp.dtype)
    return rebuilt(sample, inp, tuple(sample.args))


# The rewrites by name; which op gets which (and why) are op facts of kind `strengthen`
# (oracle/opfacts/samples.py): a rewrite's name, then the arguments of its factory.
REWRITES: dict[str, Callable[..., Callable[[Any], Any]]] = {
    "agree": lambda: _agree, "zeros": lambda: _zeros, "both_zeros": lambda: _both_zeros,
    "shared_test_elements": lambda: _shared_test_elements, "specials": lambda: _specials, "scaled": _scaled,
    "integral_places": _integral_places, "real_places": lambda: _real_places, "other_places": _other_places,
    "odd_unsigned": lambda: _odd_unsigned,
}


def strengthener(name: str, variant: str = "") -> Callable[[Any], Any] | None:
    """The rewrite for an OpInfo's samples, None for the ops whose samples need none."""
    spec = FACTS.get("strengthen", name, variant)
    return None if spec is None else REWRITES[spec[0]](*spec[1:])
