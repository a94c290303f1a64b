"""Field cases of the shape classes L8-L10 (docs/bug-classes.md): rank above 4, 0-dim tensors and
empty tensors, each the input situation of one real backend bug report (the `cite=` URL).

Values are compared with CPU. Where CPU's answer is empty (no element to compare) or a lone NaN or
zero, the case states what the answer is (shape, dtype, the value) as a property, since comparing an
empty tensor proves nothing (oracle/weak.py); where a report's trigger is a crash or a raise, the
device computing CPU's answer is the check.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, expect, on_cpu, run_both, sample, to_device

SUITE = CaseSet("field")
cases = SUITE.cases
F32 = ("float32",)
LEVEL = 3  # edge shapes of ordinary ops: the operators' aliasing and errors level


def _empty_like_cpu(ctx: CaseContext, fn, *args: torch.Tensor, what: str) -> None:  # noqa: ANN001
    """fn's device result has CPU's shape and dtype (both empty results: no values to compare)."""
    want = on_cpu(fn, *args)
    got = fn(*to_device(ctx, *args))
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,), strict=True):
        expect(g.shape == w.shape and g.dtype == w.dtype, f"{what}: the result's shape or dtype differs from CPU's",
               got=[list(g.shape), str(g.dtype)], expected=[list(w.shape), str(w.dtype)])
        expect(g.device.type == ctx.device_type, f"{what}: the result is not on the device", got=str(g.device))


# ---- L8: rank above 4 ---------------------------------------------------------------------------

@SUITE.case("L8/tenstorrent-tt-metal-12154", level=LEVEL, dtypes=("float32", "bfloat16"),
            ops=("aten::permute", "aten::clone"), cite="https://github.com/tenstorrent/tt-metal/issues/12154")
def permute_rank6(ctx: CaseContext, dtype: torch.dtype) -> None:
    """tt-metal permute supported rank 4 at most; Swin permutes 6-D windows ((0, 1, 3, 2, 4, 5), and
    (0, 5, 1, 3, 2, 4) in SD 3.5): both, materialized."""
    x = sample((2, 3, 4, 3, 2, 5), dtype, ctx.seed)
    for dims in ((0, 1, 3, 2, 4, 5), (0, 5, 1, 3, 2, 4)):
        run_both(ctx, lambda t, d=dims: t.permute(d).contiguous(), x)


@SUITE.case("L8/tenstorrent-pytorch2.0_ttnn-585", level=LEVEL, dtypes=("float32", "bfloat16"),
            ops=("aten::transpose.int", "aten::clone", "aten::add.Tensor"),
            cite="https://github.com/tenstorrent/pytorch2.0_ttnn/issues/585")
def transpose_rank5(ctx: CaseContext, dtype: torch.dtype) -> None:
    """ttnn.transpose did not support rank > 4 (a (1, 197, 1, 3, 1024) tensor in a ViT): a rank-5
    transpose of dims 1 and 3, materialized and added to a contiguous tensor of its shape."""
    x = sample((1, 7, 1, 3, 16), dtype, ctx.seed)
    y = sample((1, 3, 1, 7, 16), dtype, ctx.seed + 1)
    run_both(ctx, lambda t, u: (t.transpose(1, 3).contiguous(), t.transpose(1, 3) + u), x, y)


@SUITE.case("L8/pytorch-pytorch-121685", level=LEVEL, dtypes=("bool", "uint8"), ops=("aten::copy_", "aten::clone"),
            cite="https://github.com/pytorch/pytorch/pull/121685")
def copy_bool_rank6(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS copies of bool tensors with more than 5 dims were wrong (pytorch/pytorch#121439): a rank-6 bool
    tensor to the device and back, and a permuted rank-6 view materialized on the device."""
    x = on_cpu(lambda: (sample((2, 3, 2, 2, 3, 2), torch.float32, ctx.seed) > 0).to(dtype))
    got = x.to(ctx.device, copy=True).cpu()
    expect(torch.equal(got, x), "a rank-6 tensor copied to the device and back differs", wrong=int((got != x).sum()))
    run_both(ctx, lambda t: t.permute(5, 1, 0, 3, 2, 4).contiguous(), x)


@SUITE.case("L8/pytorch-pytorch-186885", level=LEVEL, dtypes=("complex64",), ops=("aten::_fft_c2c",),
            cite="https://github.com/pytorch/pytorch/issues/186885")
def fftn_rank6_partial_dims(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS fftn of a rank-6 complex64 input over a subset of its dims ((2, 1, 1, 1, 2, 2), dim=(1, 2),
    norm='forward') killed the process (MPSGraph verification assert): that input, and a
    (2, 3, 2, 2, 3, 2) one over dims (1, 4), against CPU's."""
    run_both(ctx, lambda x: torch.fft.fftn(x, dim=(1, 2), norm="forward"), sample((2, 1, 1, 1, 2, 2), dtype, ctx.seed),
             category="fft")
    run_both(ctx, lambda x: torch.fft.fftn(x, dim=(1, 4)), sample((2, 3, 2, 2, 3, 2), dtype, ctx.seed + 1), category="fft")


# ---- L9: 0-dim tensors --------------------------------------------------------------------------

@SUITE.case("L9/pytorch-pytorch-174381", level=LEVEL, dtypes=F32, ops=("aten::masked_scatter",),
            cite="https://github.com/pytorch/pytorch/pull/174381")
def masked_scatter_zero_dim(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS masked_scatter of a 0-dim self returned shape [1] instead of [] (pytorch/rl hit it)."""
    x, mask, src = torch.tensor(1.0, dtype=dtype), torch.tensor(True), torch.tensor([5.0, 6.0], dtype=dtype)
    got = run_both(ctx, torch.masked_scatter, x, mask, src)
    expect(got is not None and got.shape == torch.Size([]), "masked_scatter of a 0-dim tensor is not 0-dim",
           got=None if got is None else list(got.shape))


@SUITE.case("L9/pytorch-pytorch-160738", level=LEVEL, dtypes=F32, ops=("aten::var.correction",),
            cite="https://github.com/pytorch/pytorch/issues/160738")
def var_zero_dim(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.var(x, dim=0) of a 0-dim x raised 'reduction dim must be in the range of input shape';
    CPU returns NaN (one element, correction 1): a 0-dim result, NaN; with correction=0, 0."""
    (x,) = to_device(ctx, torch.tensor(3.0, dtype=dtype))
    got = torch.var(x, dim=0).cpu()
    expect(got.shape == torch.Size([]) and bool(got.isnan()), "var(x, dim=0) of a 0-dim tensor is not a 0-dim NaN",
           got=got.tolist(), shape=list(got.shape))
    zero = torch.var(x, dim=0, correction=0).cpu()
    expect(zero.shape == torch.Size([]) and float(zero) == 0.0, "var(x, dim=0, correction=0) of a 0-dim tensor is not 0",
           got=zero.tolist())


@SUITE.case("L9/pytorch-pytorch-82809", level=LEVEL, dtypes=F32, requires=("autograd",),
            ops=("aten::embedding", "aten::embedding_dense_backward"),
            cite="https://github.com/pytorch/pytorch/pull/82809")
def embedding_backward_scalar_index(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS embedding backward with a 0-dim index (torch.tensor(5)) raised a rank mismatch from its
    scatter: the weight's gradient against CPU's."""
    def fn(w: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        w = w.detach().requires_grad_()
        (F.embedding(i, w) * torch.arange(1.0, 6.0, dtype=w.dtype, device=w.device)).sum().backward()
        return w.grad
    run_both(ctx, fn, sample((10, 5), dtype, ctx.seed), torch.tensor(5), category="backward")


# ---- L10: empty tensors -------------------------------------------------------------------------

@SUITE.case("L10/pytorch-pytorch-190050", level=LEVEL, dtypes=F32, ops=("aten::linear",),
            cite="https://github.com/pytorch/pytorch/issues/190050")
def linear_zero_in_features(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS F.linear with in_features = 0 aborted the process (an MPSNDArray over a zero-length dim);
    CPU returns the broadcast bias (3, 4, 5), or zeros without bias."""
    x, w, b = torch.zeros(3, 4, 0, dtype=dtype), torch.zeros(5, 0, dtype=dtype), sample((5,), dtype, ctx.seed)
    run_both(ctx, F.linear, x, w, b, category="matmul")
    got = F.linear(*to_device(ctx, x, w)).cpu()
    expect(got.shape == (3, 4, 5) and not bool(got.any()), "linear with in_features=0 and no bias is not zeros",
           shape=list(got.shape))


@SUITE.case("L10/pytorch-pytorch-187399", level=LEVEL, dtypes=F32, ops=("aten::baddbmm", "aten::addbmm"),
            cite="https://github.com/pytorch/pytorch/issues/187399")
def baddbmm_size_zero(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS baddbmm with a size-0 dimension (batch1 (2, 0, 3)) hit 'Placeholder tensor is empty'; the fix
    (pytorch/pytorch#187879) also scales the input by beta when the contraction dim K is 0."""
    _empty_like_cpu(ctx, lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=100), torch.ones(2, 0, 1, dtype=dtype),
                    torch.ones(2, 0, 3, dtype=dtype), torch.ones(2, 3, 1, dtype=dtype), what="baddbmm with M = 0")
    inp = sample((2, 4, 5), dtype, ctx.seed)
    k0 = (torch.zeros(2, 4, 0, dtype=dtype), torch.zeros(2, 0, 5, dtype=dtype))
    run_both(ctx, lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5), inp, *k0, category="matmul")
    run_both(ctx, lambda i, a, b: torch.addbmm(i[0], a, b, beta=0.5), inp, *k0, category="matmul")


@SUITE.case("L10/pytorch-pytorch-137406", level=LEVEL, dtypes=F32, ops=("aten::mv", "aten::mm"),
            cite="https://github.com/pytorch/pytorch/issues/137406")
def matmul_empty_rows(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS `torch.empty((0, 9)) @ torch.ones(9)` raised 'Placeholder tensor is empty' (a SciPy array-API
    test): shape (0,), and the (0, 9) @ (9, 4) matrix product."""
    _empty_like_cpu(ctx, torch.matmul, torch.zeros(0, 9, dtype=dtype), torch.ones(9, dtype=dtype), what="(0, 9) @ (9,)")
    _empty_like_cpu(ctx, torch.matmul, torch.zeros(0, 9, dtype=dtype), torch.ones(9, 4, dtype=dtype),
                    what="(0, 9) @ (9, 4)")


@SUITE.case("L10/pytorch-pytorch-165237", level=LEVEL, dtypes=F32, ops=("aten::dot",),
            cite="https://github.com/pytorch/pytorch/pull/165237")
def dot_empty(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS dot of two empty vectors crashed on an internal assert; CPU returns a 0-dim 0."""
    a, b = to_device(ctx, torch.zeros(0, dtype=dtype), torch.zeros(0, dtype=dtype))
    got = torch.dot(a, b).cpu()
    expect(got.shape == torch.Size([]) and float(got) == 0.0, "dot of two empty vectors is not a 0-dim zero",
           got=got.tolist(), shape=list(got.shape))


@SUITE.case("L10/pytorch-pytorch-186972", level=LEVEL, dtypes=F32, ops=("aten::index_add",),
            cite="https://github.com/pytorch/pytorch/issues/186972")
def index_add_size_zero(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS index_add of a (0, 1, 1, 1) input along dim -3 with a (0, 1, 1, 1) source and alpha -0.25 hit
    'Placeholder tensor is empty' (a fuzzer's crash)."""
    _empty_like_cpu(ctx, lambda x, i, s: torch.index_add(x, -3, i, s, alpha=-0.25), torch.zeros(0, 1, 1, 1, dtype=dtype),
                    torch.tensor([0]), torch.zeros(0, 1, 1, 1, dtype=dtype), what="index_add of a size-0 input")


@SUITE.case("L10/pytorch-pytorch-161824", level=LEVEL, dtypes=F32, ops=("aten::isposinf", "aten::isneginf"),
            cite="https://github.com/pytorch/pytorch/pull/161824")
def isposinf_empty(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS isposinf/isneginf of torch.empty(0) hit 'Placeholder tensor is empty'."""
    _empty_like_cpu(ctx, lambda x: (torch.isposinf(x), torch.isneginf(x)), torch.zeros(0, dtype=dtype),
                    what="isposinf/isneginf of an empty tensor")


@SUITE.case("L10/intel-torch-xpu-ops-3938", level=LEVEL, dtypes=F32,
            ops=("aten::index_copy", "aten::cummax", "aten::cummin", "aten::_weight_norm_interface"),
            cite="https://github.com/intel/torch-xpu-ops/pull/3938")
def batch_kernel_config_empty(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU index_copy, cummax/cummin and weight_norm divided by zero on empty inputs (a work-group range
    of 0): index_copy with no indices leaves self, cummax/cummin of an empty tensor are empty, and the
    norm of an empty weight is 0."""
    run_both(ctx, lambda x, i, s: torch.index_copy(x, 0, i, s), sample((4, 3), dtype, ctx.seed),
             torch.zeros(0, dtype=torch.int64), torch.zeros(0, 3, dtype=dtype))
    _empty_like_cpu(ctx, lambda x: (*torch.cummax(x, 0), *torch.cummin(x, 0)), torch.zeros(0, 3, dtype=dtype),
                    what="cummax/cummin of an empty tensor")
    v, g = to_device(ctx, torch.zeros(3, 0, dtype=dtype), torch.ones(3, 1, dtype=dtype))
    w, norm = torch._weight_norm_interface(v, g, 0)
    want_w, want_norm = on_cpu(torch._weight_norm_interface, torch.zeros(3, 0, dtype=dtype), torch.ones(3, 1, dtype=dtype), 0)
    expect(w.shape == want_w.shape and norm.shape == want_norm.shape, "weight_norm of an empty weight: wrong shapes",
           got=[list(w.shape), list(norm.shape)], expected=[list(want_w.shape), list(want_norm.shape)])
    expect(torch.equal(norm.cpu(), want_norm), "the norm of an empty weight is not CPU's (0)",
           got=norm.cpu().reshape(-1).tolist(), expected=want_norm.reshape(-1).tolist())


@SUITE.case("L10/pytorch-pytorch-139400", level=LEVEL, dtypes=F32, ops=("aten::count_nonzero", "aten::gt.Tensor"),
            cite="https://github.com/pytorch/pytorch/issues/139400")
def count_nonzero_empty_mask(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS count_nonzero of an empty (0, 2, 2) mask (`X > empty` broadcast) returned 4575657222465388544
    when another op had run first; CPU returns 0."""
    x, e = to_device(ctx, torch.tensor([1.0, 2.0], dtype=dtype), torch.zeros(0, 2, 2, dtype=dtype))
    with ctx.helper_op("aten::stack"):
        torch.stack([x / 2, x / 2], dim=-1)  # the report's earlier op, which left the garbage behind
    got = torch.count_nonzero(x > e).cpu()
    expect(got.shape == torch.Size([]) and int(got) == 0, "count_nonzero of an empty mask is not 0", got=got.tolist())


@SUITE.case("L10/pytorch-pytorch-93877", level=LEVEL, dtypes=("float32", "int64"), ops=("aten::index_select",),
            cite="https://github.com/pytorch/pytorch/issues/93877")
def index_select_empty_index(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS index_select with an empty int32 index raised 'Placeholder tensor is empty'; CPU returns an
    empty tensor of the source's dtype: int32 and int64 indices, 1-D and 2-D sources."""
    src1, src2 = torch.arange(1, 6).to(dtype), sample((3, 4), dtype, ctx.seed)
    for idx_dtype in (torch.int32, torch.int64):
        idx = torch.zeros(0, dtype=idx_dtype)
        _empty_like_cpu(ctx, lambda s, i: torch.index_select(s, 0, i), src1, idx, what=f"index_select, {idx_dtype} index")
        _empty_like_cpu(ctx, lambda s, i: torch.index_select(s, 1, i), src2, idx, what=f"index_select dim 1, {idx_dtype}")
