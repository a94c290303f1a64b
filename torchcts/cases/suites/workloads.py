"""Level 7 workloads: small real models, forward and backward on the device against CPU.

Models are built from code with seeded weights (no downloads). The transformer's CPU reference
computes attention written out (models.math_attention), so a scaled_dot_product_attention that
mishandles causal or padding masks is caught even where the CPU kernel shares its code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchcts.cases.api import (
    MODELS,
    CaseContext,
    CaseSet,
    EmbeddingLSTM,
    TransformerBlock,
    forward_backward,
    math_attention,
    seeded,
)

SUITE = CaseSet("workloads")
cases = SUITE.cases

F32 = ("float32",)
SEQ, BATCH, DIM = 6, 2, 16


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _tokens(seed: int) -> tuple[list[Any], dict[str, Any]]:
    tokens = torch.randint(1, 50, (3, 7), generator=_gen(seed))
    tokens[0, 5:] = 0  # padding_idx
    return [tokens], {}


def _causal(seed: int) -> tuple[list[Any], dict[str, Any]]:
    return [torch.randn(BATCH, SEQ, DIM, generator=_gen(seed))], {"is_causal": True}


def _padding(seed: int) -> tuple[list[Any], dict[str, Any]]:
    keep = torch.ones(BATCH, 1, 1, SEQ, dtype=torch.bool)
    keep[0, ..., SEQ - 2:] = False  # the last two keys of sample 0 are padding
    return [torch.randn(BATCH, SEQ, DIM, generator=_gen(seed))], {"attn_mask": keep}


def _image(seed: int) -> tuple[list[Any], dict[str, Any]]:
    return [torch.randn(4, 3, 8, 8, generator=_gen(seed))], {}


@dataclass(frozen=True)
class Workload:
    """A model under test, the CPU reference model (same seeded weights), inputs and a loss."""

    build: Callable[[], nn.Module]
    inputs: Callable[[int], tuple[list[Any], dict[str, Any]]]
    reference: Callable[[], nn.Module] | None = None
    ops: tuple[str, ...] = ()

    def loss(self, out: torch.Tensor) -> torch.Tensor:
        # A fixed pseudo-random projection so every output element gets a distinct gradient.
        w = torch.linspace(-1.0, 1.0, out.numel(), device=out.device).reshape(out.shape)
        return (out * w).sum() + out.square().mean()


_SDPA = ("aten::scaled_dot_product_attention", "aten::layer_norm", "aten::linear")
WORKLOADS: dict[str, Workload] = {
    "transformer_causal": Workload(TransformerBlock, _causal,
                                   functools.partial(TransformerBlock, attention=math_attention), _SDPA),
    "transformer_padding": Workload(TransformerBlock, _padding,
                                    functools.partial(TransformerBlock, attention=math_attention), _SDPA),
    "convnet": Workload(MODELS["convnet"].build, _image, ops=("aten::convolution", "aten::native_batch_norm")),
    "embedding_lstm": Workload(EmbeddingLSTM, _tokens, ops=("aten::embedding", "aten::lstm")),
}


def _forward(model: nn.Module, device: torch.device, args: list[Any], kwargs: dict[str, Any]) -> torch.Tensor:
    model = model.to(device)
    with torch.no_grad():
        out = model(*[a.to(device) for a in args], **{k: v.to(device) if isinstance(v, torch.Tensor) else v
                                                      for k, v in kwargs.items()})
    return out.cpu()


def run_workload(ctx: CaseContext, dtype: torch.dtype, workload: str, backward: bool) -> None:
    spec = WORKLOADS[workload]
    args, kwargs = spec.inputs(ctx.seed)
    device_model = seeded(ctx.seed, spec.build)
    ref_model = seeded(ctx.seed, spec.reference or spec.build)
    ctx.describe(workload=workload, backward=backward, input_shapes=[list(a.shape) for a in args])
    if not backward:
        expected = _forward(ref_model.eval(), torch.device("cpu"), args, kwargs)
        got = _forward(device_model.eval(), ctx.device, args, kwargs)
        ctx.assert_close(got, expected, category="workload")
        return
    got, grads = forward_backward(device_model.train(), args, ctx.device, spec.loss, **kwargs)
    expected, ref_grads = forward_backward(ref_model.train(), args, torch.device("cpu"), spec.loss, **kwargs)
    ctx.assert_close(got, expected, category="workload")
    names = [n for n, _ in ref_model.named_parameters()]
    ctx.assert_close(dict(zip(names, grads, strict=True)), dict(zip(names, ref_grads, strict=True)), category="workload")
    if isinstance(device_model, nn.Sequential):  # BatchNorm running statistics updated by the train-mode forward
        ctx.assert_close([b.cpu() for b in device_model.buffers()], list(ref_model.buffers()), category="workload")


for _name, _spec in WORKLOADS.items():
    SUITE.case(f"{_name}/forward", level=7, dtypes=F32, requires=("inference",), ops=_spec.ops,
               params={"eval": {"workload": _name, "backward": False}})(run_workload)
    SUITE.case(f"{_name}/backward", level=7, dtypes=F32, requires=("training",), ops=_spec.ops,
               params={"train": {"workload": _name, "backward": True}})(run_workload)


@SUITE.case("transformer_causal/no_future_leak", level=7, dtypes=F32, requires=("inference",), ops=_SDPA,
            oracle="property:causal")
def no_future_leak(ctx: CaseContext, dtype: torch.dtype) -> None:
    """With is_causal, changing the last token changes no earlier position's output."""
    (x,), _ = _causal(ctx.seed)
    block = seeded(ctx.seed, TransformerBlock).eval().to(ctx.device)
    changed = x.clone()
    changed[:, -1] += 3.0
    with torch.no_grad():
        a = block(x.to(ctx.device), is_causal=True).cpu()
        b = block(changed.to(ctx.device), is_causal=True).cpu()
    ctx.assert_close(b[:, :-1], a[:, :-1], category="workload")


@SUITE.case("attention/sdpa_masks", level=7, dtypes=F32, requires=("inference",), ops=("aten::scaled_dot_product_attention",),
            params={"causal": {"mask": "causal"}, "padding": {"mask": "padding"}, "float_bias": {"mask": "float"}})
def sdpa_masks(ctx: CaseContext, dtype: torch.dtype, mask: str) -> None:
    """scaled_dot_product_attention alone against attention written out, per mask kind."""
    g = _gen(ctx.seed)
    q, k, v = (torch.randn(2, 2, 5, 8, generator=g) for _ in range(3))
    kwargs: dict[str, Any] = {}
    if mask == "causal":
        kwargs["is_causal"] = True
    elif mask == "padding":
        keep = torch.ones(2, 1, 1, 5, dtype=torch.bool)
        keep[1, ..., 3:] = False
        kwargs["attn_mask"] = keep
    else:
        kwargs["attn_mask"] = torch.randn(5, 5, generator=g)
    expected = math_attention(q, k, v, **kwargs)
    dev = {n: t.to(ctx.device) if isinstance(t, torch.Tensor) else t for n, t in kwargs.items()}
    got = F.scaled_dot_product_attention(q.to(ctx.device), k.to(ctx.device), v.to(ctx.device), **dev)
    ctx.assert_close(got.cpu(), expected, category="matmul")
