"""Level 6 compiler: torch.compile on the device against eager on the device and eager on CPU.

The backend is chosen per device type (compat.compile_backend: inductor where it generates code
for the device, aot_eager otherwise; TORCHCTS_COMPILE_BACKEND overrides) and recorded in the case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import MODELS, CaseContext, CaseSet, TransformerBlock, compare_training, compiled, seeded

SUITE = CaseSet("compiler")
cases = SUITE.cases

COMPILE = ("compile",)
F32 = ("float32",)


def _inputs(ctx: CaseContext, shapes: list[tuple[int, ...]], dtype: torch.dtype, salt: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(ctx.seed + salt)
    return [torch.randn(s, generator=g).to(dtype) for s in shapes]


def check_compiled(ctx: CaseContext, fn: Callable[..., Any], fn_c: Callable[..., Any], args: list[torch.Tensor],
                   category: str, cpu_fn: Callable[..., Any] | None = None) -> None:
    """Compiled on device vs eager on device (category compile) and vs eager on CPU (the op's category).

    fn runs eagerly on device arguments; cpu_fn (default fn) computes the CPU reference.
    """
    dev_args = [a.to(ctx.device) for a in args]
    got = fn_c(*dev_args)
    eager = fn(*dev_args)
    to_cpu = (lambda r: [t.cpu() for t in r]) if isinstance(got, (tuple, list)) else (lambda r: r.cpu())
    ctx.assert_close(to_cpu(got), to_cpu(eager), category="compile")
    ctx.assert_close(to_cpu(got), (cpu_fn or fn)(*args), category=category)


def _unary(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * torch.exp(-x.abs()) + torch.tanh(2 * x)


def _binary(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.where(x > y, x * y, x - y) + x / (y.abs() + 1)


def _reduction(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return x.sum(-1), x.amax(0), (x * x).mean()


def _matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a @ b) + 1


# name -> (function, argument shapes, comparison category against CPU)
FUNCTIONS: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]], str]] = {
    "unary": (_unary, [(5, 33)], "elementwise"),
    "binary": (_binary, [(5, 33), (5, 33)], "elementwise"),
    "reduction": (_reduction, [(6, 40)], "reduction"),
    "matmul": (_matmul, [(9, 16), (16, 7)], "matmul"),
}


def compile_function(ctx: CaseContext, dtype: torch.dtype, function: str) -> None:
    fn, shapes, category = FUNCTIONS[function]
    check_compiled(ctx, fn, compiled(ctx, fn), _inputs(ctx, shapes, dtype), category)


for _name, (_fn, _shapes, _cat) in FUNCTIONS.items():
    SUITE.case(f"function/{_name}", level=6, dtypes=F32, requires=COMPILE, oracle="cpu",
               ops=(f"compile::{_name}",), params={"static": {"function": _name}})(compile_function)


# Argument shapes per call of one dynamic=True compilation.
DYNAMIC_SHAPES: dict[str, list[list[tuple[int, ...]]]] = {
    "unary": [[(3, 5)], [(6, 5)], [(11, 7)]],
    "reduction": [[(4, 9)], [(8, 9)], [(13, 2)]],
    "matmul": [[(3, 8), (8, 5)], [(6, 8), (8, 9)], [(11, 4), (4, 13)]],
}


@SUITE.case("dynamic/shapes", level=6, dtypes=F32, requires=COMPILE, ops=("compile::dynamic",),
            params={name: {"function": name} for name in DYNAMIC_SHAPES})
def dynamic_shapes(ctx: CaseContext, dtype: torch.dtype, function: str) -> None:
    """One dynamic=True compilation serves several sizes; each matches eager."""
    fn, _, category = FUNCTIONS[function]
    fn_c = compiled(ctx, fn, dynamic=True)
    for i, sizes in enumerate(DYNAMIC_SHAPES[function]):
        ctx.describe(sample=i, shapes=[list(s) for s in sizes])
        check_compiled(ctx, fn, fn_c, _inputs(ctx, sizes, dtype, salt=i), category)


@SUITE.case("model/transformer_block", level=6, dtypes=F32, requires=COMPILE, ops=("compile::model",))
def compiled_model(ctx: CaseContext, dtype: torch.dtype) -> None:
    block = seeded(ctx.seed, TransformerBlock).eval()
    (x,) = _inputs(ctx, [(2, 6, 16)], dtype)
    with torch.no_grad():
        expected = block(x, is_causal=True)
        dev_block = seeded(ctx.seed, TransformerBlock).eval().to(ctx.device)
        got = compiled(ctx, dev_block)(x.to(ctx.device), is_causal=True)
        eager = dev_block(x.to(ctx.device), is_causal=True)
    ctx.assert_close(got.cpu(), eager.cpu(), category="compile")
    ctx.assert_close(got.cpu(), expected, category="workload")


@SUITE.case("model/mlp_forward", level=6, dtypes=F32, requires=COMPILE, ops=("compile::model",))
def compiled_mlp(ctx: CaseContext, dtype: torch.dtype) -> None:
    kind = MODELS["mlp"]
    x, _ = kind.batch(ctx.seed)
    dev_model = seeded(ctx.seed, kind.build).to(ctx.device)
    with torch.no_grad():
        check_compiled(ctx, dev_model, compiled(ctx, dev_model), [x], "matmul", cpu_fn=seeded(ctx.seed, kind.build))


@SUITE.case("training/step", level=6, dtypes=F32, requires=(*COMPILE, "training"), ops=("compile::training",))
def compiled_training_step(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Forward, backward and optimizer steps through a compiled model match eager training on CPU."""
    compare_training(ctx, "mlp", "sgd_momentum", wrap=lambda m: compiled(ctx, m))
