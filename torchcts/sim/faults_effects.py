"""The sim's planted faults that a check of returned values within tolerance passes (issue 39 items
2 and 4): what a call does besides returning, caught by the OpInfo suite's effect checks
(cases/opinfo/effects.py: the arguments after the call, results kept alive across samples), and
flushed subnormals, caught by the subnormals suite against the manifest's claim; each in a plain
`--op` run. Joined to the registry in faults.py.
"""

from __future__ import annotations

import torch

from torchcts.sim.fault_model import Fault, on_op

aten = torch.ops.aten


@on_op("_softmax")
def _softmax_input_scratch(func, args, kwargs, call):
    """float32 softmax uses its input as scratch: it leaves exp(x - max) there (a kernel that saves a
    buffer by working in place on a contiguous input it does not own)."""
    out = call(*args, **kwargs)
    x, dim = args[0], args[1]
    if func is aten._softmax.default and x.dtype == torch.float32 and x.is_contiguous() and x.numel():
        with torch.no_grad():
            x.sub_(x.amax(dim, keepdim=True)).exp_()
    return out


@on_op("native_batch_norm", "_native_batch_norm_legit")
def _batch_norm_stats_unchanged(func, args, kwargs, call):
    """Training-mode float32 batch norm normalises with the batch's statistics but never writes the
    running mean and variance back (the update kernel is skipped): the module's buffers stay put."""
    running = [t for t in args[3:5] if isinstance(t, torch.Tensor)]
    if not running or args[0].dtype != torch.float32:
        return call(*args, **kwargs)
    before = [t.clone() for t in running]
    out = call(*args, **kwargs)
    for t, old in zip(running, before, strict=True):
        t.copy_(old)
    return out


_POOL: dict[int, torch.Tensor] = {}
BLOCK = 512  # bytes: the allocator's size class


@on_op("exp")
def _exp_reuses_buffer(func, args, kwargs, call):
    """float32 exp takes its result from an allocator that hands out the block of the last result of the
    same 512-byte size class while that result is still alive: the next exp overwrites a result the
    caller still holds (each returned value is right when returned)."""
    out = call(*args, **kwargs)
    if func is not aten.exp.default or out.dtype != torch.float32 or not out.is_contiguous() or not out.numel():
        return out
    size_class = -(-out.numel() * out.element_size() // BLOCK)
    block = _POOL.get(size_class)
    if block is None:
        block = _POOL[size_class] = torch.empty(size_class * BLOCK // out.element_size(), dtype=out.dtype)
    result = block[: out.numel()].view(out.shape)
    result.copy_(out)
    return result


@on_op("*")
def _subnormals_flushed(func, args, kwargs, call):
    """The device runs with flush-to-zero on for float32 and float64 (a fast-math build default): a
    subnormal in any new result becomes a signed zero (copies onto the device included, so subnormal
    inputs arrive as zeros). Every result is within any atol of PyTorch's; the manifest claims
    subnormals are preserved."""
    out = call(*args, **kwargs)
    if not isinstance(out, torch.Tensor) or out.layout != torch.strided or out.dtype not in (torch.float32, torch.float64):
        return out
    storages = {t.untyped_storage().data_ptr() for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor)
                and t.layout == torch.strided}
    if out.untyped_storage().data_ptr() in storages:  # in-place, out= or a view: memory of an input
        return out
    subnormal = (out != 0) & (out.abs() < torch.finfo(out.dtype).tiny)
    return torch.where(subnormal, torch.zeros_like(out).copysign(out), out) if bool(subnormal.any()) else out


@on_op("index_select")
def _index_select_16bit(func, args, kwargs, call):
    """float32 index_select packs its indices into 16 bits (a compact index path for gathers): an
    index past 65,535 wraps and selects the wrong row. Tables of fewer rows, the only ones OpInfo's
    samples and exploration build, are right."""
    if func is not aten.index_select.default or args[0].dtype != torch.float32:
        return call(*args, **kwargs)
    index = args[2]
    return call(args[0], args[1], torch.where(index >= 0, index % (1 << 16), index), **kwargs)


_TANH_GRAPHS: dict[tuple[int, ...], list[torch.dtype]] = {}  # shape -> the dtypes of its last two calls


@on_op("tanh")
def _tanh_graph_cached_by_shape(func, args, kwargs, call):
    """tanh's graph cache holds two graphs per shape and evicts by shape only: a float32 call of a shape
    whose last two calls were float32 then float16 (or bfloat16) runs the narrow graph (half precision,
    cast back). A run of one dtype, and a change of dtype for good, are right."""
    x = args[0]
    if func is not aten.tanh.default or not x.is_floating_point():
        return call(*args, **kwargs)
    seen = _TANH_GRAPHS.setdefault(tuple(x.shape), [])
    stale = x.dtype == torch.float32 and seen[-2:] in ([torch.float32, torch.float16], [torch.float32, torch.bfloat16])
    seen[:] = [*seen[-1:], x.dtype]
    return call(x.to(seen[-2]), *args[1:], **kwargs).to(x.dtype) if stale else call(*args, **kwargs)


@on_op("neg")
def _neg_out_memory_order(func, args, kwargs, call):
    """float32 neg's out= kernel writes its result in memory order from the start of the destination's
    storage: right for a fresh contiguous out, wrong for a transposed, strided or offset one
    (pytorch/pytorch#100764: MPS `torch.neg(x, out=y.t())`)."""
    out = kwargs.get("out")
    if (func is not aten.neg.out or out is None or out.dtype != torch.float32 or args[0].dtype != torch.float32
            or out.shape != args[0].shape or not out.numel()):
        return call(*args, **kwargs)  # (a destination to resize or refuse takes the kernel's checks)
    result = torch.neg(args[0]).contiguous()
    strides = torch.empty(result.shape).stride()
    out.as_strided(result.shape, strides, 0).copy_(result)
    return out


_CUMSUM_CALLS = [0]


@on_op("cumsum")
def _cumsum_order_alternates(func, args, kwargs, call):
    """float32 cumsum of a short scan (at most 64 elements) alternates from call to call between two
    engines that add each prefix in opposite orders (first to last, last to first): two calls of one
    input differ in their last bits, each within any tolerance of CPU's (finite inputs well inside the
    range, where the order cannot overflow), though the device claims deterministic algorithms."""
    x = args[0]
    if (func is not aten.cumsum.default or x.dtype != torch.float32 or kwargs.get("dtype") is not None or x.dim() == 0
            or not x.numel() or x.shape[args[1]] > 64 or not bool((x.abs() < 1e30).all())):
        return call(*args, **kwargs)
    _CUMSUM_CALLS[0] += 1
    if _CUMSUM_CALLS[0] % 2:
        return call(*args, **kwargs)
    dim = args[1] % x.dim()
    prefixes = []
    for k in range(x.shape[dim]):
        acc = x.select(dim, k).clone()
        for j in range(k - 1, -1, -1):
            acc = acc + x.select(dim, j)
        prefixes.append(acc)
    return torch.stack(prefixes, dim)


FAULTS = (
    Fault("softmax_input_scratch", "float32 softmax leaves exp(x - max) in its input (scratch in place)",
          "opinfo", 2, ("opinfo/softmax/float32/*", "opinfo/_softmax*/float32/*", "opinfo/*softmax*/float32/*"),
          _softmax_input_scratch, dtype="float32", op="softmax"),
    Fault("batch_norm_stats_unchanged", "float32 training batch norm never updates running_mean/running_var",
          "opinfo", 2, ("opinfo/nn.functional.batch_norm/float32/*", "opinfo/*batch_norm*/float32/*"),
          _batch_norm_stats_unchanged, dtype="float32", op="nn.functional.batch_norm"),
    Fault("subnormals_flushed", "float32 and float64 subnormal results flushed to zero (FTZ on) where the manifest "
          "claims preserve", "subnormals", 5, ("subnormals/*/float32", "subnormals/*/float64"), _subnormals_flushed,
          dtype="float32"),
    Fault("index_select_16bit", "float32 index_select wraps indices past 65,535 (16-bit index path)",
          "magnitude", 5, ("magnitude/index/index_select/*",), _index_select_16bit, dtype="float32", op="index_select"),
    Fault("tanh_graph_cached_by_shape", "tanh's graph cache evicts by shape only: float32, float16, float32 of one "
          "shape computes the second float32 call in float16", "opinfo", 2, ("opinfo/tanh/float32/forward",),
          _tanh_graph_cached_by_shape, dtype="float32", op="tanh"),
    Fault("neg_out_memory_order", "float32 neg out= writes in memory order from the storage's start, ignoring the "
          "destination's strides and offset", "opinfo", 3, ("opinfo/neg/float32/out",), _neg_out_memory_order,
          dtype="float32", op="neg"),
    Fault("cumsum_order_alternates", "float32 cumsum alternates between two scan orders from call to call (not bit "
          "for bit deterministic where the manifest claims deterministic)", "opinfo", 2, ("opinfo/cumsum/float32/forward",),
          _cumsum_order_alternates, dtype="float32", op="cumsum"),
    Fault("exp_reuses_buffer", "float32 exp hands out a block still in use: the next exp of its size class overwrites it",
          "opinfo", 2, ("opinfo/exp/float32/*",), _exp_reuses_buffer, dtype="float32", op="exp"),
)
