"""Field cases of the autograd classes (docs/bug-classes.md A1, A2): wrong gradient kernels, and
gradients that depend on which inputs require grad or on how the gradient arrives.

Level 4 (backward of ops and small models), claim `autograd` or `training` as the autograd suite.
Each case builds the report's computation twice from the same CPU values, once on CPU and once on
the device, and compares every gradient the report showed wrong (category `backward`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, expect, on_cpu, sample
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases

AUTOGRAD = ("autograd|training",)


def _leaf(t: torch.Tensor, device: torch.device, grad: bool = True) -> torch.Tensor:
    """A fresh leaf copy of a CPU input on `device`: never the input itself (on --device cpu `.to`
    would alias it, and the two runs would share one tensor and one accumulated .grad)."""
    return t.detach().to(device, copy=True).requires_grad_(grad)


def _grads(ctx: CaseContext, build: Callable[[torch.device], dict[str, torch.Tensor]], what: str) -> None:
    """`build(device)` runs the computation on `device` and returns named gradients (or outputs):
    each device tensor is compared with the CPU run's."""
    want = on_cpu(build, torch.device("cpu"))
    got = build(ctx.device)
    expect(set(got) == set(want), f"{what}: gradients missing", got=sorted(got), expected=sorted(want))
    for name, value in want.items():
        expect(got[name] is not None, f"{what}: no gradient for {name}")
        ctx.describe(step=f"{what}: {name}")
        ctx.assert_close(got[name].cpu(), value, category="backward")


# --- A1 wrong gradient kernels -----------------------------------------------------------------

@SUITE.case("A1/pytorch-pytorch-96225", level=4, dtypes=("float32",), ops=("aten::convolution_backward",),
            requires=AUTOGRAD, cite=GH + "pytorch/pytorch/issues/96225")
def conv_grad_minibatch_2_16(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS F.conv1d and F.conv2d gave wrong weight gradients from a minibatch of 65,536 (2^16) on: a
    1x1 convolution of ones(N) viewed as N single-pixel samples with weight ones(1), loss the mean
    (weight.grad is 1). N = 65,535 and 65,536, both ops."""
    for n in (65_535, 65_536):
        for dims, op in ((1, F.conv1d), (2, F.conv2d)):
            view = (-1,) + (1,) * (dims + 1)

            def build(device: torch.device, n: int = n, view: tuple[int, ...] = view,
                      op: Callable[..., torch.Tensor] = op) -> dict[str, torch.Tensor]:
                x = torch.ones(n, dtype=dtype, device=device)
                w = _leaf(torch.ones(1, dtype=dtype), device)
                out = op(x.view(view), w.view(view)).mean()
                out.backward()
                return {"out": out.detach(), "weight": w.grad}

            _grads(ctx, build, f"conv{dims}d, minibatch {n}")


@SUITE.case("A1/pytorch-pytorch-175192", level=5, dtypes=("float32", "float64"), ops=("aten::linalg_solve",),
            requires=AUTOGRAD, cite=GH + "pytorch/pytorch/issues/175192")
def linalg_solve_grad(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS linalg.solve forward matched CPU but its backward was wrong for both A and B (A.grad off by
    14.8 for A = randn(3, 4, 4) + 3I, B = randn(3, 4, 2)); the report's shapes."""
    a0 = on_cpu(lambda: sample((3, 4, 4), dtype, ctx.seed) / 4 + 3 * torch.eye(4, dtype=dtype))
    b0 = sample((3, 4, 2), dtype, ctx.seed + 1)

    def build(device: torch.device) -> dict[str, torch.Tensor]:
        a, b = (_leaf(t, device) for t in (a0, b0))
        torch.linalg.solve(a, b).sum().backward()
        return {"A": a.grad, "B": b.grad}

    _grads(ctx, build, "linalg.solve")


class _Residual(torch.nn.Module):
    """The report's model, smaller: Embedding, two residual Linear blocks, an output Linear."""

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(dim, dim) for _ in range(2))
        self.out = torch.nn.Linear(dim, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)
        for block in self.blocks:
            h = h + torch.relu(block(h))
        return self.out(h)


@SUITE.case("A1/pytorch-pytorch-177116", level=4, dtypes=("float32",),
            ops=("aten::embedding_dense_backward", "aten::mm", "aten::_log_softmax_backward_data"),
            requires=AUTOGRAD, cite=GH + "pytorch/pytorch/issues/177116")
def grads_above_32k_after_other_batch(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS gradients were 1,000x to 100,000x too large when a backward at batch 8194 x seq 4 (32,776
    elements, above 2^15) followed a backward at another batch size in the same process; the loss
    was right. The same two steps, every parameter's gradient at the second."""
    vocab, dim, seq = 32, 16, 4
    g = torch.Generator().manual_seed(ctx.seed)
    first = torch.randint(0, vocab, (16, seq), generator=g)
    second = torch.randint(0, vocab, (8194, seq), generator=g)

    def build(device: torch.device) -> dict[str, torch.Tensor]:
        torch.manual_seed(ctx.seed)
        model = _Residual(vocab, dim).to(device=device, dtype=dtype)
        for ids in (first, second):
            model.zero_grad()
            ids = ids.to(device, copy=True)
            logits = model(ids)
            loss = F.cross_entropy(logits.reshape(-1, vocab), ids.roll(1, 1).reshape(-1))
            loss.backward()
        out = {name: p.grad for name, p in model.named_parameters()}
        out["loss"] = loss.detach()
        return out

    _grads(ctx, build, "second backward, 32,776 elements")


# --- A2 gradients that depend on which inputs need grad ----------------------------------------

@SUITE.case("A2/pytorch-pytorch-183825", level=4, dtypes=("float32",), ops=("aten::native_layer_norm_backward",),
            requires=AUTOGRAD, cite=GH + "pytorch/pytorch/issues/183825")
def layer_norm_frozen_input(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS layer_norm_backward returned wrong, nondeterministic weight.grad and bias.grad when the
    input x = randn(2, 4) did not require grad (the parameters did); right when x did."""
    x0 = sample((2, 4), dtype, ctx.seed)
    w0 = on_cpu(lambda: 1 + sample((4,), dtype, ctx.seed + 1) / 8)
    b0 = sample((4,), dtype, ctx.seed + 2)
    upstream = sample((2, 4), dtype, ctx.seed + 3)

    for x_grad in (False, True):
        def build(device: torch.device, x_grad: bool = x_grad) -> dict[str, torch.Tensor]:
            x = _leaf(x0, device, x_grad)
            w, b = (_leaf(t, device) for t in (w0, b0))
            F.layer_norm(x, (4,), w, b, 1e-5).backward(upstream.to(device, copy=True))
            return {"weight": w.grad, "bias": b.grad, **({"x": x.grad} if x_grad else {})}

        _grads(ctx, build, f"layer_norm, x.requires_grad={x_grad}")


@SUITE.case("A2/pytorch-pytorch-98602", level=4, dtypes=("float32",),
            ops=("aten::native_batch_norm_backward", "aten::convolution_backward"),
            requires=AUTOGRAD, cite=GH + "pytorch/pytorch/issues/98602")
def batch_norm_frozen_params(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Freezing only the BatchNorm parameters of a resnet50 (requires_grad=False) made the MPS backward
    raise NSInvalidArgumentException (one cached graph for every output mask). conv -> frozen bn ->
    relu, training mode; then the same with the bn parameters trainable."""
    x0 = sample((2, 3, 8, 8), dtype, ctx.seed)

    for frozen in (True, False):
        def build(device: torch.device, frozen: bool = frozen) -> dict[str, torch.Tensor]:
            torch.manual_seed(ctx.seed)
            conv = torch.nn.Conv2d(3, 4, 3, padding=1, bias=False)
            bn = torch.nn.BatchNorm2d(4)
            net = torch.nn.Sequential(conv, bn, torch.nn.ReLU()).to(device=device, dtype=dtype).train()
            for p in bn.parameters():
                p.requires_grad_(not frozen)
            x = _leaf(x0, device)
            net(x).square().sum().backward()
            out = {"x": x.grad, "conv.weight": conv.weight.grad, "running_mean": bn.running_mean}
            return out if frozen else {**out, "bn.weight": bn.weight.grad, "bn.bias": bn.bias.grad}

        _grads(ctx, build, f"conv+batch_norm, bn frozen={frozen}")


@SUITE.case("A2/pytorch-pytorch-180201", level=4, dtypes=("float32",), ops=("aten::mm", "aten::sin", "aten::sum"),
            requires=AUTOGRAD, cite=GH + "pytorch/pytorch/issues/180201")
def grad_of_sum_expanded(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS torch.autograd.grad(y.sum(), x) of a SIREN-like net over 64 inputs gave zero rows (the
    expanded gradient of sum reaching the batched kernels), while grad_outputs=ones_like(y) was right."""
    x0 = sample((64, 3), dtype, ctx.seed)
    w1, b1, w2, b2 = (sample(s, dtype, ctx.seed + i + 1) / 2 for i, s in enumerate(((16, 3), (16,), (1, 16), (1,))))

    def build(device: torch.device) -> dict[str, torch.Tensor]:
        x = _leaf(x0, device)
        p1, q1, p2, q2 = (t.to(device, copy=True) for t in (w1, b1, w2, b2))

        def y() -> torch.Tensor:
            return (torch.sin(x @ p1.T + q1) @ p2.T + q2).squeeze(-1)

        by_sum = torch.autograd.grad(y().sum(), x)[0]
        out = y()
        by_ones = torch.autograd.grad(out, x, grad_outputs=torch.ones_like(out))[0]
        return {"grad(y.sum(), x)": by_sum, "grad(y, x, ones)": by_ones}

    _grads(ctx, build, "SIREN input gradient")
