"""Samples made able to tell a right result from a wrong one (docs/oracles.md, "Weak comparisons").

OpInfo's random samples give some ops a reference that proves nothing: `eq` of two random float
tensors is all False (so is a backend returning zeros), `logical_or` of nonzero values all True,
`isnan` of finite values all False, `round(x, -3)` of |x| < 500 all zeros. For those ops (and only
those) the runner rewrites each sample first: some elements made equal, zero or special, or the
input scaled, so the result mixes values. The rewrite is of a copy (OpInfo's sample lists are
cached per dtype), and CPU stays the reference of the rewritten sample.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.opinfo.samples import inject_special_values


def _fresh(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone(memory_format=torch.contiguous_format)


def _with(sample: Any, inp: Any, args: tuple[Any, ...]) -> Any:
    return sample.__class__(inp, args=args, kwargs=dict(sample.kwargs), output_process_fn_grad=sample.output_process_fn_grad,
                            broadcasts_input=sample.broadcasts_input, name=sample.name)


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
    return _with(sample, sample.input, (new, *sample.args[1:]))


def _zeros(both: bool) -> Callable[[Any], Any]:
    """Every third element zero in the input (and, `both`, in the second operand at the same places)."""

    def rewrite(sample: Any) -> Any:
        if not _dense(sample.input):
            return sample
        inp = _fresh(sample.input)
        inp.view(-1)[::3] = 0
        args = tuple(sample.args)
        other = _other(sample) if both else None
        if other is not None:
            new = _fresh(other)
            new.view(-1)[::3] = 0
            args = (new, *args[1:])
        return _with(sample, inp, args)

    return rewrite


def _shared_test_elements(sample: Any) -> Any:
    """isin: half the test elements taken from the input, so some elements are found."""
    test = sample.args[0] if sample.args else None
    if not (_dense(sample.input) and isinstance(test, torch.Tensor) and test.numel() and test.dtype == sample.input.dtype):
        return sample
    new = _fresh(test)
    k = min(new.numel(), sample.input.numel(), max(1, new.numel() // 2))
    new.view(-1)[:k] = sample.input.detach().reshape(-1)[:k]
    return _with(sample, sample.input, (new, *sample.args[1:]))


def _specials(sample: Any) -> Any:
    return inject_special_values(sample)[0]


def _scaled(factor: float) -> Callable[[Any], Any]:
    def rewrite(sample: Any) -> Any:
        x = sample.input
        if not (isinstance(x, torch.Tensor) and x.is_floating_point()):
            return sample
        return _with(sample, (_fresh(x) * factor).requires_grad_(x.requires_grad), tuple(sample.args))

    return rewrite


# OpInfo name (or `name.variant`) -> the rewrite of each of its samples.
STRENGTHEN: dict[str, Callable[[Any], Any]] = {
    "eq": _agree, "ne": _agree, "isclose": _agree,
    "logical_not": _zeros(both=False), "logical_xor": _zeros(both=False), "logical_and": _zeros(both=False),
    "logical_or": _zeros(both=True), "bool": _zeros(both=False),
    "isin": _shared_test_elements,
    "isnan": _specials, "isinf": _specials, "isposinf": _specials, "isneginf": _specials, "isfinite": _specials,
    "round.decimals_neg_3": _scaled(1000.0),
}


def strengthener(name: str, variant: str = "") -> Callable[[Any], Any] | None:
    """The rewrite for an OpInfo's samples, None for the ops whose samples need none."""
    return STRENGTHEN.get(f"{name}.{variant}" if variant else name)
