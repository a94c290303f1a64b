"""Level 8 sizes that cross kernel tiling thresholds: p-1, p and p+1 for powers of two p.

Backends tile their kernels in power-of-two blocks and handle the remainder separately; bugs
live in the remainder (tail) paths and in the switch between small- and large-size algorithms.
OpInfo's samples have a few elements per dimension, so neither is ever reached.

- contraction: mm, addmm, bmm, matmul and linear with one of M, K, N at p-1, p, p+1 for every
  power of two p from 64 to 8192 (THRESHOLDS), the other two small (SMALL): the dimension under
  test crosses every threshold while each product stays cheap (at most 8193 x 24 x 24). K in
  float32, float16 and bfloat16; M and N in float32. Batch
  tails: bmm/matmul with a batch of p-1, p, p+1 for p up to 1024.
- convolution: conv1d with a length of p-1, p, p+1 up to 8192; conv1d/conv2d with input channels,
  and conv2d with a spatial side, at p-1, p, p+1 up to 512 (larger sides cost seconds on CPU).
- attention: scaled_dot_product_attention with the query or the key/value length at p-1, p, p+1
  up to 8192 (the other length small, so the score matrix stays under 8 x 8193), and head
  dimensions at p-1, p, p+1 for p of 64, 128, 256.
- long: reductions, scans and normalisations over LONG (2^17 +- 1 and 2^20 + 1, i.e. 10^5-10^6)
  elements along each dimension of (n, 3) and (3, n) tensors.

Every tensor stays far below the manifest's resource_limits (the largest is 3 x (2^20 + 1)
float32, 12.6 MB); a tighter max_tensor_mb skips the too-large sizes (counted in the record's
`sizes_too_large`), and a case none of whose sizes fit is not_applicable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, cpu_reference

SUITE = CaseSet("tiling")
cases = SUITE.cases
LEVEL = 8
POWERS = tuple(1 << k for k in range(6, 14))  # 64 .. 8192
THRESHOLDS = tuple(p + d for p in POWERS for d in (-1, 0, 1))
SMALL = {"M": 24, "K": 24, "N": 24}
DTYPES = ("float32", "float16", "bfloat16")
LONG = ((1 << 17) - 1, (1 << 17) + 1, (1 << 20) + 1)


def _randn(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def _fits(ctx: CaseContext, *shapes: tuple[int, ...], itemsize: int = 4) -> bool:
    limit = ctx.manifest.resource_limits.get("max_tensor_mb")
    return not limit or all(torch.Size(s).numel() * itemsize <= limit * 2**20 for s in shapes)


def compare(ctx: CaseContext, fn: Callable[..., Any], args: list[torch.Tensor], category: str, **info: Any) -> None:
    """fn on CPU and on the device (copies of args), compared; sizes are in the record. A size
    over max_tensor_mb is skipped and counted: `checked_any` says whether any size ran."""
    ctx.describe(**info, shapes=[list(a.shape) for a in args])
    if not _fits(ctx, *(tuple(a.shape) for a in args)):
        ctx.info["sizes_too_large"] = ctx.info.get("sizes_too_large", 0) + 1
        return
    ctx.info["sizes_checked"] = ctx.info.get("sizes_checked", 0) + 1
    expected = cpu_reference(ctx, lambda: fn(*args), f"{info} on CPU")
    got = fn(*[a.to(ctx.device, copy=True) for a in args])
    ctx.assert_close(got.cpu() if isinstance(got, torch.Tensor) else [g.cpu() for g in got], expected,
                     category=category)


def checked_any(ctx: CaseContext) -> None:
    """A case whose every size exceeds max_tensor_mb checked nothing: not_applicable, never passed."""
    if not ctx.info.get("sizes_checked"):
        ctx.not_applicable(f"all {ctx.info.get('sizes_too_large', 0)} sizes exceed the manifest's max_tensor_mb")


# --- contractions ------------------------------------------------------------------------------

def _mnk(dim: str, size: int) -> tuple[int, int, int]:
    sizes = dict(SMALL, **{dim: size})
    return sizes["M"], sizes["K"], sizes["N"]


CONTRACTIONS: dict[str, tuple[Callable[..., Any], Callable[[int, int, int], list[tuple[int, ...]]], str]] = {
    "mm": (torch.mm, lambda m, k, n: [(m, k), (k, n)], "aten::mm"),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), lambda m, k, n: [(m, n), (m, k), (k, n)],
              "aten::addmm"),
    "bmm": (torch.bmm, lambda m, k, n: [(2, m, k), (2, k, n)], "aten::bmm"),
    "matmul": (torch.matmul, lambda m, k, n: [(m, k), (k, n)], "aten::matmul"),
    "linear": (F.linear, lambda m, k, n: [(m, k), (n, k), (n,)], "aten::linear"),
}


def contraction(ctx: CaseContext, dtype: torch.dtype, op: str, dim: str) -> None:
    fn, shapes, _ = CONTRACTIONS[op]
    for size in THRESHOLDS:
        args = [_randn(s, dtype, ctx.seed + i) for i, s in enumerate(shapes(*_mnk(dim, size)))]
        compare(ctx, fn, args, "matmul", dim=dim, size=size)
    checked_any(ctx)


# Half-precision kernels differ from float32 ones mostly in how they accumulate: K, the reduced
# dimension, is checked in every dtype; M and N (the output tiling) in float32.
for _op, (_fn, _shapes, _aten) in CONTRACTIONS.items():
    for _dims, _dtypes in ((("M", "N"), ("float32",)), (("K",), DTYPES)):
        SUITE.case(f"contraction/{_op}", level=LEVEL, dtypes=_dtypes, ops=(_aten,),
                   params={d: {"op": _op, "dim": d} for d in _dims})(contraction)


BATCHES = tuple(p + d for p in POWERS if p <= 1024 for d in (-1, 0, 1))


@SUITE.case("contraction/batch_tail", level=LEVEL, dtypes=DTYPES, ops=("aten::bmm", "aten::matmul"),
            params={"bmm": {"fn": "bmm"}, "matmul": {"fn": "matmul"}})
def batch_tail(ctx: CaseContext, dtype: torch.dtype, fn: str) -> None:
    """A batch of p-1, p, p+1 small products: the batch loop's tail."""
    call = torch.bmm if fn == "bmm" else torch.matmul
    for b in BATCHES:
        compare(ctx, call, [_randn((b, 5, 9), dtype, ctx.seed), _randn((b, 9, 7), dtype, ctx.seed + 1)], "matmul",
                batch=b)
    checked_any(ctx)


# --- convolutions ------------------------------------------------------------------------------

CONV_SIZES = tuple(p + d for p in POWERS if p <= 512 for d in (-1, 0, 1))
CONVS: dict[str, Callable[[int], list[tuple[int, ...]]]] = {
    "conv1d/length": lambda s: [(2, 3, s), (4, 3, 3)],
    "conv1d/channels": lambda s: [(2, s, 9), (4, s, 3)],
    "conv2d/channels": lambda s: [(1, s, 6, 5), (3, s, 3, 3)],
    "conv2d/side": lambda s: [(1, 2, s, 7), (3, 2, 3, 3)],
}


@SUITE.case("conv", level=LEVEL, dtypes=DTYPES, ops=("aten::convolution", "aten::conv1d", "aten::conv2d"),
            params={k.replace("/", "_"): {"which": k} for k in CONVS})
def conv(ctx: CaseContext, dtype: torch.dtype, which: str) -> None:
    fn = F.conv1d if which.startswith("conv1d") else F.conv2d
    for s in THRESHOLDS if which == "conv1d/length" else CONV_SIZES:
        x, w = CONVS[which](s)
        compare(ctx, lambda a, b: fn(a, b, padding=1), [_randn(x, dtype, ctx.seed), _randn(w, dtype, ctx.seed + 1)],
                "conv", size=s)
    checked_any(ctx)


# --- attention ---------------------------------------------------------------------------------

HEAD_DIMS = tuple(p + d for p in (64, 128, 256) for d in (-1, 0, 1))
ATTENTION: dict[str, Callable[[int], tuple[int, int, int]]] = {  # size -> (query length, kv length, head dim)
    "query_length": lambda s: (s, 8, 16),
    "kv_length": lambda s: (8, s, 16),
    "head_dim": lambda s: (12, 10, s),
}


@SUITE.case("attention", level=LEVEL, dtypes=DTYPES, ops=("aten::scaled_dot_product_attention",),
            params={k: {"which": k} for k in ATTENTION})
def attention(ctx: CaseContext, dtype: torch.dtype, which: str) -> None:
    for s in HEAD_DIMS if which == "head_dim" else THRESHOLDS:
        lq, lk, e = ATTENTION[which](s)
        args = [_randn((2, lq, e), dtype, ctx.seed), _randn((2, lk, e), dtype, ctx.seed + 1),
                _randn((2, lk, e), dtype, ctx.seed + 2)]
        compare(ctx, F.scaled_dot_product_attention, args, "matmul", size=s)
    checked_any(ctx)


# --- long reductions, scans, normalisations ------------------------------------------------------

# name -> (fn(x, dim), aten op); compared with the reduction tolerance
LONG_OPS: dict[str, tuple[Callable[[torch.Tensor, int], Any], str]] = {
    "sum": (lambda x, d: x.sum(d), "aten::sum"),
    "mean": (lambda x, d: x.mean(d), "aten::mean"),
    "amax": (lambda x, d: x.amax(d), "aten::amax"),
    "var": (lambda x, d: x.var(d), "aten::var"),
    "norm": (lambda x, d: x.norm(dim=d), "aten::linalg_vector_norm"),
    "cumsum": (lambda x, d: x.cumsum(d), "aten::cumsum"),
    "logcumsumexp": (lambda x, d: x.logcumsumexp(d), "aten::logcumsumexp"),
    "softmax": (lambda x, d: x.softmax(d), "aten::_softmax"),
    "log_softmax": (lambda x, d: x.log_softmax(d), "aten::_log_softmax"),
    "layer_norm": (lambda x, d: F.layer_norm(x.movedim(d, -1), (x.shape[d],)), "aten::native_layer_norm"),
    "batch_norm": (lambda x, d: F.batch_norm(x.movedim(d, 0), None, None, training=True), "aten::native_batch_norm"),
}


def long_reduction(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    fn, _ = LONG_OPS[op]
    for n in LONG:
        for shape, dim in (((n, 3), 0), ((3, n), 1)):
            x = _randn(shape, dtype, ctx.seed)
            compare(ctx, lambda t, _d=dim: fn(t, _d), [x], "reduction", numel_along_dim=n, dim=dim)
    checked_any(ctx)


for _op, (_fn, _aten) in LONG_OPS.items():
    SUITE.case(f"long/{_op}", level=LEVEL, dtypes=("float32",), ops=(_aten,),
               params={"dims": {"op": _op}})(long_reduction)
