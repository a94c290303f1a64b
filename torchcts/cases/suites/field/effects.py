"""Field cases of the effect classes E1-E4 (docs/bug-classes.md): buffers an op updates, in-place ops,
out= arguments and tensors an op must leave alone, each the input situation of one real backend bug
report (the `cite=` URL).

Every case writes into its arguments (run_both copies them to the device before CPU's run writes
the CPU ones), and what is compared is every tensor the op may write (the running statistics
with the gaps of their storage, the out tensor, the base of a view), not only its return value.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, expect, expect_raises, on_cpu, run_both, sample, to_device

SUITE = CaseSet("field")
cases = SUITE.cases
F32 = ("float32",)
LEVEL = 3  # mutation and aliasing: the operators' aliasing level


# ---- E1: running statistics and other buffers an op updates -------------------------------------

@SUITE.case("E1/intel-torch-xpu-ops-2887", level=LEVEL, dtypes=("float32", "float16"), requires=("training",),
            ops=("aten::_native_batch_norm_legit", "aten::native_batch_norm"),
            cite="https://github.com/intel/torch-xpu-ops/pull/2887")
def batch_norm_strided_running_stats(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU batch_norm's contiguous path wrote its statistics as if they were contiguous (fixed by
    intel/torch-xpu-ops#2887 for #2233): training-mode batch norm with running_mean/running_var that
    are stride-2 views; the output and the whole storage of both buffers (the gaps too) against CPU."""
    def fn(x: torch.Tensor, mean_store: torch.Tensor, var_store: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = F.batch_norm(x, mean_store[::2], var_store[::2], training=True, momentum=0.3)
        return out, mean_store, var_store
    run_both(ctx, fn, sample((4, 3, 5), dtype, ctx.seed), torch.full((6,), 0.5, dtype=dtype),
             torch.full((6,), 2.0, dtype=dtype), category="normalization")


@SUITE.case("E1/kulinseth-pytorch-239", level=LEVEL, dtypes=F32, requires=("training",),
            ops=("aten::native_batch_norm",), cite="https://github.com/kulinseth/pytorch/pull/239")
def native_batch_norm_saved_stats(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS native_batch_norm returned the variance where 1/sqrt(var + eps) (save_invstd) was expected, and
    statistics when not training (CPU returns empty ones): both modes, every output and the running
    buffers against CPU's."""
    for training in (True, False):
        def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, rm: torch.Tensor, rv: torch.Tensor,
               t: bool = training) -> tuple[torch.Tensor, ...]:
            return (*torch.native_batch_norm(x, w, b, rm, rv, t, 0.1, 1e-5), rm, rv)
        ctx.describe(training=training)
        got = run_both(ctx, fn, sample((4, 3, 6), dtype, ctx.seed), sample((3,), dtype, ctx.seed + 1),
                        sample((3,), dtype, ctx.seed + 2), torch.zeros(3, dtype=dtype), torch.ones(3, dtype=dtype),
                        category="normalization")
        if not training:
            expect(got[1].numel() == 0 and got[2].numel() == 0,
                   "native_batch_norm in eval mode returned statistics where CPU returns empty tensors",
                   got=[list(got[1].shape), list(got[2].shape)])


# ---- E2: in-place op does not mutate ------------------------------------------------------------

@SUITE.case("E2/microsoft-DirectML-696", level=LEVEL, dtypes=F32, ops=("aten::sum", "aten::copy_", "aten::select.int"),
            cite="https://github.com/microsoft/DirectML/issues/696")
def per_element_assignment(ctx: CaseContext, dtype: torch.dtype) -> None:
    """DirectML: a tensor filled element by element (`tmp[i, j, k] = (...).sum()`) differed from CPU's:
    each element of a (2, 3, 4) tensor assigned the sum of a slice of the input, one at a time."""
    def fn(x: torch.Tensor, tmp: torch.Tensor) -> torch.Tensor:
        for i in range(2):
            for j in range(3):
                for k in range(4):
                    tmp[i, j, k] = (x[i, j, k:] * x[i, :, k].sum()).sum()
        return tmp
    run_both(ctx, fn, sample((2, 3, 4), dtype, ctx.seed), torch.zeros(2, 3, 4, dtype=dtype), category="reduction")


@SUITE.case("E2/pytorch-pytorch-131285", level=LEVEL, dtypes=("float32", "float16"), ops=("aten::masked_fill_.Scalar",),
            cite="https://github.com/pytorch/pytorch/issues/131285")
def masked_fill_inplace_noncontiguous(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS masked_fill_(mask, -inf) of non-contiguous attention weights (8, 5, N) with a (8, 1, N) mask
    changed unmasked values (out-of-place masked_fill, or .contiguous() first, was right): the base of a
    transposed view after masked_fill_ against CPU's."""
    n = 193
    mask = on_cpu(lambda: sample((8, 1, n), torch.float32, ctx.seed + 1) > 1.0)

    def fn(base: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        base.transpose(1, 2).masked_fill_(m, float("-inf"))
        return base
    run_both(ctx, fn, sample((8, n, 5), dtype, ctx.seed), mask)


# ---- E3: out= not written or not validated ------------------------------------------------------

@SUITE.case("E3/intel-torch-xpu-ops-5237", level=LEVEL, dtypes=("float64",), ops=("aten::histc.out",),
            cite="https://github.com/intel/torch-xpu-ops/issues/5237")
def histc_out_dtype_rejected(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU histc(out=) of a float64 input into an int64 out silently truncated the histogram where CPU
    raises: the device must raise too, and compute into an out of the input's dtype like CPU."""
    x = sample((50,), dtype, ctx.seed)
    cpu_exc = expect_raises(lambda: torch.histc(x, bins=6, min=-8, max=8, out=torch.empty(6, dtype=torch.int64)),
                            "CPU reference: histc into an int64 out")
    (dx,) = to_device(ctx, x)
    expect_raises(lambda: torch.histc(dx, bins=6, min=-8, max=8, out=torch.empty(6, dtype=torch.int64, device=ctx.device)),
                  "histc of a float64 input into an int64 out", type(cpu_exc))
    run_both(ctx, lambda a, o: torch.histc(a, bins=6, min=-8, max=8, out=o), x, torch.empty(6, dtype=dtype))


@SUITE.case("E3/pytorch-pytorch-166272", level=LEVEL, dtypes=("complex64",), ops=("aten::_fft_c2r.out", "aten::_fft_c2c.out"),
            cite="https://github.com/pytorch/pytorch/pull/166272")
def fft_out_unexpected(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS FFT crashed ('Invalid KernelDAG, equalShape for destination failed') for an out of an
    unexpected size (test_out_warning_fft_hfft) and for an out of an unexpected dtype, where it must
    resize the out or raise: hfft and fft into too-small outs are resized and written, hfft into a
    complex or an integer out raises as on CPU."""
    x = sample((5,), dtype, ctx.seed)
    run_both(ctx, lambda a, o: (torch.fft.hfft(a, out=o), o), x, torch.empty(3), category="fft")
    run_both(ctx, lambda a, o: (torch.fft.fft(a, out=o), o), x, torch.empty(2, dtype=dtype), category="fft")
    (dx,) = to_device(ctx, x)
    for bad in (dtype, torch.int64):
        cpu_exc = expect_raises(lambda b=bad: torch.fft.hfft(x, out=torch.empty(8, dtype=b)),
                                f"CPU reference: hfft into a {bad} out")
        expect_raises(lambda b=bad: torch.fft.hfft(dx, out=torch.empty(8, dtype=b, device=ctx.device)),
                      f"hfft into a {bad} out", type(cpu_exc))


@SUITE.case("E3/pytorch-pytorch-150024", level=LEVEL, dtypes=F32, ops=("aten::add.out", "aten::mul.out"),
            cite="https://github.com/pytorch/pytorch/pull/150024")
def binary_out_dtype_interleaved(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS binary kernels were cached without the out dtype: the same add/mul of float32 operands into a
    float16, a float32 and a float64 out in turn, each against CPU's (a stale kernel writes the first
    dtype's result into the next out)."""
    a, b = sample((5, 7), dtype, ctx.seed), sample((5, 7), dtype, ctx.seed + 1)
    for out_dtype in (torch.float16, torch.float32, torch.float64, torch.float16):
        for name, op in (("add", torch.add), ("mul", torch.mul)):
            ctx.describe(op=name, out_dtype=str(out_dtype))
            got = run_both(ctx, lambda x, y, o, f=op: f(x, y, out=o), a, b, torch.empty(5, 7, dtype=out_dtype))
            expect(got.dtype == out_dtype, f"{name}(out=) returned a tensor of another dtype than its out",
                   got=str(got.dtype), expected=str(out_dtype))


# ---- E4: tensors mutated that the op must not touch ---------------------------------------------

SOFTMAX_SHAPE = (10, 12416, 12416)  # the report's attention scores: 1.54e9 float16 elements, 2.9 GB


@SUITE.case("E4/pytorch-pytorch-96602", level=5, dtypes=("float16",), ops=("aten::_softmax",),
            cite="https://github.com/pytorch/pytorch/issues/96602")
def softmax_large_input_untouched(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS softmax over (10, 12416, 12416) float16 scores (all 0.0598) returned NaN, and the input became
    NaN too: made on the device, where the manifest's resource limits allow its 2.9 GB twice; the input
    must keep its value and every probability be 1/12416."""
    numel = math.prod(SOFTMAX_SHAPE)
    need = math.ceil(numel * 2 / (1 << 20)) + 1
    limits = ctx.manifest.resource_limits
    if (limits.get("max_tensor_mb") or 0) < need or (limits.get("max_device_memory_mb") or 0) < 2 * need + 64:
        ctx.not_applicable(f"softmax over {SOFTMAX_SHAPE} float16 needs resource_limits.max_tensor_mb >= {need} and "
                           f"max_device_memory_mb >= {2 * need + 64}; the manifest's: {limits}")
    x = torch.full(SOFTMAX_SHAPE, 0.0598, dtype=dtype, device=ctx.device)
    probs = x.softmax(dim=-1)
    with ctx.helper_op("aten::eq.Scalar"):
        untouched = bool((x == torch.tensor(0.0598, dtype=dtype)).all())
        p = torch.tensor(1 / SOFTMAX_SHAPE[-1], dtype=dtype).item()
        right = bool(((probs - p).abs() <= 1e-7).all())
    expect(untouched, "softmax changed its input")
    expect(right, "softmax of a constant row is not 1/n everywhere", expected=p)


@SUITE.case("E4/pytorch-xla-3392", level=LEVEL, dtypes=F32, ops=("aten::add.Tensor",),
            cite="https://github.com/pytorch/xla/issues/3392")
def data_rebind_leaves_views(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XLA updated the views of t after `t.data = t.data + 1`, which rebinds t to a new tensor and changes
    no memory: a view taken before keeps the old values, t has the new ones."""
    def fn(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        v = t[:2]
        t.data = t.data + 1
        return t, v
    run_both(ctx, fn, on_cpu(lambda: torch.arange(4, dtype=dtype)))
