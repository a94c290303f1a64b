"""Autograd on device tensors (capability `autograd` or `training`).

Level 3: gradients of composite expressions against CPU, retain_graph, hooks, the version
counter (modifying a saved tensor in place must make backward raise, as on CPU), in-place on a
leaf, no_grad. Level 4: more expressions, torch.autograd.gradcheck in float64 (finite differences
on the device itself, an oracle independent of CPU), and with `double_backward` claimed,
gradgradcheck and second derivatives against CPU.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from torchcts.cases.api import FLOATING, CaseContext, CaseSet, cpu_reference, expect, expect_raises, sample

SUITE = CaseSet("autograd")
cases = SUITE.cases
AUTOGRAD = ("autograd|training",)
DOUBLE = (*AUTOGRAD, "double_backward")

Expr = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

# name -> (scalar function of x (4, 5) and y (4, 5), level, aten ops)
EXPRS: dict[str, tuple[Expr, int, tuple[str, ...]]] = {
    "poly": (lambda x, y: (x * y + x**2 - y / 3).sum(), 3, ("aten::mul.Tensor", "aten::pow.Tensor_Scalar", "aten::div.Tensor")),
    "trig": (lambda x, y: (torch.sin(x) * torch.cos(y)).sum(), 3, ("aten::sin", "aten::cos")),
    "exp_log": (lambda x, y: (torch.exp(x / 4) + torch.log1p(y.abs())).mean(), 3, ("aten::exp", "aten::log1p", "aten::abs")),
    "broadcast_reduce": (lambda x, y: (x * y[:1]).sum(0).pow(2).sum(), 3, ("aten::sum.dim_IntList", "aten::expand")),
    "index_where": (lambda x, y: torch.where(x > 0, x * y, y).sum() + x[[0, 2]].sum(), 3,
                    ("aten::where.self", "aten::index.Tensor")),
    "views": (lambda x, y: (x.t().reshape(-1)[::2] * y.flatten()[:10]).sum(), 3,
              ("aten::t", "aten::view", "aten::slice.Tensor")),
    "matmul_relu": (lambda x, y: (x @ y.t()).relu().sum(), 4, ("aten::mm", "aten::relu")),
    "softmax": (lambda x, y: (F.softmax(x, -1) * y).sum() + torch.logsumexp(x, 1).sum(), 4,
                ("aten::_softmax", "aten::logsumexp")),
    "tanh_norm": (lambda x, y: torch.tanh(x).norm() * y.sigmoid().mean(), 4,
                  ("aten::tanh", "aten::linalg_vector_norm", "aten::sigmoid")),
    "cumsum_sort": (lambda x, y: (x.cumsum(1) * y.sort(1).values).sum(), 4, ("aten::cumsum", "aten::sort")),
}


def _inputs(dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    return sample((4, 5), dtype, seed) / 4, sample((4, 5), dtype, seed + 1) / 4


def _grads(fn: Expr, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = x.detach().requires_grad_(), y.detach().requires_grad_()
    fn(x, y).backward()
    assert x.grad is not None and y.grad is not None
    return x.grad, y.grad


def _per_expr(family: str, body: Callable[[CaseContext, torch.dtype, str], None], *, dtypes: tuple[str, ...],
              requires: tuple[str, ...], oracle: str, min_level: int = 3) -> None:
    for name, (_, level, ops) in EXPRS.items():
        def run(ctx: CaseContext, dtype: torch.dtype, _name: str = name) -> None:
            body(ctx, dtype, _name)

        SUITE.family(f"{family}/{name}", qualname=f"{family}_{name}",
                     level=max(level, min_level), dtypes=dtypes, ops=ops, requires=requires,
                     oracle=oracle)(run)


def _composite(ctx: CaseContext, dtype: torch.dtype, name: str) -> None:
    fn = EXPRS[name][0]
    x, y = _inputs(dtype, ctx.seed)
    expected = cpu_reference(ctx, lambda: _grads(fn, x, y), f"backward of {name} in {dtype}")
    actual = _grads(fn, x.to(ctx.device), y.to(ctx.device))
    for g in actual:
        expect(g.device.type == ctx.device_type and g.dtype == dtype, "grad has the wrong device or dtype",
               got=f"{g.device} {g.dtype}")
    ctx.assert_close(actual, expected, category="backward")


def _gradcheck(ctx: CaseContext, dtype: torch.dtype, name: str) -> None:
    fn = EXPRS[name][0]
    x, y = (t.to(ctx.device).requires_grad_() for t in _inputs(dtype, ctx.seed))
    ok = torch.autograd.gradcheck(fn, (x, y), eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=False)
    expect(ok, f"gradcheck: analytic gradient of {name} disagrees with finite differences on the device")


def _gradgradcheck(ctx: CaseContext, dtype: torch.dtype, name: str) -> None:
    fn = EXPRS[name][0]
    x, y = (t.to(ctx.device).requires_grad_() for t in _inputs(dtype, ctx.seed))
    ok = torch.autograd.gradgradcheck(fn, (x, y), eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=False)
    expect(ok, f"gradgradcheck: second derivative of {name} disagrees with finite differences on the device")


def _second(fn: Expr, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    x, y = x.detach().requires_grad_(), y.detach().requires_grad_()
    gx, gy = torch.autograd.grad(fn(x, y), (x, y), create_graph=True)
    return torch.autograd.grad((gx * gx).sum() + (gx * gy).sum(), (x, y), allow_unused=True, materialize_grads=True)


def _double_backward(ctx: CaseContext, dtype: torch.dtype, name: str) -> None:
    fn = EXPRS[name][0]
    x, y = _inputs(dtype, ctx.seed)
    expected = cpu_reference(ctx, lambda: _second(fn, x, y), f"double backward of {name} in {dtype}")
    ctx.assert_close(_second(fn, x.to(ctx.device), y.to(ctx.device)), expected, category="backward")


_per_expr("composite", _composite, dtypes=FLOATING, requires=AUTOGRAD, oracle="cpu")
_per_expr("gradcheck", _gradcheck, dtypes=("float64",), requires=AUTOGRAD, oracle="property:gradcheck", min_level=4)
_per_expr("gradgradcheck", _gradgradcheck, dtypes=("float64",), requires=DOUBLE, oracle="property:gradgradcheck",
          min_level=4)
_per_expr("double_backward", _double_backward, dtypes=FLOATING, requires=DOUBLE, oracle="cpu", min_level=4)


def _both(ctx: CaseContext, body: Callable[[torch.device | str], object]) -> tuple[object, object]:
    """Run a scenario on CPU and on the device."""
    return body("cpu"), body(ctx.device)


@SUITE.case("retain_graph", level=3, dtypes=FLOATING, ops=("aten::mul.Tensor",), requires=AUTOGRAD, oracle="cpu")
def retain_graph(ctx: CaseContext, dtype: torch.dtype) -> None:
    def body(device: torch.device | str) -> torch.Tensor:
        x = sample((6,), dtype, ctx.seed).to(device).requires_grad_()
        out = (x.exp() * x).sum()
        out.backward(retain_graph=True)
        out.backward()  # accumulates: grad is twice the single gradient
        expect_raises(out.backward, "a third backward through a freed graph", RuntimeError)
        assert x.grad is not None
        return x.grad

    cpu, dev = _both(ctx, body)
    ctx.assert_close(dev, cpu, category="backward")


@SUITE.case("hooks", level=3, dtypes=FLOATING, ops=("aten::mul.Tensor",), requires=AUTOGRAD, oracle="cpu")
def hooks(ctx: CaseContext, dtype: torch.dtype) -> None:
    def body(device: torch.device | str) -> list[torch.Tensor]:
        seen: list[torch.Tensor] = []
        x = sample((3, 4), dtype, ctx.seed).to(device).requires_grad_()
        mid = x * 3
        mid.register_hook(lambda g: seen.append(g.clone()) or g * 2)  # doubles the gradient flowing on
        x.register_hook(lambda g: seen.append(g.clone()))
        if hasattr(x, "register_post_accumulate_grad_hook"):
            x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        (mid * mid).sum().backward()
        for g in seen:
            expect(g.device.type == torch.device(device).type, "a hook saw a gradient on the wrong device",
                   got=str(g.device))
        return seen

    cpu, dev = _both(ctx, body)
    expect(len(dev) == len(cpu), "hooks ran a different number of times", got=len(dev), expected=len(cpu))
    ctx.assert_close(dev, cpu, category="backward")


@SUITE.case("version_counter", level=3, dtypes=FLOATING, ops=("aten::exp", "aten::add_.Tensor"), requires=AUTOGRAD,
            oracle="cpu:exception_type")
def version_counter(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Modifying a tensor saved for backward in place must make backward raise on the device too."""
    def body(device: torch.device | str) -> list[int]:
        x = sample((5,), dtype, ctx.seed).to(device).requires_grad_()
        y = x.exp()  # exp saves its result for backward
        versions = [y._version]
        y.add_(1)
        versions.append(y._version)
        y[1:3].mul_(2)  # in place through a view bumps the base's version too
        versions.append(y._version)
        expect_raises(lambda: y.sum().backward(), "backward after an in-place change of a saved tensor", RuntimeError)
        return versions

    cpu, dev = _both(ctx, body)
    expect(dev == cpu, "version counters differ from CPU", got=dev, expected=cpu)


@SUITE.case("leaf_inplace", level=3, dtypes=FLOATING, ops=("aten::add_.Tensor",), requires=AUTOGRAD,
            oracle="cpu:exception_type")
def leaf_inplace(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = sample((4,), dtype, ctx.seed).to(ctx.device).requires_grad_()
    expect_raises(lambda: x.add_(1), "in-place op on a leaf that requires grad", RuntimeError)
    with torch.no_grad():
        x.add_(1)  # allowed without grad mode
    expect(x.requires_grad and x.is_leaf, "no_grad in-place changed the leaf's autograd state")
    expect_raises(lambda: torch.ones(3, dtype=torch.int64, device=ctx.device).requires_grad_(),
                  "integer tensors cannot require grad", RuntimeError)


@SUITE.case("no_grad", level=3, dtypes=FLOATING, ops=("aten::mul.Tensor",), requires=AUTOGRAD, oracle="property:grad_mode")
def no_grad(ctx: CaseContext, dtype: torch.dtype) -> None:
    x = sample((4,), dtype, ctx.seed).to(ctx.device).requires_grad_()
    expect((x * 2).requires_grad and (x * 2).grad_fn is not None, "ops on a grad-requiring tensor must record a graph")
    with torch.no_grad():
        expect(not (x * 2).requires_grad, "ops under no_grad must not require grad")
    with torch.inference_mode():
        expect(not (x * 2).requires_grad, "ops under inference_mode must not require grad")
    expect(not x.detach().requires_grad, "detach() must not require grad")


@SUITE.case("grad_api", level=3, dtypes=FLOATING, ops=("aten::mul.Tensor", "aten::sum"), requires=AUTOGRAD,
            oracle="cpu")
def grad_api(ctx: CaseContext, dtype: torch.dtype) -> None:
    """torch.autograd.grad with device grad_outputs, unused inputs, and non-scalar outputs."""
    def body(device: torch.device | str) -> tuple[torch.Tensor, ...]:
        x = sample((3, 4), dtype, ctx.seed).to(device).requires_grad_()
        unused = torch.ones(2, dtype=dtype, device=device, requires_grad=True)
        out = x * x.sin()
        seed = sample((3, 4), dtype, ctx.seed + 1).to(device)
        gx, gu = torch.autograd.grad(out, (x, unused), grad_outputs=seed, allow_unused=True)
        expect(gu is None, "an unused input must get no gradient")
        return (gx,)

    cpu, dev = _both(ctx, body)
    ctx.assert_close(dev, cpu, category="backward")
