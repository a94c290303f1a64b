"""Planted faults in bug classes no existing case targets: meant to be found by input exploration.

Each is one realistic accelerator-kernel bug that is wrong in one argument or value situation
only (a halfway value, a signed zero, a subnormal, a tie, an argument at its switch point) and
right elsewhere. Written from the bug's side, never from any case's inputs; a plain OpInfo sweep
of the op misses each (tests/sim/test_sim_faults_unlisted.py proves it, and that each hook is wrong
in its situation and right beside it). Every hook wraps one functional overload: the in-place
and out= forms of the op keep CPU's kernel.

They are `Fault.unlisted`: the cases meant to catch them are the OpInfo suite's exploration cases
(EXPLORE_CASES), and their selection is the plain `--op` run a user types (fault_model.py), which
selftest and tests/sim/test_sim_faults_unlisted.py run. A build without exploration cases lists them
"awaiting exploration" (not measured, never a miss).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from torchcts.sim import tensor
from torchcts.sim.fault_model import Fault, on_op

# Exploration cases are the OpInfo suite's `opinfo/<op>/<dtype>/explore` (cases/explore/), at level 2.
EXPLORE_SUITE = "opinfo"
EXPLORE_LEVEL = 2
EXPLORE_CASES = "opinfo/*/explore"
aten = torch.ops.aten


def _float32(t: object) -> bool:
    return isinstance(t, torch.Tensor) and t.dtype == torch.float32


@on_op("round")
def _round_half_away(func, args, kwargs, call):
    """round of float32 uses C's roundf: halfway values round away from zero (2.5 -> 3, -0.5 -> -1),
    not to even as PyTorch (and IEEE's default) does."""
    out = call(*args, **kwargs)
    x = args[0]
    if func is not aten.round.default or not _float32(x):
        return out
    tie = (x - x.trunc()).abs() == 0.5
    return torch.where(tie, x.trunc() + x.sign(), out)


@on_op("div")
def _div_floor_exact_negative(func, args, kwargs, call):
    """div(rounding_mode='floor') of float32 computes trunc(a / b) - 1 for every negative quotient,
    skipping the remainder test: one too low when the division is exact (-6 / 3 gives -3)."""
    out = call(*args, **kwargs)
    if (func not in (aten.div.Tensor_mode, aten.div.Scalar_mode) or kwargs.get("rounding_mode") != "floor"
            or not _float32(out)):
        return out
    q = torch.div(args[0], args[1])
    return torch.where((q < 0) & (q == q.trunc()), out - 1, out)


@on_op("copysign")
def _copysign_negative_zero(func, args, kwargs, call):
    """copysign of float32 takes the sign from `other < 0`, not from other's sign bit: other = -0.0
    gives +|self| instead of -|self|."""
    out = call(*args, **kwargs)
    other = args[1]
    if func not in (aten.copysign.Tensor, aten.copysign.Scalar) or not _float32(out):
        return out
    if isinstance(other, torch.Tensor):
        if not other.is_floating_point():
            return out
        return torch.where((other == 0) & torch.signbit(other), out.abs(), out)
    return out.abs() if other == 0 and math.copysign(1.0, other) < 0 else out


@on_op("log")
def _log_subnormal_as_zero(func, args, kwargs, call):
    """log of float32 treats subnormal inputs as zero (denormals-are-zero): -inf instead of -87.4 ...
    -103.3 (and -inf instead of nan for negative subnormals)."""
    out = call(*args, **kwargs)
    x = args[0]
    if func is not aten.log.default or not _float32(x):
        return out
    subnormal = (x != 0) & (x.abs() < torch.finfo(torch.float32).tiny)
    return torch.where(subnormal, float("-inf"), out)


@on_op("_to_copy")
def _bfloat16_cast_ties_up(func, args, kwargs, call):
    """float32 -> bfloat16 conversion rounds with (bits + 0x8000) >> 16: a value exactly halfway between
    two bfloat16 values goes up in magnitude, not to the even one (1 + 2^-8 -> 1 + 2^-7, not 1)."""
    out = call(*args, **kwargs)
    x = args[0]
    if func is not aten._to_copy.default or kwargs.get("dtype") != torch.bfloat16 or not _float32(x):
        return out
    bits = x.contiguous().view(torch.int32)
    tie = ((bits & 0xFFFF) == 0x8000) & torch.isfinite(x)
    if tie.any():
        up = ((bits + 0x8000) & -0x10000).view(torch.float32).to(torch.bfloat16)
        out[tie] = up[tie]
    return out


@on_op("max")
def _max_dim_last_tie(func, args, kwargs, call):
    """max(dim) of float32 updates its running maximum with `>=`: among equal maxima it returns the
    index of the last one, not the first (NaN keeps its own first-NaN path)."""
    out = call(*args, **kwargs)
    x = args[0]
    if func is not aten.max.dim or not _float32(x) or x.dim() == 0:
        return out
    values, indices = out
    dim = args[1]
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    _, flipped = call(x.flip(dim), dim, keepdim)
    last = x.shape[dim] - 1 - flipped
    return values, torch.where(torch.isnan(values), indices, last)


@on_op("sort")
def _sort_descending_reversed(func, args, kwargs, call):
    """A stable descending sort of float32 is the ascending stable sort reversed: equal values come
    out in reverse input order (indices of ties reversed), the values themselves are right."""
    x = args[0]
    if (func is not aten.sort.stable or not kwargs.get("stable") or not kwargs.get("descending")
            or not _float32(x) or x.dim() == 0):
        return call(*args, **kwargs)
    dim = kwargs.get("dim", -1)
    values, indices = call(x, stable=True, dim=dim, descending=False)
    return values.flip(dim), indices.flip(dim)


@on_op("leaky_relu_backward")
def _leaky_relu_backward_zero(func, args, kwargs, call):
    """leaky_relu's float32 gradient tests `x >= 0`: at exactly x = 0 (either sign) it passes the full
    gradient where PyTorch scales it by negative_slope."""
    out = call(*args, **kwargs)
    grad, x = args[0], args[1]
    if not _float32(x):
        return out
    return torch.where(x == 0, grad, out)


@on_op("mean")
def _mean_empty_dims(func, args, kwargs, call):
    """mean(dim=[]) follows NumPy's axis=(): an empty dim list reduces nothing and returns the input,
    where PyTorch reduces every dim."""
    x, dim = args[0], args[1] if len(args) > 1 else kwargs.get("dim")
    dtype = kwargs.get("dtype") or x.dtype
    if func is not aten.mean.dim or dim is None or len(dim) != 0 or not (dtype.is_floating_point or dtype.is_complex):
        return call(*args, **kwargs)  # (an integer mean is refused as on CPU: the checks come first)
    return x.to(dtype, copy=True)


@on_op("logsumexp")
def _logsumexp_all_neg_inf(func, args, kwargs, call):
    """logsumexp of float32 subtracts the slice's maximum with no guard for infinities: a slice whose
    every element is -inf gives nan (-inf - -inf), where PyTorch gives -inf."""
    out = call(*args, **kwargs)
    x = args[0]
    if func is not aten.logsumexp.default or not _float32(x) or x.numel() == 0:
        return out
    dim = args[1] if len(args) > 1 else kwargs.get("dim", [])
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    return torch.where(torch.amax(x, dim, keepdim) == float("-inf"), float("nan"), out)


@on_op("abs")
def _abs_int32_min_saturates(func, args, kwargs, call):
    """abs of int32 uses a saturating instruction: abs(-2^31) is 2^31 - 1, where PyTorch (two's
    complement) wraps to -2^31."""
    out = call(*args, **kwargs)
    x = args[0]
    if func is not aten.abs.default or not isinstance(x, torch.Tensor) or x.dtype != torch.int32:
        return out
    info = torch.iinfo(torch.int32)
    return torch.where(x == info.min, info.max, out)


@on_op("neg")
def _neg_int64_low_word(func, args, kwargs, call):
    """neg of int64 runs on 32-bit lanes (an accelerator without 64-bit integer ALUs): a value outside
    int32's range loses its high word (neg(2^40) is 0, neg(-2^63) is 0 where PyTorch wraps to -2^63)."""
    out = call(*args, **kwargs)
    x = args[0]
    if func is not aten.neg.default or not isinstance(x, torch.Tensor) or x.dtype != torch.int64:
        return out
    return torch.where(x.to(torch.int32).to(torch.int64) == x, out, (-x.to(torch.int32)).to(torch.int64))


@on_op("pow")
def _pow_host_exponent_truncated(func, args, kwargs, call):
    """pow with a CPU scalar tensor exponent (beside a device base: PyTorch allows it) takes the host
    value through the kernel's integer-exponent fast path: 2.5 becomes 2. A device tensor or a Python
    number exponent is right."""
    if func is aten.pow.Tensor_Tensor and len(args) > 1 and id(args[1]) in tensor.HOST_TENSORS \
            and args[1].dim() == 0 and args[1].is_floating_point():
        return call(args[0], args[1].trunc(), **kwargs)
    return call(*args, **kwargs)


@on_op("sum")
def _sum_dtype_wraps_in_input(func, args, kwargs, call):
    """sum(x, dtype=D) of an 8- or 16-bit integer input accumulates in the input's own dtype (wrapping)
    and converts the total to D: the dtype argument reaches the output allocation, not the accumulator.
    Without dtype= (int64 accumulation by promotion) it is right."""
    dtype = kwargs.get("dtype")
    x = args[0] if args else None
    if dtype is None or not isinstance(x, torch.Tensor) or x.dtype not in (torch.int8, torch.uint8, torch.int16):
        return call(*args, **kwargs)
    return call(*args, **{**kwargs, "dtype": x.dtype}).to(dtype)


@on_op("log1p", "log1p_")
def _log1p_naive(func, args, kwargs, call):
    """float32 log1p computed as log(1 + x): for |x| below float32's eps it returns 0 (1 + x rounds
    to 1), 100% off, yet within any atol of the right answer (x itself). One kernel for every form
    (functional, out=, in-place), as a backend's would: it is wrong everywhere by ulps, so a
    functional-only hook would be caught by the forms disagreeing (cases/opinfo/agree.py)."""
    x = args[0]
    if func not in (aten.log1p.default, aten.log1p.out, aten.log1p_.default) or not _float32(x):
        return call(*args, **kwargs)
    naive = torch.log(1 + x)
    if func is aten.log1p.default:
        return naive
    target = x if func is aten.log1p_.default else kwargs["out"]
    call(*args, **kwargs)  # CPU's checks and resizes of out=
    return target.copy_(naive)


@on_op("atan2")
def _atan2_stride0_as_scalar(func, args, kwargs, call):
    """float32 atan2 takes an operand with a zero stride (an expanded tensor) for a scalar: its
    broadcast fast path reads the first element for every position."""
    if func is not aten.atan2.default or not _float32(args[0]):
        return call(*args, **kwargs)

    def scalar_if_expanded(t):
        expanded = any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape, strict=True))
        return t.reshape(-1)[0].expand(t.shape) if expanded and t.numel() else t

    return call(scalar_if_expanded(args[0]), scalar_if_expanded(args[1]), **kwargs)


@on_op("kthvalue")
def _kthvalue_last_k(func, args, kwargs, call):
    """kthvalue of float32 with k equal to the dim's size (the maximum) returns the (k-1)-th smallest:
    its quickselect's upper bound is exclusive (k at the other end, 1, is right)."""
    x = args[0]
    if func is not aten.kthvalue.default or not _float32(x):
        return call(*args, **kwargs)
    k = args[1]
    dim = args[2] if len(args) > 2 else kwargs.get("dim", -1)
    size = x.shape[dim] if x.dim() else 1
    if k != size or size < 2:
        return call(*args, **kwargs)
    return call(x, k - 1, *args[2:], **kwargs)


@on_op("sigmoid")
def _sigmoid_rank5_memory_order(func, args, kwargs, call):
    """float32 sigmoid of a tensor of rank 5 or more that is not contiguous runs its flat path: it
    reads the storage in memory order and writes the results in logical order (the kernel's strided
    indexing stops at rank 4: tenstorrent/tt-metal#12154's 6-D permute). Rank <= 4 is right, however
    strided; so is any contiguous tensor."""
    x = args[0]
    if func is not aten.sigmoid.default or not _float32(x) or x.dim() < 5 or x.is_contiguous() or not x.numel():
        return call(*args, **kwargs)
    flat = x.as_strided((x.numel(),), (1,), x.storage_offset())
    return call(flat, **kwargs).view(x.shape)


@on_op("bmm")
def _bmm_ignores_conj(func, args, kwargs, call):
    """complex64 bmm maps a conjugated transpose (`mH`, what autograd passes) to its GEMM's
    conjugate-transpose flag, but reads a plain lazily conjugated operand (`x.conj()`, contiguous) as
    raw memory: multiplied unconjugated (pytorch/pytorch#191835, MPS complex bmm with conj views).
    Resolved operands, the only ones OpInfo's samples hold, are right."""
    if func is not aten.bmm.default or args[0].dtype != torch.complex64:
        return call(*args, **kwargs)
    return call(*(a.conj() if isinstance(a, torch.Tensor) and a.is_conj() and a.is_contiguous() else a
                  for a in args), **kwargs)


@on_op("_adaptive_avg_pool2d")
def _adaptive_pool_one_as_global(func, args, kwargs, call):
    """float32 adaptive average pooling to an output of height or width 1 (not both) takes the global
    pooling path meant for (1, 1): every output is the whole plane's mean. PyTorch sends (1, 1) itself
    to mean(); OpInfo's output sizes hold no 1."""
    x, size = args[0], list(args[1])
    if func is not aten._adaptive_avg_pool2d.default or not _float32(x) or 1 not in size or size == [1, 1]:
        return call(*args, **kwargs)
    return x.mean((-2, -1), keepdim=True).expand(*x.shape[:-2], *size).contiguous()


@on_op("zeros_like")
def _zeros_like_ignores_memory_format(func, args, kwargs, call):
    """float32 zeros_like drops `memory_format=torch.channels_last`: the zeros are right, their layout
    is contiguous (the kernel allocates before it reads the format). OpInfo's samples never ask for
    a format."""
    if (func is not aten.zeros_like.default or args[0].dtype != torch.float32
            or kwargs.get("memory_format") != torch.channels_last):
        return call(*args, **kwargs)
    return call(*args, **{**kwargs, "memory_format": torch.contiguous_format})


def _unlisted(name: str, description: str, install: Callable[[], None], op: str, dtype: str | None = "float32") -> Fault:
    return Fault(name, description, EXPLORE_SUITE, EXPLORE_LEVEL, (EXPLORE_CASES,), install,
                 dtype=dtype, op=op, unlisted=True)


FAULTS: tuple[Fault, ...] = (
    _unlisted("round_half_away", "round of float32 rounds halfway values away from zero, not to even",
              _round_half_away, "round"),
    _unlisted("div_floor_exact_negative", "div(rounding_mode='floor') of float32 is one too low for exact "
              "negative quotients", _div_floor_exact_negative, "div"),
    _unlisted("copysign_negative_zero", "copysign of float32 treats other = -0.0 as positive",
              _copysign_negative_zero, "copysign"),
    _unlisted("log_subnormal_as_zero", "log of float32 flushes subnormal inputs to zero (-inf)",
              _log_subnormal_as_zero, "log"),
    _unlisted("bfloat16_cast_ties_up", "float32 -> bfloat16 conversion rounds halfway values up in magnitude, "
              "not to even", _bfloat16_cast_ties_up, "bfloat16"),
    _unlisted("max_dim_last_tie", "max(dim) of float32 returns the index of the last of equal maxima",
              _max_dim_last_tie, "max"),
    _unlisted("sort_descending_reversed", "stable descending sort of float32 returns ties in reverse input order",
              _sort_descending_reversed, "sort"),
    _unlisted("leaky_relu_backward_zero", "leaky_relu's float32 gradient at exactly 0 is the full gradient, "
              "not negative_slope times it", _leaky_relu_backward_zero, "leaky_relu"),
    _unlisted("mean_empty_dims", "mean(dim=[]) returns the input unreduced instead of reducing every dim",
              _mean_empty_dims, "mean", dtype=None),
    _unlisted("logsumexp_all_neg_inf", "logsumexp of float32 over a slice of only -inf gives nan, not -inf",
              _logsumexp_all_neg_inf, "logsumexp"),
    _unlisted("abs_int32_min_saturates", "abs of int32 saturates abs(-2^31) to 2^31 - 1 instead of wrapping",
              _abs_int32_min_saturates, "abs", dtype="int32"),
    _unlisted("neg_int64_low_word", "neg of int64 drops the high word of values outside int32's range",
              _neg_int64_low_word, "neg", dtype="int64"),
    _unlisted("pow_host_exponent_truncated", "pow with a CPU scalar tensor exponent truncates it to an integer",
              _pow_host_exponent_truncated, "pow"),
    _unlisted("sum_dtype_wraps_in_input", "sum(dtype=D) of 8/16-bit integers accumulates in the input dtype",
              _sum_dtype_wraps_in_input, "sum", dtype="int8"),
    _unlisted("log1p_naive", "float32 log1p computed as log(1 + x): 0 for tiny x", _log1p_naive, "log1p"),
    _unlisted("atan2_stride0_as_scalar", "float32 atan2 reads an expanded (stride-0) operand as a scalar",
              _atan2_stride0_as_scalar, "atan2"),
    _unlisted("sigmoid_rank5_memory_order", "float32 sigmoid of a non-contiguous tensor of rank >= 5 reads its "
              "storage in memory order", _sigmoid_rank5_memory_order, "sigmoid"),
    _unlisted("bmm_ignores_conj", "complex64 bmm multiplies a lazily conjugated operand unconjugated",
              _bmm_ignores_conj, "bmm", dtype="complex64"),
    _unlisted("adaptive_pool_one_as_global", "float32 adaptive average pooling to height or width 1 averages "
              "the whole plane", _adaptive_pool_one_as_global, "nn.functional.adaptive_avg_pool2d"),
    _unlisted("zeros_like_ignores_memory_format", "float32 zeros_like with memory_format=channels_last returns a "
              "contiguous tensor", _zeros_like_ignores_memory_format, "zeros_like"),
    _unlisted("kthvalue_last_k", "kthvalue of float32 with k = the dim's size returns the (k-1)-th smallest",
              _kthvalue_last_k, "kthvalue"),
)
