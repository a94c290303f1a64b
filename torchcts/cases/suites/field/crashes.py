"""Field cases of the crash, hang and error classes (docs/bug-classes.md C1..C3): the input that
aborted a process, the kernel that never completed, and the call where CPU raises and the device
did not (or the reverse).

A crash or a hang is the runner's verdict (status crashed or timeout, never a skip): the case only
has to reach the report's call with its input, and then compares the result with CPU so that a
backend that survives with a wrong answer fails too. Error parity uses `run_both`: where CPU raises,
the device must raise the same exception type.
"""

from __future__ import annotations

import io

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, compat, expect, expect_raises, run_both, sample
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases


# --- C1 hard crash -----------------------------------------------------------------------------

@SUITE.case("C1/pytorch-pytorch-96113", level=3, dtypes=(("float16", "float32"),), ops=("aten::native_layer_norm",),
            cite=GH + "pytorch/pytorch/issues/96113")
def layer_norm_half_input(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """MPS nn.LayerNorm((768,)) (float32 parameters) of a float16 randn(1, 77, 768) crashed."""
    x = sample((1, 77, 768), dtype, ctx.seed)
    torch.manual_seed(ctx.seed)
    ln = torch.nn.LayerNorm((768,), elementwise_affine=True)
    with torch.no_grad():
        ln.weight.uniform_(0.5, 1.5)
        ln.bias.uniform_(-0.5, 0.5)
    w, b = ln.weight.detach(), ln.bias.detach()
    run_both(ctx, lambda t, ww, bb: F.layer_norm(t, (768,), ww, bb, ln.eps), x, w, b, category="normalization")


@SUITE.case("C1/pytorch-pytorch-190054", level=4, dtypes=(("float16", "float32"), ("bfloat16", "float32")),
            ops=("aten::native_layer_norm", "aten::native_layer_norm_backward"), requires=("autograd|training",),
            cite=GH + "pytorch/pytorch/issues/190054")
def layer_norm_mixed_affine(ctx: CaseContext, dtype: torch.dtype, dtypes: list[str]) -> None:
    """MPS layer_norm of a float16/bfloat16 (4, 8) input with float32 weight and bias read the float32
    bits as the input's dtype (error inf, 1e31), and its backward aborted the process (an MLIR
    verifier assertion). Forward, then the gradients of the three."""
    x = sample((4, 8), dtype, ctx.seed)
    w = sample((8,), torch.float32, ctx.seed + 1)
    b = sample((8,), torch.float32, ctx.seed + 2)
    run_both(ctx, lambda t, ww, bb: F.layer_norm(t, (8,), ww, bb), x, w, b, category="normalization")

    def grads(t: torch.Tensor, ww: torch.Tensor, bb: torch.Tensor) -> list[torch.Tensor]:
        t, ww, bb = (v.detach().requires_grad_() for v in (t, ww, bb))
        out = F.layer_norm(t, (8,), ww, bb)
        out.backward(torch.ones_like(out))
        return [t.grad, ww.grad, bb.grad]

    run_both(ctx, grads, x, w, b, category="backward")


@SUITE.case("C1/intel-torch-xpu-ops-2473", level=3, dtypes=("int32",), ops=("aten::index_add_",),
            cite=GH + "intel/torch-xpu-ops/issues/2473")
def index_add_empty(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU x.index_add_(0, idx, src) of an int32 zeros(4) with an empty int32 index and an empty
    source aborted the process (CPU leaves x unchanged)."""
    x = torch.arange(4, dtype=dtype)
    idx = torch.tensor([], dtype=torch.int32)
    src = torch.tensor([], dtype=dtype)
    run_both(ctx, lambda t, i, s: t.clone().index_add_(0, i, s), x, idx, src)


@SUITE.case("C1/intel-torch-xpu-ops-4391", level=3, dtypes=("float32",), ops=("aten::index_add_", "aten::index_reduce_"),
            cite=GH + "intel/torch-xpu-ops/pull/4391")
def index_add_reduce_bad_index(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU index_add_ and index_reduce_ with an out-of-range index (past the end, or -1) reached the
    kernel and tripped SYCL_KERNEL_ASSERT, aborting the process; CPU raises a catchable IndexError.
    The device must raise it too."""
    x = sample((4, 3), dtype, ctx.seed)
    src = sample((1, 3), dtype, ctx.seed + 1)
    for idx in ([4], [-1], [0, 7]):
        index = torch.tensor(idx)
        source = src.expand(len(idx), 3).contiguous()
        ctx.describe(index=idx)
        run_both(ctx, lambda t, i, s: t.clone().index_add_(0, i, s), x, index, source)
        run_both(ctx, lambda t, i, s: t.clone().index_reduce_(0, i, s, "amax"), x, index, source)


# --- C2 hang -----------------------------------------------------------------------------------

@SUITE.case("C2/ROCm-hip-625", level=2, dtypes=("float32",), ops=("aten::take",), cite=GH + "ROCm/hip/issues/625")
def take_never_completes(ctx: CaseContext, dtype: torch.dtype) -> None:
    """ROCm torch.take(FloatTensor([1, 2, 3, 4]), LongTensor([[0]])) never completed: the kernel's
    completion signal was never set (the runner reports a hang as status timeout)."""
    src = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=dtype)
    run_both(ctx, torch.take, src, torch.tensor([[0]]))
    run_both(ctx, torch.take, src, torch.tensor([[3, 1], [0, 2]]))


@SUITE.case("C2/pytorch-pytorch-136007", level=4, dtypes=("float32",), ops=("aten::native_batch_norm_backward",),
            requires=("autograd|training",), cite=GH + "pytorch/pytorch/issues/136007")
def batch_norm_channels_last_backward(ctx: CaseContext, dtype: torch.dtype) -> None:
    """An XPU test (huggingface levit) hung in BatchNormBackwardReduceChannelsLastKernel: threads past
    the end exited early, before a barrier the others then waited on forever. Training-mode batch_norm
    backward on channels_last inputs whose sizes leave partial groups (odd N*H*W, channels not a
    multiple of a vector width); gradients of input, weight and bias."""
    for shape in ((2, 3, 5, 7), (3, 24, 7, 9), (2, 13, 1, 1)):  # (1, C, 1, 1): batch_norm refuses in Python
        x = sample(shape, dtype, ctx.seed).contiguous(memory_format=torch.channels_last)
        w = sample((shape[1],), dtype, ctx.seed + 1)
        b = sample((shape[1],), dtype, ctx.seed + 2)
        upstream = sample(shape, dtype, ctx.seed + 3).contiguous(memory_format=torch.channels_last)

        def grads(t: torch.Tensor, ww: torch.Tensor, bb: torch.Tensor, g: torch.Tensor) -> list[torch.Tensor]:
            t, ww, bb = (v.detach().requires_grad_() for v in (t, ww, bb))
            F.batch_norm(t, None, None, ww, bb, training=True).backward(g)
            return [t.grad, ww.grad, bb.grad]

        ctx.describe(shape=list(shape))
        run_both(ctx, grads, x, w, b, upstream, category="backward")


# --- C3 error parity ---------------------------------------------------------------------------

@SUITE.case("C3/intel-torch-xpu-ops-3445", level=3, dtypes=("float32",), ops=("aten::index_select",),
            cite=GH + "intel/torch-xpu-ops/issues/3445")
def index_select_empty_source(ctx: CaseContext, dtype: torch.dtype) -> None:
    """XPU index_select of an empty (0, 3) source with out-of-range indices raised another error than
    CPU (dim 0, [0, 1]) or returned successfully (dim 1, [0, 5]); a valid index on the non-empty dim
    still returns a (0, 2) result."""
    src = torch.randn(0, 3, dtype=dtype)
    for dim, idx in ((0, [0, 1]), (1, [0, 5]), (1, [0, 2])):
        ctx.describe(dim=dim, index=idx)
        run_both(ctx, lambda t, i, d=dim: torch.index_select(t, d, i), src, torch.tensor(idx))


@SUITE.case("C3/pytorch-pytorch-169779", level=3, dtypes=("float32",), ops=("aten::index_select",),
            cite=GH + "pytorch/pytorch/issues/169779")
def index_select_negative(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Eager MPS index_select(randn(5, 10), 0, tensor([-1])) passed silently where CPU raises "index
    out of range in self" (and CUDA asserts); also an index one past the end."""
    x = sample((5, 10), dtype, ctx.seed)
    for idx in ([-1], [5], [0, 4]):
        ctx.describe(index=idx)
        run_both(ctx, lambda t, i: torch.index_select(t, 0, i), x, torch.tensor(idx))


@SUITE.case("C3/pytorch-pytorch-194584", level=3, dtypes=("float32",), ops=("torch.load",),
            requires=("serialization", "device_api"), cite=GH + "pytorch/pytorch/issues/194584")
def load_to_missing_device_index(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch.load(map_location="mps:N") with N >= torch.mps.device_count() was not validated (MPS's
    deserializer skipped the check every other backend runs) and silently landed on the default
    device, where CUDA raises. A device-saved tensor loaded onto the first index past device_count
    must raise RuntimeError."""
    if ctx.device_type == "cpu":
        ctx.not_applicable("the host has no device indices to run past")
    module = compat.device_module(ctx.device_type)
    expect(module is not None and hasattr(module, "device_count"), f"torch.{ctx.device_type}.device_count is missing")
    missing = f"{ctx.device_type}:{module.device_count()}"
    buf = io.BytesIO()
    torch.save(sample((2, 3), dtype, ctx.seed).to(ctx.device), buf)

    def load() -> torch.Tensor:
        buf.seek(0)
        return torch.load(buf, map_location=missing)

    ctx.describe(map_location=missing)
    expect_raises(load, f"torch.load(map_location={missing!r}), an index past device_count()", RuntimeError)
