"""Field cases of the layout classes L1-L7 (docs/bug-classes.md): strided, offset and expanded operands,
strided outputs, channels_last inputs, result layouts and writes through views, each the input
situation of one real backend bug report (the `cite=` URL), compared with CPU.

A view is always built on each side from a contiguous base (`run_both` moves the bases; the case's
function makes the view), because copying a view to the device keeps neither its storage offset nor
the gaps of a stepped slice: the device must see the same strides and offset CPU sees.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, expect, on_cpu, run_both, sample, to_device

SUITE = CaseSet("field")
cases = SUITE.cases
F32 = ("float32",)
VALUES = 3  # values on non-contiguous operands: the strides suite's level for them
LAYOUT = 5  # memory formats and result layouts: the strides suite's level for layout rules


def _distinct(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Distinct values (a permutation of 1..n, scaled): no ties, so sort/argmax have one answer."""
    g = torch.Generator().manual_seed(seed)
    n = 1
    for s in shape:
        n *= s
    return ((torch.randperm(n, generator=g) + 1).to(torch.float64) / 4).reshape(shape).to(dtype)


def _same_layout(ctx: CaseContext, got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """The device result's strides and storage offset are CPU's."""
    g, w = (list(got.stride()), got.storage_offset()), (list(want.stride()), want.storage_offset())
    ctx.describe(strides=g[0], expected_strides=w[0])
    expect(g == w, f"{what}: strides/offset differ from CPU's", got=g, expected=w)


# ---- L1: strided input read as contiguous -------------------------------------------------------

@SUITE.case("L1/pytorch-pytorch-175187", level=VALUES, dtypes=F32, ops=("aten::digamma", "aten::sort"),
            cite="https://github.com/pytorch/pytorch/issues/175187")
def digamma_sort_transposed(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS digamma and sort read a transposed input's storage linearly (right results for the wrong
    elements): digamma of a (2, 3).t() and sort of a (2, 2).t() along dim 0."""
    run_both(ctx, lambda b: torch.digamma(b.t()), _distinct((2, 3), dtype, ctx.seed), category="special")
    run_both(ctx, lambda b: torch.sort(b.t(), dim=0), _distinct((4, 5), dtype, ctx.seed + 1))


@SUITE.case("L1/pytorch-pytorch-118115", level=VALUES, dtypes=F32, ops=("aten::addcdiv_",),
            cite="https://github.com/pytorch/pytorch/issues/118115")
def addcdiv_transposed(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS addcdiv_ into a transposed (2, 3).t() tensor with transposed operands gave wrong values
    (every optimizer using addcdiv failed)."""
    z = on_cpu(lambda: sample((2, 3), dtype, ctx.seed + 2).abs() + 1)
    run_both(ctx, lambda x, y, d: x.t().addcdiv_(y.t(), d.t(), value=0.5),
             sample((2, 3), dtype, ctx.seed), sample((2, 3), dtype, ctx.seed + 1), z)


@SUITE.case("L1/pytorch-pytorch-124834", level=VALUES, dtypes=F32, ops=("aten::elu",),
            cite="https://github.com/pytorch/pytorch/issues/124834")
def elu_transposed(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS F.elu of a (1, 1024, 500).transpose(1, 2) input differed from CPU (contiguous was right)."""
    run_both(ctx, lambda x: F.elu(x.transpose(1, 2), 1.0), sample((1, 1024, 500), dtype, ctx.seed))


@SUITE.case("L1/pytorch-pytorch-192212", level=VALUES, dtypes=F32, ops=("aten::convolution",),
            cite="https://github.com/pytorch/pytorch/issues/192212")
def conv2d_sliced_weight(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS conv2d read a non-contiguous weight `weight5d[:, :, 1]` (a 2-D kernel sliced from a 3-D
    one) wrong by 212 in magnitude; .contiguous() fixed it."""
    run_both(ctx, lambda x, w: F.conv2d(x, w[:, :, 1]), sample((2, 16, 12, 20), dtype, ctx.seed),
             sample((3, 16, 3, 3, 3), dtype, ctx.seed + 1), category="conv")


@SUITE.case("L1/pytorch-pytorch-160740", level=VALUES, dtypes=F32, ops=("aten::argmax", "aten::argmin"),
            cite="https://github.com/pytorch/pytorch/issues/160740")
def argmax_strided(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS argmax/argmin of a transposed (5, 5).t() or stepped [::2, ::2] input raised 'view size is
    not compatible' where CPU returns the flat index."""
    base = _distinct((5, 5), dtype, ctx.seed)
    for view in (lambda t: t.t(), lambda t: t[::2, ::2]):
        run_both(ctx, lambda b, v=view: (torch.argmax(v(b)), torch.argmin(v(b))), base)


@SUITE.case("L1/intel-torch-xpu-ops-4440", level=VALUES, dtypes=F32, ops=("aten::linear", "aten::mm"),
            cite="https://github.com/intel/torch-xpu-ops/issues/4440")
def linear_transposed_weight_rows(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU F.linear with a transposed weight (W.t(), as nn.Linear passes it) gave different outputs for
    identical rows of one batch: each output row of identical input rows must be bit-identical."""
    x = on_cpu(lambda: sample((64, 256), dtype, ctx.seed).unsqueeze(0).expand(4, 64, 256).contiguous())
    w = sample((256, 8), dtype, ctx.seed + 1)
    y = run_both(ctx, lambda a, b: F.linear(a, b.t()), x, w, category="matmul").cpu()
    worst = max(float((y[i] - y[0]).abs().max()) for i in range(1, y.shape[0]))
    expect(worst == 0.0, "identical input rows gave different outputs (not batch-invariant)", max_difference=worst)


# ---- L2: strided or offset output ---------------------------------------------------------------

@SUITE.case("L2/pytorch-pytorch-100764", level=VALUES, dtypes=F32, ops=("aten::neg.out",),
            cite="https://github.com/pytorch/pytorch/issues/100764")
def neg_out_transposed(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.neg(x, out=y.t()) wrote the result in the wrong order ([[-0, -2], [-1, -3]])."""
    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = y.t()
        torch.neg(x, out=out)
        return y
    run_both(ctx, fn, on_cpu(lambda: torch.arange(4.0, dtype=dtype).reshape(2, 2)), torch.zeros(2, 2, dtype=dtype))


@SUITE.case("L2/pytorch-pytorch-124621", level=VALUES, dtypes=F32, ops=("aten::mse_loss",),
            cite="https://github.com/pytorch/pytorch/issues/124621")
def mse_loss_strided(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS mse_loss of transposed inputs needs a strided output it could not write (fixed by scattering a
    contiguous result back, pytorch/pytorch#125696): reduction 'none' and 'mean' on .t() inputs."""
    for reduction in ("none", "mean"):
        run_both(ctx, lambda a, b, r=reduction: F.mse_loss(a.t(), b.t(), reduction=r),
                 sample((6, 9), dtype, ctx.seed), sample((6, 9), dtype, ctx.seed + 1),
                 category="elementwise" if reduction == "none" else "reduction")


@SUITE.case("L2/intel-torch-xpu-ops-3194", level=VALUES, dtypes=F32, ops=("aten::addmv.out",),
            cite="https://github.com/intel/torch-xpu-ops/issues/3194")
def addmv_out_strided(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU addmv_out lost the strides of a non-contiguous out (strides (2,) became (1,)): the values and
    the out's strides, and the gaps of its storage untouched."""
    def fn(b: torch.Tensor, m: torch.Tensor, v: torch.Tensor, store: torch.Tensor) -> tuple[torch.Tensor, list[int]]:
        out = store[::2]
        torch.addmv(b, m, v, out=out)
        return store, list(out.stride())
    args = (sample((5,), dtype, ctx.seed), sample((5, 4), dtype, ctx.seed + 1), sample((4,), dtype, ctx.seed + 2),
            torch.full((10,), -7.0, dtype=dtype))
    dargs = to_device(ctx, *args)
    (want, want_strides), (got, got_strides) = on_cpu(fn, *args), fn(*dargs)
    expect(got_strides == want_strides, "addmv out= changed the strides of a non-contiguous out",
           got=got_strides, expected=want_strides)
    ctx.assert_close(got, want, category="matmul")


# ---- L3: storage offset ignored -----------------------------------------------------------------

@SUITE.case("L3/pytorch-pytorch-86052", level=VALUES, dtypes=F32, ops=("aten::_to_copy", "aten::copy_"),
            cite="https://github.com/pytorch/pytorch/issues/86052")
def transfer_offset_row(ctx: CaseContext, dtype: torch.dtype) -> None:
    """`torch.arange(2)[1].detach().to("mps")` gave tensor(0): a CPU view with a storage offset (the
    report's 0-dim one, a row, the rows from 1 on, a column) copied to the device, and the way back."""
    x = sample((3, 4), dtype, ctx.seed)
    for view in (lambda t: t.reshape(-1)[1].detach(), lambda t: t[1].detach(), lambda t: t[1:], lambda t: t[:, 1]):
        src = view(x)
        got = src.to(ctx.device, copy=True)
        expect(torch.equal(got.cpu(), src), "a CPU view with a storage offset copied to the device differs",
               offset=src.storage_offset(), got=got.cpu().tolist(), expected=src.tolist())
        back = view(x.to(ctx.device, copy=True)).cpu()
        expect(torch.equal(back, src), "a device view with a storage offset copied to the host differs",
               offset=src.storage_offset(), got=back.tolist(), expected=src.tolist())


@SUITE.case("L3/pytorch-pytorch-87856", level=VALUES, dtypes=("float32", "int64"), ops=("aten::stack", "aten::cat"),
            cite="https://github.com/pytorch/pytorch/issues/87856")
def stack_offset_slices(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS stack((t[:2], t[2:]), dim=-1) of slices of one tensor ignored the second slice's offset
    (unsqueezed, contiguous, offset 2: fixed by pytorch/pytorch#91071)."""
    t = on_cpu(lambda: torch.tensor([1, 2, 3, 4]).to(dtype))
    run_both(ctx, lambda b: torch.stack((b[:2], b[2:]), dim=-1), t)
    run_both(ctx, lambda b: torch.cat((b[2:].unsqueeze(-1), b[:2].unsqueeze(-1)), dim=-1), t)


@SUITE.case("L3/intel-torch-xpu-ops-1656", level=VALUES, dtypes=("float32", "float16"),
            ops=("aten::scaled_dot_product_attention",), cite="https://github.com/intel/torch-xpu-ops/issues/1656")
def sdpa_offset_inputs(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU eager attention on q/k that start at storage offset 997 of a flat buffer (as flex attention's
    tests build them) differed from CPU: (2, 4, 128, 64) and (2, 4, 256, 64) views at offset 997."""
    b, h, s, d = 2, 4, 256, 64
    size = b * h * s * d * 2
    flat = sample((3, size), dtype, ctx.seed)

    def fn(buf: torch.Tensor) -> torch.Tensor:
        strides = (h * s * d, s * d, d, 1)
        # as_strided's offset counts from the storage's start: row i's element 997 is i * size + 997
        q = buf.as_strided((b, h, s // 2, d), strides, 997)
        k = buf.as_strided((b, h, s, d), strides, size + 997)
        v = buf.as_strided((b, h, s, d), strides, 2 * size + 997)
        return F.scaled_dot_product_attention(q, k, v)
    run_both(ctx, fn, flat, category="matmul")


@SUITE.case("L3/pytorch-pytorch-95482", level=VALUES, dtypes=F32, ops=("aten::clone", "aten::mul.Tensor"),
            cite="https://github.com/pytorch/pytorch/issues/95482")
def three_sliced_dims(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS views sliced in three or more dimensions computed the wrong offset for the later ones (fixed
    by kulinseth/pytorch#362): a (4, 5, 6) base viewed as [1:3, 1:4, 2:5] and as [3:, 2:, 1:4]."""
    base = sample((4, 5, 6), dtype, ctx.seed)
    for view in (lambda t: t[1:3, 1:4, 2:5], lambda t: t[3:, 2:, 1:4]):
        run_both(ctx, lambda b, v=view: (v(b).clone(), v(b) * 2), base)


@SUITE.case("L3/pytorch-pytorch-183631", level=VALUES, dtypes=("bool", "uint8"), ops=("aten::fill_.Scalar",),
            cite="https://github.com/pytorch/pytorch/issues/183631")
def fill_offset_view_bool(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `x[1:].fill_(True)` on a 16-element bool x (a view at storage offset 1) wrote position 0 and
    skipped position 12 (a regression in 2.12; 1-D bool only): the whole base after fill_."""
    def fn(x: torch.Tensor) -> torch.Tensor:
        x[1:].fill_(True)
        x[3:9:2].fill_(False)
        return x
    run_both(ctx, fn, torch.zeros(16, dtype=dtype))


@SUITE.case("L3/pytorch-pytorch-182822", level=VALUES, dtypes=("bool",),
            ops=("aten::bitwise_and.Tensor", "aten::bitwise_or.Tensor", "aten::bitwise_xor.Tensor"),
            cite="https://github.com/pytorch/pytorch/issues/182822")
def bitwise_zero_dim_offset_operand(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS bitwise_and/or/xor on bool read byte 0 of a 0-dim operand's storage instead of its offset
    (`base[1]` of [True, False]): [True, False, True] & base[1] gave [True, False, True]."""
    base, a = torch.tensor([True, False]), torch.tensor([True, False, True])
    for op in (torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor):
        run_both(ctx, lambda x, b, f=op: (f(x, b[1]), f(b[1], x), f(x, b[0])), a, base)


@SUITE.case("L3/pytorch-pytorch-84364", level=VALUES, dtypes=F32, ops=("aten::div.Tensor", "aten::unsqueeze"),
            cite="https://github.com/pytorch/pytorch/issues/84364")
def divide_by_offset_new_axis(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `tensor(1.) / tensor([2., 2.])[1][None]` gave inf (index 0 was right; .detach() hid it), so
    k-diffusion's samplers made black images: a 0-dim dividend over an offset element given a new axis."""
    run_both(ctx, lambda one, t: (one / t[1][None], one / t[0][None], t[1][None] * 3), torch.tensor(1.0, dtype=dtype),
             on_cpu(lambda: torch.tensor([2.0, 4.0], dtype=dtype)))


# ---- L4: channels_last inputs -------------------------------------------------------------------

@SUITE.case("L4/pytorch-pytorch-180984", level=LAYOUT, dtypes=F32, requires=("channels_last",),
            ops=("aten::convolution",), cite="https://github.com/pytorch/pytorch/issues/180984")
def conv2d_channels_last_slice(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS conv2d of a channel slice `shared[:, :1]` of a channels_last tensor (its strides look
    channels_last but it is not packed) differed from CPU by 0.3; a (1, 2, 1, 2) and a (2, 6, 5, 7) base."""
    for shape, width in (((1, 2, 1, 2), 1), ((2, 6, 5, 7), 3)):
        run_both(ctx, lambda x, w, n=width: F.conv2d(x.contiguous(memory_format=torch.channels_last)[:, :n], w),
                 sample(shape, dtype, ctx.seed), sample((4, width, 1, 1), dtype, ctx.seed + 1), category="conv")


@SUITE.case("L4/pytorch-pytorch-141471", level=LAYOUT, dtypes=F32, requires=("channels_last",),
            ops=("aten::convolution",), cite="https://github.com/pytorch/pytorch/issues/141471")
def conv3d_channels_last_3d(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS Conv3d of a channels_last_3d input gave wrong output (fixed by pytorch/pytorch#141780)."""
    run_both(ctx, lambda x, w: F.conv3d(x.contiguous(memory_format=torch.channels_last_3d), w, padding=1),
             sample((2, 3, 4, 5, 6), dtype, ctx.seed), sample((5, 3, 3, 3, 3), dtype, ctx.seed + 1), category="conv")


@SUITE.case("L4/pytorch-pytorch-89353", level=LAYOUT, dtypes=("int32", "float32"), requires=("channels_last",),
            ops=("aten::cat",), cite="https://github.com/pytorch/pytorch/issues/89353")
def cat_channels_last(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS cat of channels_last tensors was wrong (test_output_match_cat_cpu_int32 failed once OpInfo got
    a channels_last sample): along channels and along the batch, values and the result's strides
    against CPU's."""
    a, b = sample((2, 3, 4, 5), dtype, ctx.seed), sample((2, 3, 4, 5), dtype, ctx.seed + 1)
    for dim in (1, 0):
        def fn(x: torch.Tensor, y: torch.Tensor, d: int = dim) -> torch.Tensor:
            cl = torch.channels_last
            return torch.cat([x.contiguous(memory_format=cl), y.contiguous(memory_format=cl)], d)
        got = run_both(ctx, fn, a, b)
        _same_layout(ctx, got, on_cpu(fn, a, b), f"cat of channels_last tensors along dim {dim}")


# ---- L5: result layout differs from CPU ---------------------------------------------------------

@SUITE.case("L5/pytorch-pytorch-170181", level=LAYOUT, dtypes=("float32", "bool"), ops=("aten::nonzero",),
            cite="https://github.com/pytorch/pytorch/issues/170181")
def nonzero_strides(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS nonzero() returned a C-contiguous result where CPU returns it column-major (strides (1, n))."""
    x = on_cpu(lambda: (sample((4, 5), torch.float32, ctx.seed) > 0).to(dtype))
    got = run_both(ctx, torch.nonzero, x)
    _same_layout(ctx, got, on_cpu(torch.nonzero, x), "nonzero")


@SUITE.case("L5/pytorch-pytorch-94877", level=LAYOUT, dtypes=F32, requires=("channels_last",),
            ops=("aten::max_pool2d_with_indices",), cite="https://github.com/pytorch/pytorch/issues/94877")
def maxpool_channels_last_result(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS MaxPool2d re-strided a channels_last input to contiguous and did not convert the result back
    (kulinseth/pytorch#325): the result and its indices are channels_last on CPU."""
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return F.max_pool2d(x.contiguous(memory_format=torch.channels_last), 2, return_indices=True)
    x = _distinct((2, 3, 6, 8), dtype, ctx.seed)
    got = run_both(ctx, fn, x)
    want = on_cpu(fn, x)
    _same_layout(ctx, got[0], want[0], "max_pool2d of a channels_last input")
    _same_layout(ctx, got[1], want[1], "max_pool2d's indices of a channels_last input")


# ---- L6: stride-0 (expanded) operands -----------------------------------------------------------

@SUITE.case("L6/flagos-ai-FlagGems-6404", level=VALUES, dtypes=("float32", "bfloat16"),
            ops=("aten::clamp.Tensor", "aten::lt.Tensor", "aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor"),
            cite="https://github.com/flagos-ai/FlagGems/pull/6404")
def pointwise_stride_zero_operands(ctx: CaseContext, dtype: torch.dtype) -> None:
    """FlagGems on Ascend 910C passed the stride-0 dims of broadcast operands into its pointwise kernels,
    and the compiler rejected them ('strides must not be zero'; clamp, lt, add, sub and mul hit it in
    sglang): each op with an expanded (stride-0) operand in 3-, 4- and 5-D, against CPU's."""
    for shape, small in (((4, 5, 6), (4, 1, 6)), ((2, 3, 4, 5), (1, 3, 1, 5)), ((2, 2, 3, 2, 4), (2, 1, 3, 1, 4))):
        x, y = sample(shape, dtype, ctx.seed), sample(small, dtype, ctx.seed + 1)
        run_both(ctx, lambda a, b, s=shape: (torch.clamp(a, min=b.expand(s)), torch.lt(a, b.expand(s)),
                                             a + b.expand(s), b.expand(s) - a, b.expand(s) * a), x, y)


# ---- L7: views, copies and writes through them --------------------------------------------------

@SUITE.case("L7/pytorch-pytorch-189961", level=VALUES, dtypes=F32, ops=("aten::copy_",),
            cite="https://github.com/pytorch/pytorch/issues/189961")
def copy_gappy_views_to_host(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS-to-CPU copy_ between views of equal non-dense strides (x[::2] into parent[::2]) blitted the
    packed bytes: wrong elements, the tail unwritten, the gaps of the CPU parent overwritten."""
    parent = torch.zeros(20, dtype=dtype)
    (src,) = to_device(ctx, torch.arange(20, dtype=dtype))
    parent[::2].copy_(src[::2])
    want = torch.zeros(20, dtype=dtype)
    want[::2] = torch.arange(0, 20, 2, dtype=dtype)
    expect(torch.equal(parent, want), "copy_ from a device x[::2] into a CPU parent[::2] wrote the wrong slots",
           got=parent.tolist(), expected=want.tolist())


@SUITE.case("L7/pytorch-pytorch-86975", level=VALUES, dtypes=F32, ops=("aten::copy_",),
            cite="https://github.com/pytorch/pytorch/issues/86975")
def host_source_into_strided_device_view(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `a1[1:, 1] = b1` (a contiguous CPU source into a strided device destination) was blitted as if
    the destination were contiguous (fixed by kulinseth/pytorch#142)."""
    a = on_cpu(lambda: torch.tensor([[1, 2], [3, 4], [5, 6]], dtype=dtype))
    (d,) = to_device(ctx, a)
    b = torch.tensor([-1, -2], dtype=dtype)
    a[1:, 1] = b
    d[1:, 1] = b
    expect(torch.equal(d.cpu(), a), "a CPU source written into a strided device view landed in the wrong slots",
           got=d.cpu().tolist(), expected=a.tolist())


@SUITE.case("L7/pytorch-xla-9025", level=VALUES, dtypes=F32, ops=("aten::add_.Tensor", "aten::slice.Tensor"),
            cite="https://github.com/pytorch/xla/pull/9025")
def inplace_on_slice_reaches_base(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torchax: `x[0:1].add_(1)` on x = zeros(5) left x unchanged (slices were copies): in-place ops on a
    slice, a transpose and a narrow must reach the base."""
    def fn(x: torch.Tensor) -> torch.Tensor:
        x[0:1].add_(1)
        x[1:3].add_(x[1:3])
        x.view(5, 1).t()[0, 4:].mul_(3)
        return x
    run_both(ctx, fn, on_cpu(lambda: torch.arange(1, 6, dtype=dtype)))
