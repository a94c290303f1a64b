"""The planted-fault registry of the sim device: name -> what breaks, who should catch it, the hook.

`TORCHCTS_SIM_FAULT=name[,name...]` activates faults when `torchcts.sim` is imported. Each fault
is one narrow, realistic kernel or runtime bug. It names the suite (and level) that exists to
catch it and case-id globs of the cases meant to catch it; `torchcts selftest` and
tests/sim/test_sim_faults.py check that the first failing case matches. The faults are written from
the bug's point of view (a dtype, a layout, a size class, a missing check), never from the
inputs of any case: the measurement is only honest if no case is tuned to them.

An op hook has the signature `hook(func, args, kwargs, call)`: args are the CPU tensors behind
the sim tensors and `call(*args, **kwargs)` computes the correct result. A hook that returns a
tensor other than an input's CPU tensor makes the sim return a new tensor (no aliasing).
`Fault` and `on_op` live in fault_model.py; the faults no existing case targets (meant for input
exploration, `Fault.unlisted`) in faults_unlisted.py, and join the registry here.
"""

from __future__ import annotations

import functools
import os
import signal
import time
from typing import Any

import torch

from torchcts import settings
from torchcts.errors import UsageError, did_you_mean
from torchcts.sim import (
    device,
    faults_agree,
    faults_amp,
    faults_axes,
    faults_data,
    faults_distributed,
    faults_effects,
    faults_field,
    faults_unlisted,
    state,
    tensor,
)
from torchcts.sim.fault_model import Fault, Hook, on_op
from torchcts.sim.faults_flaky import FAULTS as FLAKY_FAULTS  # wrong only sometimes: caught under --repeat

__all__ = ["FAULTS", "Fault", "Hook", "activate", "active", "on_op"]


def _tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    return [x for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor)]


# --- wrong values ------------------------------------------------------------------------------

@on_op("add", "add_")
def _add_fp16_ulp(func, args, kwargs, call):
    """A float16 add kernel that rounds the wrong way by a few ulps."""
    out = call(*args, **kwargs)
    if isinstance(out, torch.Tensor) and out.dtype == torch.float16:
        out.mul_(1 + 2**-8)
    return out


@on_op("neg")
def _neg_vector_tail(func, args, kwargs, call):
    """A vectorised neg that forgets the tail: the last numel % 16 elements are copied, not negated."""
    out = call(*args, **kwargs)
    tail = out.numel() % 16
    if out.numel() > 16 and tail and out.is_contiguous():
        out.view(-1)[-tail:] = args[0].reshape(-1)[-tail:]
    return out


@on_op("fill_")
def _fill_bfloat16_bits(func, args, kwargs, call):
    """fill_ on bfloat16 writes the float16 bit pattern of the value (0 survives, 1.0 does not)."""
    self, value = args[0], args[1]
    if self.dtype == torch.bfloat16:
        bits = torch.tensor(float(value), dtype=torch.float16).view(torch.bfloat16)
        return call(self, bits.item(), *args[2:], **kwargs)
    return call(*args, **kwargs)


@on_op("sum")
def _sum_low_precision(func, args, kwargs, call):
    """float32 sums of more than 1024 elements accumulate in bfloat16 (a block-reduce shortcut)."""
    x = args[0]
    if x.dtype == torch.float32 and x.numel() > 1024 and "out" not in kwargs and kwargs.get("dtype") is None:
        return call(x.to(torch.bfloat16), *args[1:], **kwargs).to(torch.float32)
    return call(*args, **kwargs)


@on_op("sigmoid_backward")
def _sigmoid_backward(func, args, kwargs, call):
    """The sigmoid gradient forgets the (1 - y) factor."""
    grad, y = args[0], args[1]
    return grad * y


# --- layouts and metadata ---------------------------------------------------------------------

@on_op("_to_copy")
def _to_copy_ignores_strides(func, args, kwargs, call):
    """Copies (.cpu(), .to(dtype)) of a non-contiguous tensor read its memory in storage order."""
    x = args[0]
    if not x.is_contiguous() and x.numel() > 1:
        raw = torch.as_strided(x, x.shape, torch.empty(x.shape, device="meta").stride(), x.storage_offset())
        return call(raw, *args[1:], **kwargs)
    return call(*args, **kwargs)


@on_op("mul")
def _mul_noncontig_storage_order(func, args, kwargs, call):
    """mul (functional) reads a non-contiguous float32 tensor operand in storage order."""
    def raw(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.is_contiguous() or x.numel() < 2:
            return x
        if x.untyped_storage().nbytes() < (x.storage_offset() + x.numel()) * x.element_size():
            return x  # an expanded (stride-0) operand: storage order would read past its memory
        return torch.as_strided(x, x.shape, torch.empty(x.shape, device="meta").stride(), x.storage_offset())

    return call(*[raw(x) for x in args], **kwargs)


@on_op("clone")
def _clone_drops_channels_last(func, args, kwargs, call):
    """clone (preserve_format) of a channels_last tensor returns a contiguous tensor."""
    out = call(*args, **kwargs)
    x = args[0]
    fmt = kwargs.get("memory_format")
    if x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last) and (
        fmt in (None, torch.preserve_format)
    ):
        return out.contiguous()
    return out


@on_op("abs")
def _abs_zero_dim(func, args, kwargs, call):
    """abs of a zero-dim tensor returns shape (1,) (the kernel treats a scalar as a 1-vector)."""
    out = call(*args, **kwargs)
    if isinstance(out, torch.Tensor) and out.dim() == 0 and func is torch.ops.aten.abs.default:
        return out.reshape(1)
    return out


@on_op("div")
def _div_int_promotion(func, args, kwargs, call):
    """True division of two integer tensors returns the integer dtype (truncated), not float."""
    out = call(*args, **kwargs)
    ts = _tensors(args, kwargs)
    if (kwargs.get("rounding_mode") is None and len(ts) >= 2 and "out" not in kwargs
            and all(not (t.is_floating_point() or t.is_complex()) for t in ts[:2])):
        return out.trunc().to(torch.promote_types(ts[0].dtype, ts[1].dtype))
    return out


# --- aliasing and mutation --------------------------------------------------------------------

@on_op("transpose", "t")
def _transpose_copies(func, args, kwargs, call):
    """transpose returns a fresh copy instead of a view: writes no longer reach the base."""
    return call(*args, **kwargs).clone()


@on_op("mul_")
def _mul_inplace_new(func, args, kwargs, call):
    """In-place mul_ with a tensor operand computes into a new tensor and returns it; self stays."""
    if func is torch.ops.aten.mul_.Tensor:
        return torch.mul(*args, **kwargs)
    return call(*args, **kwargs)


@on_op("add")
def _add_out_ignored(func, args, kwargs, call):
    """add(out=) returns a new tensor and leaves the given out tensor unwritten."""
    if "out" in kwargs:
        rest = {k: v for k, v in kwargs.items() if k != "out"}
        return torch.ops.aten.add.Tensor(*args, **rest) if isinstance(args[1], torch.Tensor) else call(*args, **kwargs)
    return call(*args, **kwargs)


# --- edge cases and errors --------------------------------------------------------------------

@on_op("max")
def _max_ignores_nan(func, args, kwargs, call):
    """The full max reduction skips NaN instead of propagating it."""
    x = args[0]
    if func is torch.ops.aten.max.default and x.is_floating_point() and x.numel():
        keep = x[~torch.isnan(x)]
        if keep.numel():
            return call(keep)
    return call(*args, **kwargs)


@on_op("index_select")
def _index_select_unchecked(func, args, kwargs, call):
    """index_select clamps out-of-range indices instead of raising."""
    x, dim, index = args[0], args[1], args[2]
    if x.dim() and index.numel():
        size = x.shape[dim]
        index = index.clamp(0, size - 1)
    return call(x, dim, index, *args[3:], **kwargs)


# --- depth: views, dtype limits, tiling, mixed dtypes, random ops (docs/depth.md) ----------------

@on_op("index_add_")
def _index_add_ignores_offset(func, args, kwargs, call):
    """index_add_ addresses self from the start of its storage: into a view with a storage offset
    it adds in the wrong place (the base before the view is written, the view is not)."""
    self = args[0]
    if self.storage_offset():
        call(self.as_strided(self.shape, self.stride(), 0), *args[1:], **kwargs)
        return self
    return call(*args, **kwargs)


@on_op("cumsum")
def _cumsum_narrow_accumulator(func, args, kwargs, call):
    """cumsum of 8- and 16-bit integers accumulates in the input dtype (wraps), then widens to int64."""
    x = args[0]
    if x.dtype in (torch.int8, torch.uint8, torch.int16) and kwargs.get("dtype") is None and "out" not in kwargs:
        return call(*args, **{**kwargs, "dtype": x.dtype}).to(torch.int64)
    return call(*args, **kwargs)


@on_op("mm")
def _mm_k_tail(func, args, kwargs, call):
    """mm's blocked kernel for K > 4096 drops the last K % 64 terms of each dot product (the K tail)."""
    a, b = args[0], args[1]
    k = a.shape[-1]
    if k > 4096 and k % 64 and "out" not in kwargs:
        keep = k - k % 64
        return call(a[:, :keep], b[:keep], *args[2:], **kwargs)
    return call(*args, **kwargs)


@on_op("cat")
def _cat_first_dtype(func, args, kwargs, call):
    """cat of tensors of different dtypes converts every input to the first one's dtype, then gives
    the promoted result dtype: the result dtype is right, the values of the others are truncated."""
    ts = [t for t in args[0] if t.numel()]
    if "out" not in kwargs and len({t.dtype for t in ts}) > 1:
        first = ts[0].dtype
        out = call([t.to(first) for t in args[0]], *args[1:], **kwargs)
        return out.to(functools.reduce(torch.promote_types, (t.dtype for t in args[0])))
    return call(*args, **kwargs)


@on_op("native_dropout")
def _dropout_scale_inverted(func, args, kwargs, call):
    """Training-mode dropout scales the kept elements by 1/p instead of 1/(1 - p) (right only at p = 0.5)."""
    x, p, train = args[0], args[1], args[2] if len(args) > 2 else kwargs.get("train")
    out, mask = call(*args, **kwargs)
    if train and 0 < p < 1 and x.is_floating_point():
        out = x * mask * (1 / p)
    return out, mask


@on_op("copy_")
def _copy_same_layout_skipped(func, args, kwargs, call):
    """Device-to-device copy_ takes a self-copy shortcut that compares layout instead of memory: a copy
    between two distinct sim tensors of the same size, dtype and strides returns without writing.
    Eager in-place ops never copy; under torch.compile, functionalisation rewrites an in-place op on a
    graph input into the functional op and a copy_ of the result back into the input, which is lost."""
    dst, src = args[0], args[1]
    if (isinstance(src, torch.Tensor) and src.untyped_storage().data_ptr() in state.MEMORY.refs
            and (dst.shape, dst.dtype, dst.stride()) == (src.shape, src.dtype, src.stride())
            and dst.data_ptr() != src.data_ptr()):
        return dst
    return call(*args, **kwargs)


# --- dispatcher surfaces: foreach, out=, special functions, metadata ops (docs/coverage.md) ------

@on_op("_foreach_add", "_foreach_add_")
def _foreach_add_last_tail(func, args, kwargs, call):
    """Multi-tensor apply's last chunk stops one element short: the last element of the last tensor
    of the list keeps its input value (in-place), or the input's value (out-of-place, out=)."""
    last = args[0][-1] if args and isinstance(args[0], (list, tuple)) and args[0] else None
    if last is None or last.numel() < 2:
        return call(*args, **kwargs)
    at = (-1,) * last.dim()
    keep = last[at].clone()
    out = call(*args, **kwargs)
    target = out[-1] if isinstance(out, (list, tuple)) and out else kwargs["out"][-1] if "out" in kwargs else last
    target[at] = keep
    return out


@on_op("exp")
def _exp_out_dtype_unchecked(func, args, kwargs, call):
    """exp(out=) with an out whose dtype cannot hold the result casts into it instead of raising."""
    out = kwargs.get("out")
    if out is None:
        return call(*args, **kwargs)
    result = torch.ops.aten.exp.default(*args)
    if torch.can_cast(result.dtype, out.dtype):
        return call(*args, **kwargs)
    out.resize_(result.shape).copy_(result)
    return out


@on_op("special_erfcx")
def _erfcx_naive(func, args, kwargs, call):
    """erfcx(x) computed naively as exp(x^2) * erfc(x): nan (inf * 0) for x > 26.6, where the scaled
    function is finite, about 1 / (x * sqrt(pi))."""
    out = call(*args, **kwargs)
    x = args[0]
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        out.masked_fill_(x.broadcast_to(out.shape) > 26.6, float("nan"))
    return out


@on_op("set_")
def _set_ignores_offset(func, args, kwargs, call):
    """set_(storage, storage_offset, size, stride) views the storage from its start: the offset is dropped."""
    if func is torch.ops.aten.set_.source_Storage_storage_offset and len(args) > 2:
        return call(args[0], args[1], 0, *args[3:], **kwargs)
    return call(*args, **kwargs)


# --- process-level failures -------------------------------------------------------------------

@on_op("mul")
def _mul_complex128_segv(func, args, kwargs, call):
    """The complex128 multiply kernel dereferences a bad pointer: the process dies with SIGSEGV."""
    if any(t.dtype == torch.complex128 for t in _tensors(args, kwargs)):
        os.kill(os.getpid(), signal.SIGSEGV)
    return call(*args, **kwargs)


@on_op("sum", "mean", "var")
def _reduce_float32_segv(func, args, kwargs, call):
    """The float32 reduction kernel (sum, mean and var share its accumulation pass) writes past its
    per-thread workspace for any input of more than one element: the process dies with SIGSEGV. A
    crash-heavy backend in bring-up: about 10% of level 2's float32 cases reach one of these ops."""
    if any(t.dtype == torch.float32 and t.numel() > 1 for t in _tensors(args, kwargs)):
        os.kill(os.getpid(), signal.SIGSEGV)
    return call(*args, **kwargs)


@on_op("*")
def _out_resize_segv(func, args, kwargs, call):
    """Resizing an out= that holds elements frees its old buffer twice: the process dies with SIGSEGV
    (OpenReg's resize path for out=; an empty out, or one of the right size, is fine). Every op with
    an out= overload reaches it: a crash storm across ops, one bug."""
    out = kwargs.get("out")
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, torch.Tensor)]
    before = [(o, o.shape) for o in outs if o.numel() > 0]
    result = call(*args, **kwargs)
    if any(o.shape != shape for o, shape in before):
        os.kill(os.getpid(), signal.SIGSEGV)
    return result


STICKY_ERROR = "sim: an illegal memory access was encountered (the device's context is lost)"
_LOST: list[str] = []  # the process's sticky error, once a kernel made it (abs_illegal_address_sticky)


@on_op("*")
def _abs_illegal_address_sticky(func, args, kwargs, call):
    """The abs kernel reads past its input (an illegal address): the call raises, and the device's
    context is lost for the process, so every later device op raises the same error, as CUDA's
    illegal memory access does. Every case after it in the process fails for a state it did not
    cause: the device canary (workers/canary.py) must find the poisoned device and replace the process."""
    if _LOST:
        raise RuntimeError(_LOST[0])
    if func._overloadpacket.__name__ in ("abs", "abs_"):
        _LOST.append(STICKY_ERROR)
        raise RuntimeError(STICKY_ERROR)
    return call(*args, **kwargs)


@on_op("sub")
def _sub_int16_hang(func, args, kwargs, call):
    """The int16 subtract kernel waits forever on a completion that never comes."""
    if any(t.dtype == torch.int16 for t in _tensors(args, kwargs)):
        while True:
            time.sleep(3600)
    return call(*args, **kwargs)


# --- runtime: device module, RNG, memory, serialization ----------------------------------------

def _rng_seed_ignored() -> None:
    """manual_seed does not reset the device generator: seeded runs do not repeat."""
    device.manual_seed = lambda seed: None  # type: ignore[assignment]
    device.manual_seed_all = lambda seed: None  # type: ignore[assignment]


def _device_count_wrong() -> None:
    """device_count() reports two devices, but only index 0 exists."""
    device.device_count = lambda: 2  # type: ignore[assignment]


def _memory_never_freed() -> None:
    """memory_allocated() never goes down: freeing a tensor does not update the statistics."""
    state.MEMORY.release = lambda key: None  # type: ignore[method-assign]


def _save_loses_device() -> None:
    """torch.save of a sim tensor records it as a cpu tensor: torch.load brings it back on cpu."""

    def reduce(t: tensor.SimTensor):
        return (
            torch._utils._rebuild_device_tensor_from_cpu_tensor,
            (t._cpu.detach().clone(), t.dtype, "cpu", t.requires_grad),
        )

    tensor.OP_HOOKS["__reduce_ex__"] = reduce


@on_op("sin")
def _sin_fast_math(func, args, kwargs, call):
    """A fast-math float32 sin: accurate to an absolute 2^-17 (the atol of 1e-5 accepts it), not
    relatively, so thousands of ulps off where sin is small, where CPU's is within one."""
    out = call(*args, **kwargs)
    if isinstance(out, torch.Tensor) and out.dtype == torch.float32:
        return torch.round(out * 2**16) / 2**16
    return out


@on_op("_cdist_forward")
def _cdist_skips_root(func, args, kwargs, call):
    """A p-norm distance kernel that forgets the final 1/p root for p other than 1 and 2
    (its p = 2 and p = 1 fast paths are right)."""
    out = call(*args, **kwargs)
    p = float(args[2]) if len(args) > 2 else 2.0
    return out if p in (1.0, 2.0) else out.pow(p)


# --- exact results off by one ulp: within every float tolerance (oracle/exactness.py) -----------

@on_op("_to_copy")
def _bfloat16_cast_truncates(func, args, kwargs, call):
    """float32 -> bfloat16 casts drop the low 16 bits (round toward zero) instead of rounding to
    nearest even: half the values come out 1 ulp toward zero."""
    x = args[0]
    if x.dtype == torch.float32 and kwargs.get("dtype") == torch.bfloat16:
        x = (x.contiguous().view(torch.int32) & -65536).view(torch.float32)
        return call(x, *args[1:], **kwargs)
    return call(*args, **kwargs)


@on_op("sort")
def _sort_key_ulp(func, args, kwargs, call):
    """A radix sort's key transform (float bits -> ordered integers -> float) is off by one on the
    way back for positive float32 values: each comes back 1 ulp toward zero, the order is right."""
    out = call(*args, **kwargs)
    values = out[0]
    if values.dtype == torch.float32 and values.numel():
        values.copy_(torch.where(values > 0, torch.nextafter(values, torch.zeros_like(values)), values))
    return out


@on_op("max")
def _max_dim_tail_ulp(func, args, kwargs, call):
    """max(dim) on float32 writes its last value from a scalar tail path that rounds toward +inf:
    that one value is 1 ulp high (indices right)."""
    out = call(*args, **kwargs)
    if func is torch.ops.aten.max.dim and out[0].dtype == torch.float32 and out[0].numel():
        last = out[0].view(-1)[-1:]
        last.copy_(torch.nextafter(last, torch.full_like(last, float("inf"))))
    return out


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault("add_fp16_ulp", "add on float16 is off by a relative 2^-8 (a few ulps)",
              "operators", 1, ("operators/elementwise/add/float16",), _add_fp16_ulp, dtype="float16"),
        Fault("neg_vector_tail", "neg skips the last numel % 16 elements of tensors above 16 elements",
              "operators", 1, ("operators/elementwise/neg/*",), _neg_vector_tail),
        Fault("fill_bfloat16_bits", "fill_ on bfloat16 writes the float16 bit pattern of the value",
              "operators", 1, ("operators/core/*/bfloat16",), _fill_bfloat16_bits, dtype="bfloat16"),
        Fault("abs_zero_dim", "abs of a zero-dim tensor returns shape (1,)",
              "operators", 1, ("operators/elementwise/abs/*",), _abs_zero_dim),
        Fault("mul_complex128_segv", "mul on complex128 kills the process with SIGSEGV",
              "operators", 1, ("operators/elementwise/mul/complex128",), _mul_complex128_segv,
              dtype="complex128"),
        Fault("reduce_float32_segv", "sum, mean and var on float32 kill the process with SIGSEGV",
              "operators", 2, ("operators/reduction/sum/*/float32",), _reduce_float32_segv, dtype="float32", op="sum"),
        Fault("out_resize_segv", "resizing a non-empty out= kills the process with SIGSEGV (every op's out=)",
              "out_variants", 3, ("out_variants/*",), _out_resize_segv, dtype="float32"),
        Fault("abs_illegal_address_sticky", "abs makes an illegal memory access: it raises, and every later device "
              "op of the process raises the same error (a sticky error: the device is left poisoned)",
              "operators", 1, ("operators/elementwise/abs/*",), _abs_illegal_address_sticky, op="abs"),
        Fault("sub_int16_hang", "sub on int16 never returns",
              "operators", 1, ("operators/elementwise/sub/int16",), _sub_int16_hang, dtype="int16"),
        Fault("sum_low_precision", "float32 sum of more than 1024 elements accumulates in bfloat16",
              "operators", 2, ("operators/reduction/sum/*/float32",), _sum_low_precision, dtype="float32", op="sum"),
        Fault("div_int_promotion", "true division of integer tensors returns an integer dtype",
              "dtypes", 3, ("dtypes/promotion/div/*",), _div_int_promotion),
        Fault("transpose_copies", "transpose returns a copy, not a view: no aliasing with the base",
              "operators", 3, ("operators/aliasing/*",), _transpose_copies),
        Fault("mul_inplace_new", "mul_ returns a new tensor and leaves self unchanged",
              "operators", 3, ("operators/aliasing/inplace/*",), _mul_inplace_new),
        Fault("add_out_ignored", "add(out=) never writes the out tensor",
              "operators", 3, ("operators/aliasing/out/*",), _add_out_ignored),
        Fault("index_select_unchecked", "index_select clamps out-of-range indices instead of raising",
              "errors", 3, ("errors/index_out_of_range/index_select/*",), _index_select_unchecked),
        Fault("rng_seed_ignored", "manual_seed does not reset the device generator",
              "rng", 3, ("rng/manual_seed/*",), _rng_seed_ignored),
        Fault("save_loses_device", "torch.save/torch.load of a sim tensor brings it back on cpu",
              "serialization", 3, ("serialization/*",), _save_loses_device),
        Fault("sigmoid_backward_wrong", "the gradient of sigmoid lacks the (1 - y) factor",
              "autograd", 4, ("autograd/*/tanh_norm*",), _sigmoid_backward),
        Fault("mul_noncontig_storage_order", "mul of a non-contiguous float32 tensor reads it in storage order",
              "opinfo", 5, ("opinfo/mul/float32/noncontiguous",), _mul_noncontig_storage_order, dtype="float32",
              op="mul"),
        Fault("bfloat16_cast_truncates", "float32 -> bfloat16 casts round toward zero, not to nearest even (1 ulp)",
              "opinfo", 3, ("opinfo/bfloat16/float32/*",), _bfloat16_cast_truncates, dtype="float32", op="bfloat16"),
        Fault("sort_key_ulp", "float32 sort returns each positive value 1 ulp toward zero",
              "opinfo", 2, ("opinfo/sort/float32/*",), _sort_key_ulp, dtype="float32", op="sort"),
        Fault("max_dim_tail_ulp", "float32 max(dim) returns its last value 1 ulp high",
              "opinfo", 2, ("opinfo/max.reduction_with_dim/float32/*",), _max_dim_tail_ulp, dtype="float32", op="max"),
        Fault("max_ignores_nan", "the full max reduction skips NaN instead of returning NaN",
              "opinfo", 5, ("opinfo/max*/*/special_values",), _max_ignores_nan, op="max*"),
        Fault("index_add_ignores_offset", "index_add_ into a view with a storage offset writes from the storage start",
              "inplace_views", 3, ("inplace_views/*index_add*",), _index_add_ignores_offset, op="index_add_"),
        Fault("cumsum_narrow_accumulator", "cumsum of int8/uint8/int16 accumulates in the input dtype and wraps",
              "limits", 5, ("limits/cumsum/*",), _cumsum_narrow_accumulator, op="cumsum"),
        Fault("mm_k_tail", "mm drops the last K % 64 terms of each dot product when K > 4096",
              "tiling", 8, ("tiling/contraction/*/K/*",), _mm_k_tail, op="mm"),
        Fault("cat_first_dtype", "cat of mixed dtypes computes in the first input's dtype (values truncated)",
              "mixed_dtypes", 3, ("mixed_dtypes/pair/cat/*", "mixed_dtypes/pair/stack/*"), _cat_first_dtype, op="cat"),
        Fault("dropout_scale_inverted", "training dropout scales kept elements by 1/p instead of 1/(1 - p)",
              "random_ops", 3, ("random_ops/dropout/*",), _dropout_scale_inverted, op="nn.functional.dropout"),
        Fault("copy_same_layout_skipped", "device-to-device copy_ between distinct tensors of one layout writes nothing "
              "(compiled in-place ops lose their write-back)",
              "compiler_ops", 6, ("compiler_ops/*/inplace/*",), _copy_same_layout_skipped, op="sigmoid",
              case_timeout=120.0),
        Fault("to_copy_ignores_strides", "copies of non-contiguous tensors read memory in storage order",
              "strides", 3, ("strides/noncontig/*",), _to_copy_ignores_strides),
        Fault("clone_drops_channels_last", "clone of a channels_last tensor returns a contiguous one",
              "strides", 5, ("strides/clone/channels_last*",), _clone_drops_channels_last),
        Fault("foreach_add_last_tail", "_foreach_add(_) leaves the last element of the list's last tensor unwritten",
              "foreach", 4, ("foreach/add/*",), _foreach_add_last_tail, op="_foreach_add"),
        Fault("exp_out_dtype_unchecked", "exp(out=) casts into an out of a dtype CPU refuses instead of raising",
              "out_variants", 3, ("out_variants/exp/*",), _exp_out_dtype_unchecked, op="exp"),
        Fault("erfcx_naive", "special_erfcx is nan for x > 26.6 (exp(x^2) * erfc(x) overflows to inf * 0)",
              "special_values", 5, ("special_values/erfcx/*",), _erfcx_naive, op="special_erfcx"),
        Fault("set_ignores_offset", "set_(storage, offset, size, stride) ignores the storage offset",
              "query_mutation", 3, ("query_mutation/set_/*",), _set_ignores_offset, op="set_"),
        Fault("device_count_wrong", "device_count() says 2, but index 1 does not exist",
              "device_api", 6, ("device_api/module/device_count", "device_api/module/set_device", "device_api/accelerator/*"),
              _device_count_wrong),
        Fault("cdist_skips_root", "_cdist_forward skips the final 1/p root for p other than 1 and 2",
              "generated", 8, ("generated/_cdist_forward/*",), _cdist_skips_root, op="_cdist_forward"),
        Fault("sin_fast_math", "float32 sin is accurate to an absolute 2^-17 only: inside the tolerance, much "
              "less accurate than CPU against the float64 truth", "opinfo", 2, ("opinfo/sin/float32/forward",),
              _sin_fast_math, dtype="float32", op="sin"),
        Fault("memory_never_freed", "memory_allocated() never decreases after tensors are freed",
              "memory", 6, ("memory/stats/*",), _memory_never_freed),
        *faults_agree.FAULTS,
        *faults_amp.FAULTS,
        *faults_effects.FAULTS,
        *FLAKY_FAULTS,
        *faults_data.FAULTS,
        *faults_distributed.FAULTS,
        *faults_field.FAULTS,
        *faults_unlisted.FAULTS,
        *faults_axes.FAULTS,
    )
}


def active() -> list[str]:
    return list(settings.current().sim_fault)


def activate(names: list[str]) -> None:
    for name in names:
        fault = FAULTS.get(name)
        if fault is None:
            # UsageError, which import_backend passes on as it is: a typo is the user's, not the backend's
            raise UsageError(f"{settings.env_name('sim_fault')}: unknown fault '{name}'"
                             + did_you_mean(name, FAULTS, "`torchcts selftest --list` lists the planted faults"))
        fault.install()


def activate_from_env() -> None:
    activate(active())
