"""The truth of an OpInfo sample: the same op on CPU with its floating inputs widened to float64
(complex to complex128), for the forward kind's comparison (docs/oracles.md, "Truth beyond CPU").

Widening the inputs is exact, so the result is the op's answer to the very problem the device
solved, rounded 29 or more bits finer than float32. There is no truth where widening changes what
the op means or its cost would be large: the reasons below are recorded (`precision.no_truth`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torchcts.cases.observe import unobserved
from torchcts.cases.opinfo.samples import copy_sample, leaves_of
from torchcts.compat import opinfo_dtypes
from torchcts.oracle.opfacts import FACTS
from torchcts.oracle.precision import STRICT_CATEGORIES
from torchcts.oracle.truth import Truth, truth_dtype

# No truth for samples with more input elements than this: the float64 run would cost more than
# the case itself (OpInfo's samples are far smaller).
MAX_TRUTH_NUMEL = 1 << 20
# The sensitivity runs the op once more per floating input; none for ops with more of them.
MAX_PERTURBED = 4

# Tolerance categories without a truth: linalg results are unique only up to signs and phases,
# which float32 and float64 LAPACK choose independently.
NO_TRUTH_CATEGORIES = frozenset({"linalg"})


def _widen(x: Any, keep_grad: bool = False) -> Any:
    """`keep_grad`: a widened input keeps needing grad (the backward kind's truth differentiates it)."""
    if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()):
        wide = truth_dtype(x.dtype)
        out = x.detach().to(wide) if wide is not None else x.detach()
        return out.requires_grad_(x.requires_grad) if keep_grad else out
    return x


def why_no_truth(op: Any, sample: Any, dtype: torch.dtype, category: str) -> str | None:
    """Why this sample gets no truth, None when it does."""
    wide = truth_dtype(dtype)
    if wide is None:
        return f"no dtype wider than {str(dtype).removeprefix('torch.')} on CPU"
    no_truth = FACTS.get("no_truth", op.name)  # its float64 result is another answer (oracle/opfacts)
    if no_truth is not None:
        return str(no_truth)
    if category in NO_TRUTH_CATEGORIES:
        return f"{category} results are unique only up to signs and phases"
    if wide not in opinfo_dtypes(op, "cpu"):
        return f"the op declares no {str(wide).removeprefix('torch.')} CPU kernel"
    leaves = leaves_of((sample.input, tuple(sample.args), dict(sample.kwargs)))
    if any(isinstance(x, torch.dtype) for x in leaves):
        return "the sample fixes a dtype"
    if sum(x.numel() for x in leaves if isinstance(x, torch.Tensor)) > MAX_TRUTH_NUMEL:
        return f"the sample has more than {MAX_TRUTH_NUMEL} input elements"
    return None


def _is_float(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())


def _sensitivity(fn: Any, wide: tuple[Any, ...], value: Any, eps: float,
                 move: Callable[[torch.Tensor, float], torch.Tensor] = lambda x, eps: x * (1 + eps)) -> Any:
    """The summed |f(.., move(x), ..) - f(..)| over each floating input x in turn (by default
    x (1 + eps)), shaped like `value`'s floating leaves (None elsewhere); None when it cannot be measured."""
    leaves, spec = pytree.tree_flatten(wide)
    moved_at = [i for i, x in enumerate(leaves) if _is_float(x)]
    out, out_spec = pytree.tree_flatten(value)
    if not moved_at or len(moved_at) > MAX_PERTURBED:
        return None
    total: list[Any] = [torch.zeros(t.shape, dtype=torch.float64) if _is_float(t) and t.layout == torch.strided
                        else None for t in out]
    for i in moved_at:
        moved = list(leaves)
        moved[i] = move(leaves[i], eps)
        inp, args, kwargs = pytree.tree_unflatten(moved, spec)
        again, again_spec = pytree.tree_flatten(fn(inp, *args, **kwargs))
        if again_spec != out_spec:
            return None
        for k, (a, t) in enumerate(zip(again, out, strict=True)):
            if total[k] is not None:
                if not (isinstance(a, torch.Tensor) and a.shape == t.shape and a.layout == torch.strided):
                    return None
                total[k] += torch.nan_to_num((a - t).abs().to(torch.float64), nan=float("inf"))
    return pytree.tree_unflatten(total, out_spec)


def _mixed_move(bit: int) -> Callable[[torch.Tensor, float], torch.Tensor]:
    """Each element x[i] to x[i] (1 + eps) or x[i] (1 - eps), by bit `bit` of i."""
    def move(x: torch.Tensor, eps: float) -> torch.Tensor:
        signs = (1 - 2 * ((torch.arange(x.numel()) >> bit) & 1)).reshape(x.shape)
        return x * (1 + eps * signs.to(x.real.dtype if x.is_complex() else x.dtype))
    return move


def spread(fn: Any, wide: tuple[Any, ...], value: Any, eps: float) -> Any:
    """The most the truth moves, per result element, when each floating input's elements move by one
    eps with mixed signs, one pattern per bit of their index (any two elements move apart in one):
    where the inputs' terms cancel (+-FLT_MAX beside -1.45 in var's mean, which float64 also rounds
    away in one summation order and keeps in another) that is the error some order of summation
    makes, so no answer there is the reference (oracle/truth.py: judge_leaf)."""
    largest = max((x.numel() for x in pytree.tree_leaves(wide) if _is_float(x)), default=1)
    found = [_sensitivity(fn, wide, value, eps, _mixed_move(bit)) for bit in range(max(1, (largest - 1).bit_length()))]
    if any(f is None for f in found):
        return None
    leaves = [pytree.tree_flatten(f)[0] for f in found]
    most = [None if column[0] is None else torch.stack(list(column)).amax(0) for column in zip(*leaves, strict=True)]
    return pytree.tree_unflatten(most, pytree.tree_flatten(found[0])[1])


@unobserved()  # oracle work, not the device's (cases/observe.py)
def truth_of(op: Any, fn: Any, sample: Any, dtype: torch.dtype, category: str, *, keep_grad: bool = False) -> Truth:
    """The op's result on the widened CPU sample, or why there is none; for pointwise ops
    (STRICT_CATEGORIES) also its sensitivity to the inputs' rounding, measured when first asked
    for. Never raises: a truth that cannot be computed is recorded as missing, never a verdict.
    `keep_grad`: inputs that need grad still do once widened (`fn` takes gradients)."""
    try:
        return _truth(op, fn, sample, dtype, category, keep_grad)
    except Exception as exc:  # noqa: BLE001 - TorchCTS's own measuring must not decide a case
        return Truth(missing=f"computing the truth raised {type(exc).__name__}")


def _truth(op: Any, fn: Any, sample: Any, dtype: torch.dtype, category: str, keep_grad: bool) -> Truth:
    why = why_no_truth(op, sample, dtype, category)
    if why is not None:
        return Truth(missing=why)
    cpu = copy_sample(sample, "cpu")
    wide = pytree.tree_map(lambda x: _widen(x, keep_grad), (cpu.input, tuple(cpu.args), dict(cpu.kwargs)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = fn(wide[0], *wide[1], **wide[2])
        except Exception as exc:  # noqa: BLE001 - any rejection of the widened sample leaves no truth
            return Truth(missing=f"the float64 CPU run raises {type(exc).__name__}")
    eps = torch.finfo(dtype.to_real() if dtype.is_complex else dtype).eps

    def quietly(measuring: Callable[..., Any]) -> Callable[[], Any]:
        def measured() -> Any:  # only when an element needs it (oracle/truth.py: judge_leaf)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return measuring(fn, wide, value, eps)
        return measured

    return Truth(value=value, measure=quietly(_sensitivity) if category in STRICT_CATEGORIES else None,
                 measure_spread=quietly(spread))
