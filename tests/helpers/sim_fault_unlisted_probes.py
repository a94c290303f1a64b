"""Run as a script: each unlisted fault (torchcts/sim/faults_unlisted.py) is wrong in its narrow
situation and right beside it.

Per fault, `hit` is the situation the bug lives in and `beside` its neighbours (the same op one
argument or value class away, or another dtype). Each probe computes on the sim and on CPU and
says whether they agree exactly (values, dtype, shape, NaN positions, zero signs). Clean, every
probe agrees; with the fault planted, `hit` disagrees and every `beside` still agrees.
Prints one line per fault, "<name> ok" or "<name> FAIL: why", then "DONE".
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

import torchcts.sim  # noqa: F401 - registers the device
from torchcts.sim import faults, tensor

S = "sim"
F32, F64 = torch.float32, torch.float64


def same(a: Any, b: Any) -> bool:
    """Exact agreement of two results (tensors or tuples of them), zero signs and NaNs included."""
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    a = a.cpu()
    if (a.dtype, a.shape) != (b.dtype, b.shape):
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)) and torch.equal(
        torch.signbit(a), torch.signbit(b))


def agrees(fn: Callable[..., Any], *inputs: torch.Tensor, **kwargs: Any) -> bool:
    """fn on the sim copies of inputs agrees with fn on the CPU inputs."""
    return same(fn(*(x.to(S) for x in inputs), **kwargs), fn(*inputs, **kwargs))


def t(values: Any, dtype: torch.dtype = F32) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def grad_of(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    def g(x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_(True)
        fn(x).sum().backward()
        return x.grad

    return g


ROWS = t([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 1.0]])
NO_TIES = t([[1.0, 3.0, 2.0, 0.0], [4.0, 2.0, 5.0, 1.0]])
INT32_MIN = -(2**31)
NEG_INF = float("-inf")
TIE_BF16 = 1 + 2**-8  # halfway between bfloat16's 1 and 1 + 2^-7 (1 is even)

# fault -> (hit, beside): hit must disagree under the fault, every beside probe agree
PROBES: dict[str, tuple[Callable[[], bool], tuple[Callable[[], bool], ...]]] = {
    "round_half_away": (
        lambda: agrees(torch.round, t([0.5, 1.5, 2.5, -0.5, -2.5])),
        (lambda: agrees(torch.round, t([0.4, 0.6, 1.49, -2.51, 3.0])),
         lambda: agrees(torch.round, t([0.5, 2.5, -0.5], F64)),
         lambda: agrees(lambda x: torch.round(x, decimals=0), t([0.5, 2.5])))),
    "div_floor_exact_negative": (
        lambda: agrees(lambda a, b: torch.div(a, b, rounding_mode="floor"), t([-6.0, 5.0]), t([3.0, -1.0])),
        (lambda: agrees(lambda a, b: torch.div(a, b, rounding_mode="floor"), t([-7.0, 6.0]), t([3.0, 3.0])),
         lambda: agrees(lambda a, b: torch.div(a, b, rounding_mode="trunc"), t([-6.0]), t([3.0])),
         lambda: agrees(lambda a, b: torch.div(a, b, rounding_mode="floor"), t([-6.0], F64), t([3.0], F64)),
         lambda: agrees(torch.div, t([-6.0]), t([3.0])))),
    "copysign_negative_zero": (
        lambda: agrees(torch.copysign, t([1.0, 2.0]), t([-0.0, -0.0])),
        (lambda: agrees(torch.copysign, t([1.0, 2.0]), t([-1.0, 0.0])),
         lambda: agrees(lambda a: torch.copysign(a, -1.0), t([1.0, -2.0])),
         lambda: agrees(torch.copysign, t([1.0, 2.0], F64), t([-0.0, -0.0], F64)))),
    "log_subnormal_as_zero": (
        lambda: agrees(torch.log, t([1e-40, 1.0])),
        (lambda: agrees(torch.log, t([torch.finfo(F32).tiny, 0.0, -0.0, 2.0, -1.0])),
         lambda: agrees(torch.log, t([1e-310, 1e-40], F64)),
         lambda: agrees(torch.log2, t([1e-40])))),
    "bfloat16_cast_ties_up": (
        lambda: agrees(lambda x: x.to(torch.bfloat16), t([TIE_BF16, -TIE_BF16])),
        (lambda: agrees(lambda x: x.to(torch.bfloat16), t([1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, 1.5])),
         lambda: agrees(lambda x: x.to(torch.bfloat16), t([TIE_BF16], F64)),
         lambda: agrees(lambda x: x.to(torch.float16), t([1 + 2**-11])))),
    "max_dim_last_tie": (
        lambda: agrees(lambda x: torch.max(x, 1), ROWS),
        (lambda: agrees(lambda x: torch.max(x, 1), NO_TIES),
         lambda: agrees(lambda x: torch.max(x, 1), t([[float("nan"), 1.0, float("nan")]])),
         lambda: agrees(lambda x: torch.max(x, 1), ROWS.to(F64)),
         lambda: agrees(lambda x: torch.min(x, 1), ROWS),
         lambda: agrees(torch.max, ROWS))),
    "sort_descending_reversed": (
        lambda: agrees(lambda x: torch.sort(x, descending=True, stable=True), ROWS),
        (lambda: agrees(lambda x: torch.sort(x, descending=False, stable=True), ROWS),
         lambda: agrees(lambda x: torch.sort(x, descending=True, stable=True), NO_TIES),
         lambda: agrees(lambda x: torch.sort(x, descending=True, stable=True), ROWS.to(F64)))),
    "leaky_relu_backward_zero": (
        lambda: agrees(grad_of(lambda x: torch.nn.functional.leaky_relu(x, 0.1)), t([0.0, -0.0, 1.0])),
        (lambda: agrees(grad_of(lambda x: torch.nn.functional.leaky_relu(x, 0.1)), t([-1.0, 1e-30, -1e-30])),
         lambda: agrees(grad_of(lambda x: torch.nn.functional.leaky_relu(x, 0.1)), t([0.0, -0.0], F64)),
         lambda: agrees(lambda x: torch.nn.functional.leaky_relu(x, 0.1), t([0.0, -0.0, -1.0])))),
    "mean_empty_dims": (
        lambda: agrees(lambda x: torch.mean(x, dim=[]), NO_TIES),
        (lambda: agrees(torch.mean, NO_TIES),
         lambda: agrees(lambda x: torch.mean(x, dim=[0]), NO_TIES),
         lambda: agrees(lambda x: torch.mean(x, dim=[-1], keepdim=True), NO_TIES),
         lambda: agrees(lambda x: torch.sum(x, dim=[]), NO_TIES))),
    "logsumexp_all_neg_inf": (
        lambda: agrees(lambda x: torch.logsumexp(x, 1), t([[NEG_INF, NEG_INF], [0.0, NEG_INF]])),
        (lambda: agrees(lambda x: torch.logsumexp(x, 1), t([[NEG_INF, 1.0], [0.0, 88.0]])),
         lambda: agrees(lambda x: torch.logsumexp(x, 0), t([float("nan"), NEG_INF])),
         lambda: agrees(lambda x: torch.logsumexp(x, 1), t([[NEG_INF, NEG_INF]], F64)),
         lambda: agrees(lambda x: torch.amax(x, 1), t([[NEG_INF, NEG_INF]])))),
    "abs_int32_min_saturates": (
        lambda: agrees(torch.abs, t([INT32_MIN, -5], torch.int32)),
        (lambda: agrees(torch.abs, t([INT32_MIN + 1, -5, 7], torch.int32)),
         lambda: agrees(torch.abs, t([-(2**63), INT32_MIN], torch.int64)),
         lambda: agrees(torch.abs, t([-(2**15)], torch.int16)))),
    "neg_int64_low_word": (
        lambda: agrees(torch.neg, t([2**40, -5], torch.int64)),
        (lambda: agrees(torch.neg, t([INT32_MIN + 1, -5, 7, 2**31 - 1], torch.int64)),
         lambda: agrees(torch.neg, t([INT32_MIN, 5], torch.int32)),
         lambda: agrees(torch.abs, t([2**40, -(2**63)], torch.int64)),
         lambda: agrees(lambda x: torch.sub(0, x), t([2**40], torch.int64)))),
    "pow_host_exponent_truncated": (
        lambda: same(torch.pow(t([2.0, 3.0]).to(S), t(2.5)), torch.pow(t([2.0, 3.0]), t(2.5))),
        (lambda: agrees(torch.pow, t([2.0, 3.0]), t(2.5)),
         lambda: agrees(lambda x: torch.pow(x, 2.5), t([2.0, 3.0])),
         lambda: same(torch.pow(t([2.0, 3.0]).to(S), t(2.0)), torch.pow(t([2.0, 3.0]), t(2.0))))),
    "sum_dtype_wraps_in_input": (
        lambda: agrees(lambda x: torch.sum(x, dtype=torch.int64), t([100, 100, 100], torch.int8)),
        (lambda: agrees(torch.sum, t([100, 100, 100], torch.int8)),
         lambda: agrees(lambda x: torch.sum(x, dtype=torch.int64), t([100, 100, 100], torch.int32)),
         lambda: agrees(lambda x: torch.sum(x, dtype=torch.int64), t([1, 2, 3], torch.int8)))),
    "log1p_naive": (
        lambda: agrees(torch.log1p, t([1e-10, -3e-9, 0.5])),
        (lambda: agrees(torch.log1p, t([1e-10, -3e-9], F64)),
         lambda: agrees(torch.log, t([1e-10, 0.5])),
         lambda: agrees(torch.expm1, t([1e-10])))),
    "atan2_stride0_as_scalar": (
        lambda: agrees(lambda a, b: torch.atan2(a, b.expand(3, 2)), t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                       t([[1.0], [2.0], [3.0]])),
        (lambda: agrees(torch.atan2, t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 1.0], [2.0, 2.0]])),
         lambda: agrees(lambda a, b: torch.atan2(a, b.expand(3, 2)), t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], F64),
                        t([[1.0], [2.0], [3.0]], F64)),
         lambda: agrees(lambda a, b: torch.hypot(a, b.expand(3, 2)), t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                        t([[1.0], [2.0], [3.0]])))),
    "sigmoid_rank5_memory_order": (
        lambda: agrees(lambda x: torch.sigmoid(x.permute(4, 3, 2, 1, 0).contiguous().permute(4, 3, 2, 1, 0)),
                       torch.randn(2, 3, 2, 2, 2)),
        (lambda: agrees(lambda x: torch.sigmoid(x.permute(3, 2, 1, 0).contiguous().permute(3, 2, 1, 0)),
                        torch.randn(2, 3, 2, 2)),
         lambda: agrees(torch.sigmoid, torch.randn(2, 3, 2, 2, 2)),
         lambda: agrees(lambda x: torch.sigmoid(x.permute(4, 3, 2, 1, 0).contiguous().permute(4, 3, 2, 1, 0)),
                        torch.randn(2, 3, 2, 2, 2, dtype=F64)),
         lambda: agrees(lambda x: torch.tanh(x.permute(4, 3, 2, 1, 0).contiguous().permute(4, 3, 2, 1, 0)),
                        torch.randn(2, 3, 2, 2, 2)))),
    "bmm_ignores_conj": (
        lambda: agrees(lambda a, b: torch.bmm(a.conj(), b), torch.randn(2, 3, 3, dtype=torch.complex64),
                       torch.randn(2, 3, 3, dtype=torch.complex64)),
        (lambda: agrees(torch.bmm, torch.randn(2, 3, 3, dtype=torch.complex64), torch.randn(2, 3, 3, dtype=torch.complex64)),
         lambda: agrees(lambda a, b: torch.bmm(a.conj(), b), torch.randn(2, 3, 3, dtype=torch.complex128),
                        torch.randn(2, 3, 3, dtype=torch.complex128)),
         lambda: agrees(lambda a, b: torch.mm(a.conj(), b), torch.randn(3, 3, dtype=torch.complex64),
                        torch.randn(3, 3, dtype=torch.complex64)))),
    "adaptive_pool_one_as_global": (
        lambda: agrees(lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (1, 3)), torch.randn(1, 2, 4, 6)),
        (lambda: agrees(lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (1, 1)), torch.randn(1, 2, 4, 6)),
         lambda: agrees(lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (2, 3)), torch.randn(1, 2, 4, 6)),
         lambda: agrees(lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (1, 3)), torch.randn(1, 2, 4, 6, dtype=F64)))),
    "zeros_like_ignores_memory_format": (
        lambda: torch.zeros_like(torch.randn(2, 3, 4, 5).to(S), memory_format=torch.channels_last).stride()
        == torch.zeros_like(torch.randn(2, 3, 4, 5), memory_format=torch.channels_last).stride(),
        (lambda: torch.zeros_like(torch.randn(2, 3, 4, 5, dtype=F64).to(S), memory_format=torch.channels_last).stride()
         == torch.zeros_like(torch.randn(2, 3, 4, 5, dtype=F64), memory_format=torch.channels_last).stride(),
         lambda: agrees(torch.zeros_like, torch.randn(2, 3, 4, 5)),
         lambda: torch.clone(torch.randn(2, 3, 4, 5).to(S), memory_format=torch.channels_last).stride()
         == torch.clone(torch.randn(2, 3, 4, 5), memory_format=torch.channels_last).stride())),
    "kthvalue_last_k": (
        lambda: agrees(lambda x: torch.kthvalue(x, 3), t([3.0, 1.0, 2.0])),
        (lambda: agrees(lambda x: torch.kthvalue(x, 1), t([3.0, 1.0, 2.0])),
         lambda: agrees(lambda x: torch.kthvalue(x, 2), t([3.0, 1.0, 2.0])),
         lambda: agrees(lambda x: torch.kthvalue(x, 1), t([5.0])),
         lambda: agrees(lambda x: torch.kthvalue(x, 3), t([3.0, 1.0, 2.0], F64)))),
}


def check(name: str) -> str | None:
    """Why the fault's probes do not show it narrow, or None."""
    hit, beside = PROBES[name]
    if not hit() or not all(p() for p in beside):
        return "sim and CPU disagree without the fault"
    saved = dict(tensor.OP_HOOKS)
    faults.activate([name])
    try:
        if hit():
            return "no visible effect when planted"
        wrong = [i for i, p in enumerate(beside) if not p()]
        return f"beside probes {wrong} wrong when planted: not narrow" if wrong else None
    finally:
        tensor.OP_HOOKS.clear()
        tensor.OP_HOOKS.update(saved)


def main() -> int:
    bad = 0
    for name, fault in faults.FAULTS.items():
        if not fault.unlisted:
            continue
        why = check(name) if name in PROBES else "no probe"
        print(f"{name} ok" if why is None else f"{name} FAIL: {why}")
        bad += why is not None
    print("DONE")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
