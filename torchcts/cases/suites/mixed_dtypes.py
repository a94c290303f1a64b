"""Level 3 mixed dtypes: ops with two or more tensor inputs whose dtypes differ.

OpInfo builds every tensor of a sample in one dtype, so a kernel that casts its inputs to the
first input's dtype, picks the wrong result dtype, or reads an int32 index as int64 passes every
OpInfo case. Each case here takes one dtype (the case's) for the first input and runs the op
against every other claimed dtype for the second (`dtypes/promotion/*` already covers add, sub,
mul and div pair by pair); index ops take each index dtype (INDEX_DTYPES). CPU is the oracle of
the result dtype, the values, and of which combinations are errors: where CPU raises, the device
must raise the same exception type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import ALL_DTYPES, CaseContext, CaseSet, NotApplicable, dtype_of, on_cpu, run_both, sample

SUITE = CaseSet("mixed_dtypes")
cases = SUITE.cases
LEVEL = 3
INDEX_DTYPES = ("int64", "int32")


def _nonzero(t: torch.Tensor) -> torch.Tensor:
    """Divisors and exponents: no zero (integer division by zero raises), no negative integer
    exponent (CPU refuses it), so the values, not an error, are compared."""
    t = torch.where(t == 0, torch.ones_like(t), t)
    return t.abs() if not (t.is_floating_point() or t.is_complex() or t.dtype == torch.bool) else t


# name -> (fn(*args), aten ops, args(a, b)); a has the case's dtype, b each other claimed dtype. `args`
# prepares the op's arguments from the CPU samples, on CPU (default: a, b): no op but the one under
# test runs on the device, so a gap in abs or where is never reported against fmod or clamp.
Args = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, ...]]


def _positive_exponent(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return a, _nonzero(b) if not b.is_floating_point() else b.abs().clamp(max=3)


def _where_args(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.arange(a.numel()).reshape(a.shape) % 3 == 0, a, b


def _clamp_args(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return a, b, b + 5 if b.dtype != torch.bool else b


def _agreeing(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """eq: every other element of `a` holds b's value (cast to a's dtype), so some compare equal: random
    operands of two dtypes never do, and an all-False reference proves nothing (docs/oracles.md)."""
    a, src = a.clone(), b.reshape(-1)[::2]
    a.view(-1)[::2] = (src.real if src.is_complex() and not a.is_complex() else src).to(a.dtype)
    return a, b


def _nonzero_b(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return a, _nonzero(b)


PAIRWISE: dict[str, tuple[Callable[..., Any], tuple[str, ...], Args | None]] = {
    "atan2": (torch.atan2, ("aten::atan2",), None),
    "fmod": (torch.fmod, ("aten::fmod",), _nonzero_b),
    "remainder": (torch.remainder, ("aten::remainder",), _nonzero_b),
    "floor_divide": (torch.floor_divide, ("aten::floor_divide",), _nonzero_b),
    "pow": (torch.pow, ("aten::pow",), _positive_exponent),
    "maximum": (torch.maximum, ("aten::maximum",), None),
    "minimum": (torch.minimum, ("aten::minimum",), None),
    "eq": (torch.eq, ("aten::eq",), _agreeing),
    "lt": (torch.lt, ("aten::lt",), None),
    "bitwise_and": (torch.bitwise_and, ("aten::bitwise_and",), None),
    "logical_and": (torch.logical_and, ("aten::logical_and",), None),
    "hypot": (torch.hypot, ("aten::hypot",), None),
    "copysign": (torch.copysign, ("aten::copysign",), None),
    "where": (torch.where, ("aten::where",), _where_args),
    "addcmul": (lambda a, b: torch.addcmul(a, b, b, value=2), ("aten::addcmul",), None),
    "lerp": (lambda a, b: torch.lerp(a, b, 0.25), ("aten::lerp",), None),
    "clamp": (lambda a, lo, hi: torch.clamp(a, min=lo, max=hi), ("aten::clamp",), _clamp_args),
    "cat": (lambda a, b: torch.cat([a, b[:2]]), ("aten::cat",), None),
    "stack": (lambda a, b: torch.stack([a, b]), ("aten::stack",), None),
}


def each_dtype(ctx: CaseContext, key: str, names: tuple[str, ...], body: Callable[[torch.dtype], None]) -> None:
    """body for each claimed dtype name; one without a CPU kernel (no reference) is recorded under
    `no_cpu_kernel` and the rest still run. not_applicable only when none could be checked."""
    checked, missing = [], []
    for name in names:
        if not ctx.claims_dtype(name):
            continue
        ctx.describe(**{key: name})
        try:
            body(dtype_of(name))
        except NotApplicable:
            missing.append(name)
            continue
        checked.append(name)
    ctx.info.pop(key, None)
    ctx.info.update({f"{key}s_checked": checked, **({"no_cpu_kernel": missing} if missing else {})})
    if not checked:
        ctx.not_applicable(f"CPU has no kernel for any claimed {key} ({', '.join(missing)}): no reference")


def pairwise(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    fn, _, args = PAIRWISE[op]
    a = sample((4, 5), dtype, ctx.seed)

    def check(other: torch.dtype) -> None:
        b = sample((4, 5), other, ctx.seed + 1)
        run_both(ctx, fn, *(on_cpu(args, a, b) if args else (a, b)))

    each_dtype(ctx, "other_dtype", ALL_DTYPES, check)


for _op, (_fn, _ops, _args) in PAIRWISE.items():
    SUITE.case(f"pair/{_op}", level=LEVEL, dtypes=ALL_DTYPES, ops=_ops, params={"others": {"op": _op}})(pairwise)


Index = Callable[..., torch.Tensor]  # ix(values, shape=None): an index tensor on the input's device

# name -> fn(x (4, 5) of the case's dtype, src (same dtype), ix)
INDEXING: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor, Index], Any], tuple[str, ...]]] = {
    "index_select": (lambda x, s, ix: torch.index_select(x, 1, ix((4, 0, 2, 4))), ("aten::index_select",)),
    "gather": (lambda x, s, ix: torch.gather(x, 1, ix((4, 0, 1, 3, 2, 2, 0, 1), (4, 2))), ("aten::gather",)),
    "take": (lambda x, s, ix: torch.take(x, ix((19, 0, 7))), ("aten::take",)),
    "take_along_dim": (lambda x, s, ix: torch.take_along_dim(x, ix((3, 1, 0, 2, 1), (1, 5)), 0),
                       ("aten::take_along_dim",)),
    "getitem": (lambda x, s, ix: x[ix((3, 0, 3))], ("aten::index",)),
    "index_put": (lambda x, s, ix: x.index_put((ix((1, 3)),), s[:2]), ("aten::index_put",)),
    "index_add": (lambda x, s, ix: x.index_add(0, ix((2, 0, 2)), s[:3]), ("aten::index_add",)),
    "index_copy": (lambda x, s, ix: x.index_copy(0, ix((3, 1)), s[:2]), ("aten::index_copy",)),
    "scatter": (lambda x, s, ix: x.scatter(1, ix((4, 0, 2, 1), (2, 2)), s[:2, :2]), ("aten::scatter",)),
    "scatter_add": (lambda x, s, ix: x.scatter_add(0, ix((3, 0, 3, 1, 1), (1, 5)), s[:1]), ("aten::scatter_add",)),
}


def indexing(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    """The op with each claimed index dtype: CPU's result, or CPU's exception type."""
    fn, _ = INDEXING[op]
    x, src = sample((4, 5), dtype, ctx.seed), sample((4, 5), dtype, ctx.seed + 1)

    def check(it: torch.dtype) -> None:
        def call(a: torch.Tensor, b: torch.Tensor) -> Any:
            def ix(values: tuple[int, ...], shape: tuple[int, ...] | None = None) -> torch.Tensor:
                t = torch.tensor(values, dtype=it)
                return (t.reshape(shape) if shape else t).to(a.device)

            return fn(a, b, ix)

        run_both(ctx, call, x, src)

    each_dtype(ctx, "index_dtype", INDEX_DTYPES, check)


for _op, (_fn, _ops) in INDEXING.items():
    SUITE.case(f"index/{_op}", level=LEVEL, dtypes=ALL_DTYPES, ops=_ops,
               params={"index_dtypes": {"op": _op}})(indexing)
