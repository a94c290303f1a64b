"""Explored sample i of a case: one of OpInfo's samples with an argument at a switch point and a
value class written into its tensors (docs/exploration.md).

The order is systematic, not a random walk: sample i takes point i mod P (P = the op's switch
points plus "no switch", in an order shuffled once per case id) with the value classes of round
i div P (CLASSES_PER_SAMPLE consecutive classes, rotated per point and per round), so the first P
samples put every switch point to work once, the next P again with the next classes, and every
point has met every class after len(CLASSES) / CLASSES_PER_SAMPLE rounds; a third of the samples
add a second switch point, so two switches meet. Everything random is drawn from `random.Random(f"{case_id}#{i}")`:
sample i is the same in every process and at every depth (a deeper run is a superset), and a
case id with an index reproduces it.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch

from torchcts.cases.explore import layout, magnitude, placement, values
from torchcts.cases.explore.switches import AtSize, SwitchPoint, op_positions, own_switches, switch_points
from torchcts.cases.opinfo.samples import rebuilt, tensors_of
from torchcts.oracle.categories import tolerance_category

# Base samples: the first few of OpInfo's, the large ones left out (exploration is about values
# and arguments, not sizes; the tiling and limits suites cover sizes).
MAX_BASES = 8
# ... chosen among OpInfo's first BASE_WINDOW samples (searchsorted's first 32 are all empty).
BASE_WINDOW = 64
MAX_BASE_ELEMENTS = 1024
ELEMENTWISE_INFOS = ("UnaryUfuncInfo", "BinaryUfuncInfo")  # OpInfo's classes of elementwise ops
SECOND_SWITCH = 3  # one sample in 3 also moves a second argument
CLASSES_PER_SAMPLE = 3  # value classes mixed into one sample (values.py)


@dataclass
class Explored:
    """One explored sample and how it was made (the recipe is shown in records and reports)."""

    index: int
    sample: Any  # a CPU SampleInput
    base: int  # the OpInfo sample index it varies
    switches: list[SwitchPoint]
    value_classes: tuple[str, ...]
    placed: str | None = None  # an operand moved off the device (placement.py) or expanded (layout.py)

    def recipe(self) -> str:
        moved = ", ".join(f"{_where(w)}={v!r}" for w, v in self.switches) or "no argument moved"
        where = f"; {self.placed}" if self.placed else ""
        return f"OpInfo sample {self.base}; {moved}; values {'+'.join(self.value_classes)}{where}"


def _where(where: Any) -> str:
    return f"arg{where}" if isinstance(where, int) else str(where)


@dataclass
class Plan:
    """What one op's explored samples are made from (the runner and the repro build it alike)."""

    bases: list[tuple[int, Any]]  # (OpInfo index, sample): usable_bases
    points: list[SwitchPoint]  # switches.switch_points, the op's own first
    hooked: int  # how many of the points are the op's own (switches.own_switches)
    rules: values.Policy
    positional: Mapping[str, int]  # switches.op_positions
    elementwise: bool = False  # a ufunc (OpInfo's Unary/BinaryUfuncInfo): any shape is an input of it
    dtype: torch.dtype | None = None  # the case's: no switch takes a base that carries it away from it

    def sample(self, case_id: str, index: int) -> Explored:
        return explored(case_id, index, self.bases, self.points, self.hooked, self.rules, self.positional,
                        self.elementwise, self.dtype)


def plan(op: Any, samples: Iterable[tuple[int, Any]], dtype: torch.dtype | None = None) -> Plan | None:
    """The op's exploration plan from its OpInfo samples of `dtype` (the first BASE_WINDOW); None: no base."""
    bases = usable_bases(list(itertools.islice(samples, BASE_WINDOW)))
    if not bases:
        return None
    return Plan(bases, switch_points(op, [s for _, s in bases]),
                sum(len(v) for v in own_switches(op.name).values()),
                values.policy(op.name, tolerance_category(op), op.variant_test_name), op_positions(op),
                type(op).__name__ in ELEMENTWISE_INFOS, dtype)


def carries(sample: Any, dtype: torch.dtype) -> bool:
    """Whether a sample exercises `dtype`: a tensor of it, or a factory's `dtype=` of it. A `dtype=`
    switch (or the shrinker dropping one) must not make eye(2, dtype=int32) of an int32 case into
    eye(2, dtype=float32): that call belongs to the float32 case, and its failure, reported as an int32
    one, sends the engineer to the wrong kernel (pytorch_ocl's eye of float32)."""
    return (sample.kwargs.get("dtype") == dtype
            or any(t.dtype == dtype for t in tensors_of((sample.input, sample.args, sample.kwargs))))


def usable_bases(samples: Sequence[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """The first MAX_BASES samples small enough to explore (the smallest one if none is), those with
    data first: OpInfo lists its empty samples first (searchsorted's first 8, eye's n=0), and an
    explored empty sample has nothing to compare (oracle/weak.py); EMPTY_BASES of them stay."""
    def size(s: Any) -> int:
        return sum(t.numel() for t in tensors_of((s.input, s.args, s.kwargs)))

    small = [(i, s) for i, s in samples if size(s) <= MAX_BASE_ELEMENTS]
    full = [p for p in small if not _empty(p[1])]
    small = (full[:MAX_BASES - EMPTY_BASES] + [p for p in small if _empty(p[1])][:EMPTY_BASES] + full)[:MAX_BASES]
    small.sort(key=lambda p: p[0])
    if small or not samples:
        return small
    return [min(samples, key=lambda p: size(p[1]))]


EMPTY_BASES = 1


def _empty(sample: Any) -> bool:
    """A sample with an empty tensor, or a factory's size 0 (eye(0))."""
    return (any(t.numel() == 0 for t in tensors_of((sample.input, sample.args, sample.kwargs)))
            or (type(sample.input) is int and sample.input == 0))


@functools.lru_cache(maxsize=64)
def _order(case_id: str, n_points: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The case's point order (index -1: no switch) and each point's first value class."""
    rng = random.Random(case_id)
    order = list(range(-1, n_points))
    rng.shuffle(order)
    offsets = tuple(rng.randrange(len(values.CLASSES)) for _ in order)
    return tuple(order), offsets


def explored(case_id: str, index: int, bases: Sequence[tuple[int, Any]], points: Sequence[SwitchPoint],
             hooked: int = 0, rules: values.Policy = values.Policy(),
             positional: Mapping[str, int] = MappingProxyType({}), elementwise: bool = False,
             dtype: torch.dtype | None = None) -> Explored:
    """Explored sample `index` of the case; `points` as switches.switch_points gave them, the first
    `hooked` of them the op's own (tried first, in their order); `rules` the op's values.policy;
    `positional` each keyword's position where the op takes it positionally (switches.positions);
    `elementwise`: a ufunc, whose tensors may be lifted to rank 5-6 (layout.py); `dtype` the case's,
    which a switch never takes away from a base that carries it (`carries`: the switch is left out)."""
    order, offsets = _order(case_id, len(points))
    order = tuple(range(hooked)) + tuple(p for p in order if p >= hooked or p < 0)
    slot, round_ = index % len(order), index // len(order)
    point = order[slot]
    n = len(values.CLASSES)
    first = offsets[slot] + round_ * CLASSES_PER_SAMPLE
    classes = tuple(values.CLASSES[(first + k) % n] for k in range(CLASSES_PER_SAMPLE))
    classes = ("plain",) if "plain" in classes and round_ == 0 and slot % 2 else tuple(c for c in classes if c != "plain")
    rng = random.Random(f"{case_id}#{index}")
    chosen = [points[point]] if point >= 0 else []
    if chosen and len(points) > 1 and rng.randrange(SECOND_SWITCH) == 0:
        other = points[rng.randrange(len(points))]
        if other[0] != chosen[0][0]:
            chosen.append(other)
    fits = [b for b in bases if all(_fits(b[1], w, positional) for w, _ in chosen)]
    if not fits and len(chosen) > 1:  # two switches no base takes together: the first alone
        chosen = chosen[:1]
        fits = [b for b in bases if _fits(b[1], chosen[0][0], positional)]
    fits = fits or list(bases)
    base_index, base = fits[rng.randrange(len(fits))]
    if dtype is not None and carries(base, dtype):
        chosen = [c for c in chosen if carries(with_switches(base, [c]), dtype)]
    sample = values.apply(with_switches(base, chosen), classes, rng, rules)
    sample, shaped = layout.fit_memory_format(sample)
    sample, placed = placement.place(sample, case_id, index) if rules.host_operands else (sample, None)
    sample, tiny = magnitude.near_zero(sample, case_id, index) if rules.near_zero else (sample, False)
    sample, expanded = layout.expand(sample, case_id, index)
    if expanded is None:
        sample, expanded = layout.relayout(sample, case_id, index, elementwise)
    if expanded is None:
        sample, expanded = layout.lazy_view(sample, case_id, index)
    where = "; ".join(w for w in (shaped, placed, expanded) if w) or None
    return Explored(index, sample, base_index, chosen, (*classes, "tiny") if tiny else classes, where)


def _fits(sample: Any, where: Any, positional: Mapping[str, int]) -> bool:
    """A positional switch needs the base to pass that argument; a keyword one needs the base not to
    pass it positionally already (eye(n, m) with `m=` on top is a TypeError, not a switch)."""
    if isinstance(where, int):
        return where < len(sample.args)
    return positional.get(where, len(sample.args) + 1) > len(sample.args)


def with_switches(sample: Any, switches: Sequence[SwitchPoint]) -> Any:
    """A shallow copy of a SampleInput with the switched arguments replaced (or added)."""
    args = list(sample.args)
    kwargs = dict(sample.kwargs)
    for where, value in switches:
        value = list(value) if isinstance(value, list) else value
        if isinstance(value, AtSize):
            value = _size_at(sample, where) + int(value)
        if isinstance(where, int):
            if where < len(args):
                args[where] = value
        else:
            kwargs[where] = value
    return rebuilt(sample, sample.input, args, kwargs)


def _size_at(sample: Any, where: Any) -> int:
    """The input's size at the sample's dimension (its `dim` keyword, else another int argument,
    else the last), 1 for a scalar: what an `AtSize` point counts from."""
    inp = sample.input
    if not isinstance(inp, torch.Tensor) or inp.dim() == 0:
        return 1
    dim = sample.kwargs.get("dim")
    if not isinstance(dim, int) or isinstance(dim, bool):
        others = [a for i, a in enumerate(sample.args) if i != where and isinstance(a, int) and not isinstance(a, bool)]
        dim = others[0] if others else -1
    return int(inp.shape[dim]) if -inp.dim() <= dim < inp.dim() else int(inp.shape[-1])


def requiring_grad(sample: Any) -> Any:
    """A copy whose floating strided tensors require grad (the backward variant's inputs)."""
    def one(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.layout == torch.strided and (x.is_floating_point() or x.is_complex()):
            return x.detach().clone().requires_grad_(True)
        if isinstance(x, list):
            return [one(v) for v in x]
        if type(x) is tuple:
            return tuple(one(v) for v in x)
        return x

    return rebuilt(sample, one(sample.input), [one(a) for a in sample.args], {k: one(v) for k, v in sample.kwargs.items()})
