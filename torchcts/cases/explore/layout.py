"""Layout: what a tensor's memory looks like, an exploration axis (issue 39 item 3).

OpInfo's samples are contiguous (the noncontiguous kind makes strided copies, never a stride of 0),
and the strides suite tries expanded operands on a handful of ops only. A kernel that reads an
operand as if it were contiguous, or takes a stride of 0 for a scalar, passes them. One explored
sample in EXPAND_EVERY gets one of its tensors (the input or a positional argument, with a dimension
of size > 1) as a stride-0 expansion of its first slice along that dimension (`t[:1].expand_as(t)`,
so every slice holds the same values); the copy to the device keeps the strides
(cases/opinfo/copier.py: Copier). Drawn from the sample's own seed (`f"{case_id}#{index}#layout"`),
so the other axes' draws are unchanged. An in-place op CPU refuses on such an input is dropped, as
any input CPU rejects.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.opinfo.samples import rebuilt, with_slots
from torchcts.oracle.conditioning import running_stats
from torchcts.oracle.opfacts import FACTS

EXPAND_EVERY = 4
MEMORY_EVERY = 4
VIEW_EVERY = 4
LIFT_MIN_ELEMENTS = 8  # fewer elements fill no rank-5 shape with three sizes > 1


def _written(case_id: str) -> tuple[int | str, ...]:
    """Positions of the statistics the case's op writes without a schema mark (op facts of kind
    `running_stats`, oracle/conditioning.py: running_stats): never laid out otherwise, since updates
    through a stride of 0 race with each other and CPU's own result changes from run to run."""
    entry = running_stats(_op_of(case_id))
    return entry.where if entry is not None else ()


def _op_of(case_id: str) -> str:
    return case_id.split("/")[1] if case_id.count("/") >= 2 else ""


def _slots(sample: Any, fits: Callable[[Any], bool], case_id: str) -> list[Any]:
    """Where a tensor may be laid out otherwise: "input" and the positions of the arguments that fit,
    never an argument the op writes (_written)."""
    written = _written(case_id)
    return (["input"] if fits(sample.input) else []) + [
        i for i, a in enumerate(sample.args) if fits(a) and i not in written]


def _tensor_at(sample: Any, at: Any) -> torch.Tensor:
    return sample.input if at == "input" else sample.args[at]


def _name(at: Any) -> str:
    return "input" if at == "input" else f"arg{at}"


def expand(sample: Any, case_id: str, index: int) -> tuple[Any, str | None]:
    """The sample with one tensor as a stride-0 expansion along one dimension, and where (None: unchanged)."""
    candidates = _slots(sample, _expandable, case_id)
    rng = random.Random(f"{case_id}#{index}#layout")
    if not candidates or rng.randrange(EXPAND_EVERY):
        return sample, None
    at = candidates[rng.randrange(len(candidates))]
    t = _tensor_at(sample, at)
    dims = [d for d in range(t.dim()) if t.shape[d] > 1]
    dim = dims[rng.randrange(len(dims))]
    expanded = t.detach().narrow(dim, 0, 1).expand(t.shape).requires_grad_(t.requires_grad)
    return with_slots(sample, {at: expanded}), f"{_name(at)} expanded along dim {dim} (stride 0)"


def _expandable(x: Any) -> bool:
    return (isinstance(x, torch.Tensor) and x.layout == torch.strided and x.dim() >= 1
            and any(s > 1 for s in x.shape) and not x.requires_grad)


def relayout(sample: Any, case_id: str, index: int, elementwise: bool) -> tuple[Any, str | None]:
    """The sample with permuted memory (lifted to rank 5-6 for an elementwise op), and how (None: unchanged)."""
    rng = random.Random(f"{case_id}#{index}#memory")
    if rng.randrange(MEMORY_EVERY):
        return sample, None
    slots = _slots(sample, _permutable, case_id)
    every = [t for t in (sample.input, *sample.args, *sample.kwargs.values()) if isinstance(t, torch.Tensor)]
    if (elementwise and len(slots) == len(every) and len({tuple(t.shape) for t in every}) == 1
            and every[0].numel() >= LIFT_MIN_ELEMENTS):
        rank = 5 + rng.randrange(2)
        shape = factored(every[0].numel(), rank)
        moved = {at: reversed_memory(_tensor_at(sample, at).reshape(shape)) for at in slots}
        return with_slots(sample, moved), f"every tensor lifted to rank {rank} {list(shape)}, its dimensions reversed in memory"
    wide = [at for at in slots if sum(n > 1 for n in _tensor_at(sample, at).shape) >= 2]
    if not wide:
        return sample, None
    at = wide[rng.randrange(len(wide))]
    t = reversed_memory(_tensor_at(sample, at))
    return with_slots(sample, {at: t}), f"{_name(at)} with its dimensions reversed in memory (strides {list(t.stride())})"


def reversed_memory(t: torch.Tensor) -> torch.Tensor:
    """t's values, stored with its dimensions in reversed order (the last one slowest)."""
    order = list(range(t.dim()))[::-1]
    return t.detach().permute(order).contiguous().permute(order)


def factored(n: int, rank: int) -> tuple[int, ...]:
    """A shape of `rank` sizes whose product is n, as many of them > 1 as n's prime factors allow."""
    primes, k, rest = [], 2, n
    while k * k <= rest:
        while rest % k == 0:
            primes.append(k)
            rest //= k
        k += 1
    if rest > 1:
        primes.append(rest)
    sizes = [1] * rank
    for p in sorted(primes, reverse=True):
        sizes[sizes.index(min(sizes))] *= p
    return tuple(sizes)


def _permutable(x: Any) -> bool:
    return (isinstance(x, torch.Tensor) and x.layout == torch.strided and x.dim() >= 1 and not x.requires_grad
            and x.is_contiguous() and x.numel() > 0)


def lazy_view(sample: Any, case_id: str, index: int) -> tuple[Any, str | None]:
    """The sample with one complex tensor as a lazily conjugated view, and which (None: unchanged)."""
    rng = random.Random(f"{case_id}#{index}#view")
    if rng.randrange(VIEW_EVERY) or FACTS.has("no_lazy_views", _op_of(case_id)):
        return sample, None
    slots = _slots(sample, _viewable, case_id)
    if not slots:
        return sample, None
    at = slots[rng.randrange(len(slots))]
    view = _tensor_at(sample, at).detach().conj().resolve_conj().conj()
    return with_slots(sample, {at: view}), f"{_name(at)} as a lazily conjugated view"


def _viewable(x: Any) -> bool:
    return (isinstance(x, torch.Tensor) and x.layout == torch.strided and x.is_complex() and not x.requires_grad
            and not x.is_conj() and not x.is_neg() and x.numel() > 0)


FORMAT_RANKS = {torch.channels_last: 4, torch.channels_last_3d: 5}


def fit_memory_format(sample: Any) -> tuple[Any, str | None]:
    """A sample switched to `memory_format=channels_last` (or `_3d`) with an input of another rank gets
    its input reshaped to rank 4 (5), the same elements (layout.factored): OpInfo's samples of clone
    and the *_like factories are rank 0-3, where CPU refuses those formats and the point is dropped."""
    rank = FORMAT_RANKS.get(sample.kwargs.get("memory_format"))
    x = sample.input
    if rank is None or not isinstance(x, torch.Tensor) or x.dim() == rank or not x.numel() or x.requires_grad:
        return sample, None
    shaped = x.detach().reshape(1, *factored(x.numel(), rank - 1))  # channels and height > 1 where the count allows
    return rebuilt(sample, shaped, list(sample.args)), f"input reshaped to {list(shaped.shape)} for that format"
