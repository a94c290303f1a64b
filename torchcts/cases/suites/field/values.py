"""Field cases of the values classes (docs/bug-classes.md) about arithmetic and kernels: narrower
accumulation (V1), approximate kernels inside the tolerance (V2), vector and tile tails (V3), algorithm
switches at size thresholds (V4) and SKU- or library-version-specific kernels (V16).

Each case replays one real report of a backend that shipped wrong values: the report's own input
situation, at its smallest, compared with CPU (or with a property CPU also satisfies). The
docstring says what the report showed; `cite=` links it. Where the report's error hides inside a
tolerance (one ulp of float16, a float64 product computed in float32), the inputs are chosen so
that the right answer is exact and the comparison is bit for bit (`expect_identical`).
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, budget_mb, expect, expect_identical, on_cpu, to_device
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases


def _gemm_atol(dtype: torch.dtype, k: int, scale: float) -> float:
    """An absolute floor for a half-precision product of K terms of typical size `scale`: eps * sqrt(K) *
    scale, what a correct kernel that reduces partly in the storage dtype (split-K, cuBLAS's default for
    float16) may differ by near a zero output. The reports' errors (NaN, 1e38, O(1)) are far above it."""
    return torch.finfo(dtype).eps * k**0.5 * scale


# --- V1: narrower accumulation or intermediates -------------------------------------------------------


@SUITE.case("V1/pytorch-pytorch-90635", level=2, dtypes=("int64",), ops=("aten::cumsum",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/90635")
def cumsum_integral_pytorch_90635(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS cumsum of tensor([1, 1, 1, 1]) returned [1, 1, 1, 1] for int64 and for dtype=int16/int8
    (only int32 accumulated)."""
    t = torch.tensor([1, 1, 1, 1], dtype=dtype)
    d = to_device(ctx, t)[0]
    for out in (None, torch.int32, torch.int16, torch.int8):
        ctx.describe(out_dtype=str(out))
        expect_identical(d.cumsum(0, dtype=out), t.cumsum(0, dtype=out), f"cumsum(0, dtype={out})")


@SUITE.case("V1/microsoft-DirectML-398", level=2, dtypes=("float64",), ops=("aten::mm", "aten::matmul"),
            requires=("inference",), cite=GH + "microsoft/DirectML/issues/398")
def float64_matmul_exact_directml_398(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch-directml's float64 matmul had float32's rounding error (1.45e-7 where float64 gives 0):
    integer-valued operands whose exact products pass 2^24 but every partial sum stays below 2^53, so
    float64 is exact and float32 is not."""
    def operands() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        return (torch.randint(0, 2**14, (64, 256), generator=g).to(dtype),
                torch.randint(0, 2**14, (256, 48), generator=g).to(dtype))

    a, b = on_cpu(operands)
    ctx.describe(shapes=[[64, 256], [256, 48]], values="integers in [0, 2^14)")
    da, db = to_device(ctx, a, b)
    expect_identical(da @ db, on_cpu(lambda: a @ b), "float64 matmul of integer-valued operands (exact)")


@SUITE.case("V1/ROCm-MIOpen-2109", level=2, dtypes=("float16",), ops=("aten::avg_pool2d",),
            requires=("inference",), cite=GH + "ROCm/MIOpen/issues/2109")
def avg_pool_fp16_window_miopen_2109(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MIOpen float16 average pooling of a 1x3x255x255 input with a 255x255 window gave 0.0315 where the
    mean is 0.5010: the window's 65025 values were summed in a float16 accumulator."""
    x = on_cpu(lambda: torch.rand((1, 3, 255, 255), generator=torch.Generator().manual_seed(ctx.seed)).to(dtype))
    ctx.describe(shape=[1, 3, 255, 255], kernel=[255, 255])
    pool = torch.nn.functional.avg_pool2d
    ctx.assert_close(pool(to_device(ctx, x)[0], 255), on_cpu(lambda: pool(x, 255)), category="reduction")


@SUITE.case("V16/intel-compute-runtime-1000", level=4, dtypes=("float16", "bfloat16"), ops=("aten::mm", "aten::matmul"),
            requires=("inference",), cite=GH + "intel/compute-runtime/issues/1000")
def half_gemm_battlemage_compute_runtime_1000(ctx: CaseContext, dtype: torch.dtype) -> None:
    """On Arc Pro B70 (Battlemage) float16/bfloat16 GEMM through oneDNN gave NaN or ~1e38 garbage for
    (40, 2048) @ (8192, 2048).T (a * 8, b * 0.08) and for 512 x 512 x 512, while 64 x 64 and 40 x 128 and
    float32 were right: the report's own shapes and scales."""
    def inputs() -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(ctx.seed)
        return (torch.randn((40, 2048), generator=g) * 8, torch.randn((8192, 2048), generator=g) * 0.08,
                torch.randn((512, 512), generator=g), torch.randn((512, 512), generator=g))

    a, b, c, d = (t.to(dtype) for t in on_cpu(inputs))
    ctx.describe(shapes=[[40, 2048], [8192, 2048], [512, 512], [512, 512]], scales=[8, 0.08])
    da, db, dc, dd = to_device(ctx, a, b, c, d)
    ctx.assert_close((da @ db.T, dc @ dd), on_cpu(lambda: (a @ b.T, c @ d)), category="matmul",
                     atol_floor=_gemm_atol(dtype, 2048, 8 * 0.08))


# --- V2: fast-math / approximate kernels inside the tolerance ---------------------------------------------


def _ulp(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` at |t| (float64), normal range."""
    return torch.finfo(dtype).eps * torch.exp2(torch.floor(torch.log2(t.abs())))


@SUITE.case("V2/microsoft-DirectML-370", level=2, dtypes=("float16",), ops=("aten::pow",),
            requires=("inference",), cite=GH + "microsoft/DirectML/issues/370")
def pow_float16_rounding_directml_370(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch-directml float16 0.6094 ** 0.5024 gave 0.7793 where CPU gives 0.7798, one ulp off, inside
    any float16 tolerance. Inputs whose true power lies well inside a float16 rounding interval have one
    right answer, which CPU returns; the device must return it bit for bit."""
    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        base = torch.cat([torch.tensor([0.6094, 0.6094]), torch.rand(256, generator=g) * 0.9 + 0.05]).to(dtype)
        exp = torch.cat([torch.tensor([0.5024, -0.5024]), torch.rand(256, generator=g) * 2 - 1]).to(dtype)
        truth = base.double() ** exp.double()
        nearest = truth.to(dtype).double()
        clear = (truth - nearest).abs() < 0.3 * _ulp(truth, dtype)  # far from a rounding midpoint
        clear[:2] = True  # the report's own pair
        return base[clear], exp[clear]

    base, exp = on_cpu(inputs)
    expected = on_cpu(lambda: base**exp)
    expect(bool((expected.double() - base.double() ** exp.double()).abs().le(0.5 * _ulp(expected.double(), dtype)).all()),
           "CPU's float16 pow is not correctly rounded on these inputs: no reference")
    ctx.describe(pairs=base.numel(), report_pair=[0.6094, 0.5024])
    db, de = to_device(ctx, base, exp)
    expect_identical(db**de, expected, "float16 pow (correctly rounded)")


# --- V3: vector or tile tails ----------------------------------------------------------------------


@SUITE.case("V3/ROCm-rocBLAS-340", level=2, dtypes=("float16",), ops=("aten::mm",),
            requires=("inference",), cite=GH + "ROCm/rocBLAS/issues/340")
def hgemm_last_column_rocblas_340(ctx: CaseContext, dtype: torch.dtype) -> None:
    """rocblas_hgemm with (m, n, k) = (3, 1, 5), A = 1..15 column-major and B = [5, 4, 3, 2, 1] gave
    C = [75, 90, 90] instead of [75, 90, 105] (the last element of the tile wrong); (3, 3, 1) too. Small
    integers: exact in float16."""
    a = torch.arange(1, 16, dtype=dtype).reshape(5, 3).t()  # A column-major, as the report's buffer
    b = torch.tensor([[5.0], [4.0], [3.0], [2.0], [1.0]], dtype=dtype)
    c = torch.arange(1, 4, dtype=dtype).reshape(3, 1)
    r = torch.arange(1, 4, dtype=dtype).reshape(1, 3)
    da, db, dc, dr = to_device(ctx, a, b, c, r)
    ctx.describe(shapes={"3x5 @ 5x1": [3, 1, 5], "3x1 @ 1x3": [3, 3, 1]})
    expect_identical(da @ db, on_cpu(lambda: a @ b), "(3, 5) @ (5, 1)")
    expect_identical(dc @ dr, on_cpu(lambda: c @ r), "(3, 1) @ (1, 3)")


@SUITE.case("V3/torch-spyre-torch-spyre-3851", level=2, dtypes=("float16",), ops=("aten::index_select",),
            requires=("inference",), cite=GH + "torch-spyre/torch-spyre/issues/3851")
def index_select_table_row_spyre_3851(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Spyre index_select(src, 0, table[0]) with a 64-entry row of a 2-D int32 table gathered only the
    first 32 rows right (one 128-byte stick of int32); rows of the table at other offsets worked."""
    blocks, block, heads, head = 8, 64, 8, 128

    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        src = torch.randn((blocks * block, heads, head), generator=g).to(dtype)
        pages = torch.tensor([3, 7, 1, 5, 0, 2, 6, 4], dtype=torch.int32)
        return src, pages.unsqueeze(1) * block + torch.arange(block, dtype=torch.int32)

    src, table = on_cpu(inputs)
    dsrc, dtable = to_device(ctx, src, table)
    for row in (0, 1):
        ctx.describe(index=f"table[{row}]", index_len=block)
        expect_identical(torch.index_select(dsrc, 0, dtable[row]), on_cpu(lambda r=row: torch.index_select(src, 0, table[r])),
                  f"index_select(src, 0, table[{row}])")


@SUITE.case("V3/ROCm-composable_kernel-512", level=2, dtypes=("float16",), ops=("aten::mm",),
            requires=("inference",), cite=GH + "ROCm/composable_kernel/issues/512")
def half_gemm_small_k_composable_kernel_512(ctx: CaseContext, dtype: torch.dtype) -> None:
    """composable_kernel float16 GEMM was wrong (max error 1.4) for TT m=128 n=1024 k=3, TT m=1024 n=128
    k=1 and NT m=128 n=1024 k=133: a K that is not a multiple of the kernel's K tile, with transposed
    operands."""
    shapes = {"TT 128x1024x3": (128, 1024, 3, True, True), "TT 1024x128x1": (1024, 128, 1, True, True),
              "NT 128x1024x133": (128, 1024, 133, False, True)}

    def operands(m: int, n: int, k: int, ta: bool, tb: bool) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        a = torch.randn((k, m) if ta else (m, k), generator=g).to(dtype)
        b = torch.randn((n, k) if tb else (k, n), generator=g).to(dtype)
        return (a.t() if ta else a), (b.t() if tb else b)  # transposed views, as the layouts say

    for name, shape in shapes.items():
        a, b = on_cpu(lambda s=shape: operands(*s))
        da, db = (t.t().to(ctx.device, copy=True).t() if t.stride(0) == 1 else t.to(ctx.device, copy=True)
                  for t in (a, b))
        ctx.describe(layout=name)
        ctx.assert_close(da @ db, on_cpu(lambda a=a, b=b: a @ b), category="matmul",
                         atol_floor=_gemm_atol(dtype, shape[2], 1.0))


# --- V4: algorithm switch at a size threshold ---------------------------------------------------------


@SUITE.case("V4/pytorch-pytorch-193487", level=4, dtypes=("float32",), ops=("aten::mm",),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/193487")
def mm_long_k_overread_pytorch_193487(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS mm with K > 32768 and both output dims >= 16 was wrong by 10-30% depending on what the
    allocator left after the operands: the last K tile was not clipped, so memory past the end was
    summed in. Operands here are the fronts of larger buffers whose tails hold 1e6."""
    m, k, n = 16, 32768 + 48, 16

    def operands() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        return torch.rand((m, k), generator=g, dtype=dtype), torch.rand((k, n), generator=g, dtype=dtype)

    a, b = on_cpu(operands)
    ctx.describe(shapes=[[m, k], [k, n]], tail_value=1e6)
    pad = torch.full((4096,), 1e6, dtype=dtype)
    buf_a, buf_b = to_device(ctx, torch.cat([a.flatten(), pad]), torch.cat([b.flatten(), pad]))
    da, db = buf_a[: m * k].view(m, k), buf_b[: k * n].view(k, n)
    expected = on_cpu(lambda: a @ b)
    ctx.assert_close(da @ db, expected, category="matmul")
    fa, fb = to_device(ctx, a, b)  # freshly allocated operands too
    ctx.assert_close(fa @ fb, expected, category="matmul")


@SUITE.case("V4/pytorch-pytorch-189495", level=4, dtypes=("float32",), ops=("aten::linear", "aten::addmm"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/189495")
def linear_bias_batch_past_2_16_pytorch_189495(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS F.linear with a bias on a 3-D input whose batch dim exceeds 2^16 wrote batch b to b mod 65536:
    input (65540, 2, 32), weight (32, 32)."""
    def inputs() -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(ctx.seed)
        return (torch.randn((65540, 2, 32), generator=g, dtype=dtype), torch.randn((32, 32), generator=g, dtype=dtype),
                torch.randn((32,), generator=g, dtype=dtype))

    x, w, bias = on_cpu(inputs)
    ctx.describe(shapes=[[65540, 2, 32], [32, 32], [32]])
    lin = torch.nn.functional.linear
    dx, dw, db = to_device(ctx, x, w, bias)
    ctx.assert_close(lin(dx, dw, db), on_cpu(lambda: lin(x, w, bias)), category="matmul")


@SUITE.case("V4/pytorch-pytorch-116769", level=8, dtypes=("float32",), ops=("aten::linear", "aten::mm"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/116769")
def linear_wide_output_pytorch_116769(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS nn.Linear(1, 32769, bias=False) of a (1025, 1) input: in each row only the first 1024 columns
    were right (the output has 33.6M elements)."""
    need = 1025 * 32769 * 4 / 2**20
    if budget_mb(ctx, need) < need:
        ctx.not_applicable(f"needs a {need:.0f} MB tensor; the manifest's resource limits allow less")

    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        return torch.rand((1025, 1), generator=g, dtype=dtype), torch.randn((32769, 1), generator=g, dtype=dtype)

    x, w = on_cpu(inputs)
    ctx.describe(shapes=[[1025, 1], [32769, 1]])
    dx, dw = to_device(ctx, x, w)
    lin = torch.nn.functional.linear
    ctx.assert_close(lin(dx, dw), on_cpu(lambda: lin(x, w)), category="matmul")


@SUITE.case("V4/pytorch-xla-9242", level=4, dtypes=("float32",), ops=("aten::bmm", "aten::matmul"),
            requires=("inference",), cite=GH + "pytorch/xla/issues/9242")
def batched_rotation_matmul_xla_9242(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch_xla on GPU: matmul(xy, rotation_t) of (b, i, 2) points by (b, 2, 2) rotations gave, at
    [403, 1952], another value than the same product of the slice xy[403, 1952:1954]. Both the whole
    batch and the slice must match CPU."""
    def inputs() -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(ctx.seed)
        xy = torch.randn((404, 1954, 2), generator=g, dtype=dtype) * 100
        theta = torch.rand((404,), generator=g, dtype=torch.float64) * 6.283185307179586
        c, s = theta.cos(), theta.sin()
        rot = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2).to(dtype)
        return xy, rot

    xy, rot = on_cpu(inputs)
    ctx.describe(shapes=[[404, 1954, 2], [404, 2, 2]], slice="[403, 1952:1954]")
    dxy, drot = to_device(ctx, xy, rot)
    big = torch.matmul(dxy, drot)
    ctx.assert_close(big, on_cpu(lambda: torch.matmul(xy, rot)), category="matmul")
    small = torch.matmul(dxy[403, 1952:1954], drot[403])
    ctx.assert_close(small, on_cpu(lambda: torch.matmul(xy[403, 1952:1954], rot[403])), category="matmul")


# --- V16: SKU-, driver- or library-version-specific kernels ------------------------------------------------


@SUITE.case("V16/microsoft-DirectML-234", level=2, dtypes=("float32",), ops=("aten::convolution", "aten::conv2d"),
            requires=("inference",), cite=GH + "microsoft/DirectML/issues/234")
def depthwise_conv2d_directml_234(ctx: CaseContext, dtype: torch.dtype) -> None:
    """DirectML 1.7.0 and 1.8.0 (not 1.5.1 or 1.6.0) gave wrong values for a depthwise conv2d, groups = 4,
    NCHW input, OIHW filter (expected [6010, 7046, 11000, 9000]). Integer-valued inputs, compared within
    the conv tolerance (a Winograd or FFT kernel need not be exact)."""
    def inputs() -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(ctx.seed)
        return (torch.randint(0, 100, (1, 4, 2, 2), generator=g).to(dtype),
                torch.randint(0, 100, (4, 1, 2, 2), generator=g).to(dtype),
                torch.randint(0, 10000, (4,), generator=g).to(dtype),
                torch.randint(-20, 20, (2, 4, 9, 7), generator=g).to(dtype),
                torch.randint(-5, 5, (8, 1, 3, 3), generator=g).to(dtype))

    x, w, b, x2, w2 = on_cpu(inputs)
    conv = torch.nn.functional.conv2d
    dx, dw, db, dx2, dw2 = to_device(ctx, x, w, b, x2, w2)
    ctx.describe(shapes={"report": [[1, 4, 2, 2], [4, 1, 2, 2]], "multiplier 2": [[2, 4, 9, 7], [8, 1, 3, 3]]},
                 groups=4)
    ctx.assert_close((conv(dx, dw, db, groups=4), conv(dx2, dw2, groups=4, padding=1)),
                     on_cpu(lambda: (conv(x, w, b, groups=4), conv(x2, w2, groups=4, padding=1))), category="conv")


@SUITE.case("V4/pytorch-pytorch-40022", level=2, dtypes=("float32",), ops=("aten::argmin", "aten::argmax"),
            requires=("inference",), cite=GH + "pytorch/pytorch/issues/40022")
def argmin_size1_dim_long_pytorch_40022(ctx: CaseContext, dtype: torch.dtype) -> None:
    """CUDA argmin/argmax along dim 1 of an (N, 1) tensor returned nonzero indices once N > 32767 (the
    reduced dim has one element: every index must be 0): N = 32767, 32768 and 40000."""
    for n in (32767, 32768, 40000):
        a = on_cpu(lambda n=n: torch.randn((n, 1), generator=torch.Generator().manual_seed(ctx.seed), dtype=dtype))
        da = to_device(ctx, a)[0]
        ctx.describe(shape=[n, 1], dim=1)
        expect_identical(torch.argmin(da, dim=1), torch.zeros(n, dtype=torch.int64), f"argmin(({n}, 1), dim=1)")
        expect_identical(torch.argmax(da, dim=1), torch.zeros(n, dtype=torch.int64), f"argmax(({n}, 1), dim=1)")
