"""Value classes: the values OpInfo's samples rarely hold, written into a sample's tensors.

An explored sample gets a few classes at once (generate.py: CLASSES_PER_SAMPLE); they share about
two thirds of the elements of every tensor they apply to, the rest keep OpInfo's values (made by
`torch.testing.make_tensor`), so the op still sees ordinary values beside them; `plain` alone
keeps OpInfo's values whole, so argument switch points also meet ordinary inputs:

    signed_zero  +0.0 and -0.0 (floating, complex)
    subnormal    values below the dtype's smallest normal, both signs, and the smallest normal
    halfway      values exactly halfway between two representable values: k + 0.5 for rounding,
                 ties of the next narrower float type (float16/bfloat16 ulps at 1.0, float32's at
                 1.0), odd integers for integer halving and division
    ties         few distinct values, many duplicates (sort, topk, mode, unique, max/argmax)
    extremes     finfo max/min/eps/-max, iinfo min/max, all-True/all-False for bool
    nonfinite    NaN, +Inf, -Inf (floating, complex)
    index_ends   integer tensors other than the input at 0, the last valid index, and -1
    uniform      a whole tensor of one special value (-inf, +inf, NaN, 0, the dtype's extremes):
                 every slice of a reduction, every window of a scan holds only that value

All randomness comes from the explored sample's own generator, so sample i of a case is the
same in every process.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from torchcts.cases.opinfo.samples import HostArg, rebuilt
from torchcts.oracle.opfacts import FACTS

CLASSES: tuple[str, ...] = ("plain", "signed_zero", "subnormal", "halfway", "ties", "extremes", "nonfinite",
                            "index_ends", "uniform")


def _floating(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


# Inputs CPU itself cannot take, so there is no reference (the worker would die before one):
# ops that divide integers trap (SIGFPE) on INT_MIN / -1, INT_MIN % -1 and lcm's overflows, so
# their integer tensors get no `extremes` (op facts of kind `int_dividing`);
# ops whose output size is a value of their input (bincount of iinfo.max allocates 16 GB) and the
# special polynomials (they loop n times for degree n) get no `extremes` at all (op facts of kind
# `extremes_unbounded`);
# LAPACK-backed ops and the grid samplers read out of bounds, crash or loop on non-finite or huge
# values, and duplicates, zeros and subnormals make their matrices singular or ill-conditioned, whose
# solutions are not unique, so they keep OpInfo's values and explore their arguments only (category
# "linalg", or op facts of kind `values_kept`: a word of the name or variant);
# and these keep OpInfo's values in their integer arguments: ops whose result depends on the order
# duplicate indices are written in (scatter without reduction, index_put/put without accumulate,
# index_copy) legitimately differ between devices, and ops whose CPU kernel trusts its integer
# arguments (CTC lengths, segment offsets, LAPACK pivots: linalg and the unbounded-unsafe words)
# abort or read out of bounds instead of raising (op facts of kind `integer_args_kept`).


@dataclass(frozen=True)
class Policy:
    """Which classes an op's explored samples may hold (see the three rules above)."""

    excluded: frozenset[str] = frozenset()
    int_min: bool = True
    index_args: bool = True
    near_zero: bool = False  # an op accurate near zero by design: tiny inputs too (magnitude.py)
    host_operands: bool = True  # a 0-dim operand may move to the host (placement.py; op facts: one_device)


def policy(op_name: str, category: str = "", variant: str = "") -> Policy:
    lapack = category == "linalg" or FACTS.has("values_kept", op_name, variant)
    excluded = set(CLASSES) - {"plain"} if lapack else set()
    if FACTS.has("extremes_unbounded", op_name.split(".")[0]) or FACTS.has("extremes_unbounded", op_name, variant):
        excluded.update(("extremes", "uniform"))  # a whole tensor at an extreme is an extreme too
    return Policy(frozenset(excluded), not FACTS.has("int_dividing", op_name),
                  not lapack and not FACTS.has("integer_args_kept", op_name), FACTS.has("near_zero", op_name),
                  not FACTS.has("one_device", op_name))


def _pool(cls: str, dtype: torch.dtype, index_size: int, int_min: bool = True) -> list[float] | None:
    """The values a class writes into a tensor of `dtype` (None: the class does not apply);
    `int_min=False`: no integer extremes (INT_DIVIDING)."""
    if dtype == torch.bool:
        return {"ties": [True], "extremes": [False]}.get(cls)
    if dtype.is_floating_point or dtype.is_complex:
        real = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}
        fi = torch.finfo(real.get(dtype, dtype))
        tiny = fi.smallest_normal
        pools = {
            "signed_zero": [0.0, -0.0],
            "subnormal": [tiny / 2, -tiny / 2, tiny / 4, tiny, -tiny, tiny * (1 - fi.eps)],
            "halfway": [0.5, -0.5, 1.5, 2.5, -2.5, 1 + 2.0 ** -11, 1 + 2.0 ** -8, 1 + 2.0 ** -24, 1 + 3 * 2.0 ** -11],
            "ties": [1.0, -1.0],
            "extremes": [fi.max, fi.min, -fi.eps, fi.eps, 1 / fi.eps],
            "nonfinite": [float("nan"), float("inf"), float("-inf")],
        }
        return pools.get(cls)
    ii = torch.iinfo(dtype)
    pools_int: dict[str, list[float]] = {
        "halfway": [v for v in (1, -1, 3, -3, 2, -2) if ii.min <= v <= ii.max],
        "ties": [max(ii.min, -1) if ii.min < 0 else 0, 1],
        "extremes": [ii.min, ii.max, ii.min + 1, ii.max - 1] if int_min else [],
        "signed_zero": [0],
        "index_ends": [0, max(index_size - 1, 0), -1 if ii.min < 0 else 0],
    }
    return pools_int.get(cls)


def _uniform_pool(dtype: torch.dtype, int_min: bool = True) -> list[float]:
    """The one value a `uniform` tensor holds."""
    if dtype == torch.bool:
        return [True, False]
    if dtype.is_floating_point or dtype.is_complex:
        real = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}
        fi = torch.finfo(real.get(dtype, dtype))
        return [float("-inf"), float("inf"), float("nan"), 0.0, -0.0, fi.max, fi.min]
    ii = torch.iinfo(dtype)
    return [0, ii.max, ii.min] if int_min else [0]


def rewrite(t: torch.Tensor, classes: Sequence[str], rng: random.Random, index_size: int = 1,
            is_input: bool = True, int_min: bool = True) -> torch.Tensor:
    """A copy of CPU tensor `t` with about two thirds of its elements from `classes` (each class an
    equal share, the rest OpInfo's), or t itself when no class applies to its dtype or it has no
    elements. `index_ends` applies only to integer tensors that are not the op's input."""
    if t.layout != torch.strided or t.numel() == 0 or t.device.type == "meta":
        return t
    if "uniform" in classes and is_input:
        pool = _uniform_pool(t.dtype, int_min)
        if pool:
            with torch.no_grad():
                out = torch.full_like(t.detach(), pool[rng.randrange(len(pool))])
            return out.requires_grad_(t.requires_grad)
    pools = []
    for cls in classes:
        if cls == "plain" or cls == "index_ends" and (is_input or _floating(t) or t.dtype == torch.bool):
            continue
        pool = _pool(cls, t.dtype, index_size, int_min)
        if pool:
            pools.append((cls, pool))
    if not pools:
        return t
    out = t.detach().clone().contiguous()
    flat = out.view(-1)
    n = flat.numel()
    order = list(range(n))
    rng.shuffle(order)
    keep = n // 3 if n >= 3 else 0
    positions = sorted(order[keep:])
    values: list[float] = []
    for k, _ in enumerate(positions):
        cls, pool = pools[k % len(pools)]
        value = pool[rng.randrange(len(pool))]
        if cls == "ties" and t.dtype != torch.bool and rng.random() < 0.5:  # duplicates of its own values too
            own = flat[order[rng.randrange(n)]]
            value = float(own.real if t.is_complex() else own)
        values.append(value)
    with torch.no_grad():
        flat[torch.tensor(positions, dtype=torch.long)] = torch.tensor(values, dtype=torch.float64).to(t.dtype)
    return out.requires_grad_(t.requires_grad)


def index_size(sample: Any) -> int:
    """The size an index argument of this sample addresses: the input's size at the sample's `dim`
    (a keyword, else the first int argument), else its smallest size."""
    inp = sample.input
    if not isinstance(inp, torch.Tensor) or inp.dim() == 0:
        return 1
    dim = sample.kwargs.get("dim")
    if not isinstance(dim, int):
        dim = next((a for a in sample.args if isinstance(a, int) and not isinstance(a, bool)), None)
    if isinstance(dim, int) and -inp.dim() <= dim < inp.dim():
        return int(inp.shape[dim])
    return int(min(inp.shape))


def apply(sample: Any, classes: Sequence[str], rng: random.Random, rules: Policy = Policy()) -> Any:
    """A copy of a CPU SampleInput with `classes` written into its tensors (input, args, kwargs)."""
    size = index_size(sample)
    classes = [c for c in classes if c not in rules.excluded]

    def one(x: Any, is_input: bool) -> Any:
        if isinstance(x, torch.Tensor):
            if not is_input and not rules.index_args and not (x.is_floating_point() or x.is_complex()):
                return x
            return rewrite(x, classes, rng, size, is_input, rules.int_min)
        if isinstance(x, HostArg):
            return x
        if isinstance(x, list):
            return [one(v, is_input) for v in x]
        if isinstance(x, tuple) and type(x) is tuple:
            return tuple(one(v, is_input) for v in x)
        return x

    return rebuilt(sample, one(sample.input, True), [one(a, False) for a in sample.args],
                   {k: one(v, False) for k, v in sample.kwargs.items()})
