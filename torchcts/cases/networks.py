"""Seeded small models and the "same steps on the device and on CPU" helpers of the level 4-8 suites.

Every model is built from code on CPU under a fixed seed, so the device copy and the CPU reference
start from identical weights without any download. `train` runs N seeded optimizer steps;
`compare_training` runs them on both sides and checks the parameters, the losses and that the
loss went down (a step that does not descend is broken even when both sides agree).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from torchcts.cases.helpers import expect

Batch = tuple[torch.Tensor, torch.Tensor]
Attention = Callable[..., torch.Tensor]


def seeded(seed: int, build: Callable[[], nn.Module]) -> nn.Module:
    """build() under a fixed seed without disturbing the global RNG of the run."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


class Recurrent(nn.Module):
    """GRU over a short sequence, linear head on the last step."""

    def __init__(self, cell: type[nn.Module] = nn.GRU) -> None:
        super().__init__()
        self.rnn = cell(6, 12, batch_first=True)
        self.head = nn.Linear(12, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def math_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None = None,
                   is_causal: bool = False) -> torch.Tensor:
    """Attention written out (softmax(QK^T/sqrt(d) + mask) V): the independent reference for SDPA."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if is_causal:
        n, m = scores.shape[-2:]
        causal = torch.ones(n, m, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else scores + attn_mask
    return torch.softmax(scores, dim=-1) @ v


class TransformerBlock(nn.Module):
    """Pre-norm block: multi-head attention through a pluggable attention function, then an MLP."""

    def __init__(self, dim: int = 16, heads: int = 2, attention: Attention | None = None) -> None:
        super().__init__()
        self.heads, self.attention = heads, attention
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        # Looked up per call (not bound at import) so the attention under test is the current one.
        attention = self.attention or F.scaled_dot_product_attention
        a = attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.norm2(x))


class EmbeddingLSTM(nn.Module):
    """Token embedding, two-layer LSTM, vocabulary head: a tiny language model."""

    def __init__(self, vocab: int = 50) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16, padding_idx=0)
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)
        self.head = nn.Linear(24, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out)


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))


def _cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 8, 3), nn.Flatten(), nn.Linear(32, 4)
    )


def _convnet() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1),
        nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5),
    )


def _regression(shape: Sequence[int], seed: int) -> Batch:
    g = _gen(seed)
    return torch.randn(*shape, generator=g), torch.randn(shape[0], 4, generator=g)


@dataclass(frozen=True)
class ModelKind:
    """How to build a model, a batch for it, and its loss."""

    build: Callable[[], nn.Module]
    batch: Callable[[int], Batch]
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = F.mse_loss


MODELS: dict[str, ModelKind] = {
    "mlp": ModelKind(_mlp, lambda s: _regression((8, 16), s)),
    "cnn": ModelKind(_cnn, lambda s: _regression((4, 3, 8, 8), s)),
    "rnn": ModelKind(Recurrent, lambda s: _regression((4, 5, 6), s)),
    "convnet": ModelKind(_convnet, lambda s: (torch.randn(4, 3, 8, 8, generator=_gen(s)),
                                              torch.randint(0, 5, (4,), generator=_gen(s + 1))), F.cross_entropy),
}


OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {
    "sgd_momentum": lambda params, **kw: torch.optim.SGD(params, lr=0.05, momentum=0.9, **kw),
    "adam": lambda params, **kw: torch.optim.Adam(params, lr=1e-2, **kw),
    "adamw": lambda params, **kw: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, **kw),
}


@dataclass
class TrainResult:
    params: list[torch.Tensor]
    losses: list[float]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TrainPlan:
    """What `train` does each step: micro-batches to accumulate, clipping, how grads are cleared."""

    steps: int = 4
    accumulate: int = 1
    clip_norm: float | None = None
    clip_value: float | None = None
    set_to_none: bool = True
    non_blocking: bool = False
    optimizer_kwargs: tuple[tuple[str, Any], ...] = ()


def batches(kind: str, seed: int, n: int) -> list[Batch]:
    return [MODELS[kind].batch(seed + 101 * i) for i in range(n)]


def train(model: nn.Module, kind: str, optimizer: str, data: list[Batch], device: torch.device,
          plan: TrainPlan) -> TrainResult:
    """Run plan.steps optimizer steps of model on device; parameters and losses come back on CPU."""
    model = model.to(device).train()
    opt = OPTIMIZERS[optimizer](model.parameters(), **dict(plan.optimizer_kwargs))
    loss_fn = MODELS[kind].loss
    losses: list[float] = []
    norms: list[float] = []
    for step in range(plan.steps):
        opt.zero_grad(set_to_none=plan.set_to_none)
        step_loss = 0.0
        for micro in range(plan.accumulate):
            x, y = data[(step * plan.accumulate + micro) % len(data)]
            x, y = x.to(device, non_blocking=plan.non_blocking), y.to(device, non_blocking=plan.non_blocking)
            loss = loss_fn(model(x), y) / plan.accumulate
            loss.backward()
            step_loss += float(loss.detach())
        losses.append(step_loss)
        if plan.clip_norm is not None:
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), plan.clip_norm)))
        if plan.clip_value is not None:
            torch.nn.utils.clip_grad_value_(model.parameters(), plan.clip_value)
        opt.step()
    losses.append(float(evaluate(model, kind, data, device)))  # the last entry: loss after training
    return TrainResult([p.detach().to("cpu") for p in model.parameters()], losses, {"grad_norms": norms})


def evaluate(model: nn.Module, kind: str, data: list[Batch], device: torch.device) -> torch.Tensor:
    """Mean loss over data without gradients (BatchNorm uses its running statistics in eval mode)."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        total = sum(MODELS[kind].loss(model(x.to(device)), y.to(device)).cpu() for x, y in data)
    model.train(was_training)
    return total / len(data)


def compare_training(ctx: Any, kind: str, optimizer: str, plan: TrainPlan = TrainPlan(),
                     reference_plan: TrainPlan | None = None,
                     data: list[Batch] | None = None,
                     wrap: Callable[[nn.Module], nn.Module] | None = None) -> tuple[TrainResult, TrainResult]:
    """The same seeded steps on the device and on CPU; parameters, losses and descent checked.

    Returns (device result, CPU result). The CPU reference runs reference_plan (default: plan
    with the optimizer's default implementation) so foreach/fused forms are held to the for-loop.
    wrap (e.g. torch.compile) is applied to the device model only.
    """
    data = data if data is not None else batches(kind, ctx.seed, max(2, plan.accumulate * 2))
    reference_plan = reference_plan or replace(plan, optimizer_kwargs=(("foreach", False),), non_blocking=False)
    build = MODELS[kind].build
    initial = float(evaluate(seeded(ctx.seed, build), kind, data, torch.device("cpu")))
    expected = train(seeded(ctx.seed, build), kind, optimizer, data, torch.device("cpu"), reference_plan)
    device_model = seeded(ctx.seed, build).to(ctx.device)
    actual = train(wrap(device_model) if wrap else device_model, kind, optimizer, data, ctx.device, plan)
    ctx.describe(model=kind, optimizer=optimizer, steps=plan.steps, initial_loss=initial, final_loss=actual.losses[-1])
    ctx.assert_close(actual.params, expected.params, category="training")
    ctx.assert_close(actual.losses, expected.losses, category="training")
    expect(actual.losses[-1] < initial, "the optimizer steps did not reduce the loss",
           initial_loss=initial, final_loss=actual.losses[-1])
    return actual, expected


def forward_backward(model: nn.Module, inputs: Sequence[Any], device: torch.device,
                     loss: Callable[[torch.Tensor], torch.Tensor], **kwargs: Any) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Output and parameter gradients of one forward/backward on device, returned on CPU."""
    model = model.to(device)
    moved = [a.to(device) if isinstance(a, torch.Tensor) else a for a in inputs]
    kw = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    out = model(*moved, **kw)
    loss(out).backward()
    grads = [p.grad.detach().to("cpu") if p.grad is not None else torch.zeros_like(p, device="cpu")
             for p in model.parameters()]
    return out.detach().to("cpu"), grads
