"""Field cases of the mixed-precision class P2 (docs/bug-classes.md): non-finite gradients under a
GradScaler must skip the optimizer step.

A GradScaler hands fused optimizers its scale and found-inf flag as the attributes `grad_scale`
and `found_inf` (torch.optim reads them in step()): the fused kernel divides the gradients by the
scale and leaves parameters and state untouched when found_inf is 1. Level 4 and the claims of the
foreach suite's fused cases (`training`, `foreach`); each step on the device is compared with the
same fused step on CPU: parameter, step count and moment buffers.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import CaseContext, CaseSet, expect, on_cpu, sample

SUITE = CaseSet("field")
cases = SUITE.cases

GH = "https://github.com/"
FUSED = ("training", "foreach")


def _fused_step(device: torch.device, opt_cls: type[torch.optim.Optimizer], param: torch.Tensor, grad: torch.Tensor,
                grad_scale: float | None, found_inf: float | None) -> dict[str, torch.Tensor]:
    """One fused step of `opt_cls` on `device` with the scaler's attributes set as given."""
    p = param.to(device, copy=True)
    p.grad = grad.to(device, copy=True)
    opt = opt_cls([p], lr=0.1, fused=True)
    if grad_scale is not None:
        opt.grad_scale = torch.tensor(grad_scale, device=device)  # type: ignore[attr-defined]
    if found_inf is not None:
        opt.found_inf = torch.tensor(found_inf, device=device)  # type: ignore[attr-defined]
    opt.step()
    state = {k: v.detach() for k, v in opt.state[p].items() if isinstance(v, torch.Tensor)}
    return {"param": p.detach(), **state}


def _compare(ctx: CaseContext, opt_cls: type[torch.optim.Optimizer], dtype: torch.dtype, grad_scale: float | None,
             found_inf: float | None) -> None:
    param = sample((4, 5), dtype, ctx.seed)
    grad = sample((4, 5), dtype, ctx.seed + 1) * (grad_scale or 1.0)
    want = on_cpu(_fused_step, torch.device("cpu"), opt_cls, param, grad, grad_scale, found_inf)
    got = _fused_step(ctx.device, opt_cls, param, grad, grad_scale, found_inf)
    what = f"fused {opt_cls.__name__}, grad_scale={grad_scale}, found_inf={found_inf}"
    if found_inf:
        expect(torch.equal(got["param"].cpu(), param), f"{what}: the parameters changed though found_inf is 1",
               max_change=float((got["param"].cpu().double() - param.double()).abs().max()))
    for key, value in want.items():
        expect(key in got, f"{what}: optimizer state {key!r} missing", got=sorted(got))
        ctx.describe(step=f"{what}: {key}")
        ctx.assert_close(got[key].cpu(), value, category="training")


@SUITE.case("P2/pytorch-pytorch-186360", level=4, dtypes=("float32",), ops=("aten::_fused_adam_",), requires=FUSED,
            cite=GH + "pytorch/pytorch/pull/186360")
def fused_adam_found_inf(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS fused Adam ignored grad_scale and found_inf: with opt.found_inf = ones(()) the parameters
    ones(4) still changed. found_inf=1 alone (the report), then grad_scale=4 with found_inf=0 (the
    gradients are divided by the scale before the update)."""
    _compare(ctx, torch.optim.Adam, dtype, None, 1.0)
    _compare(ctx, torch.optim.Adam, dtype, 4.0, 1.0)
    _compare(ctx, torch.optim.Adam, dtype, 4.0, 0.0)


@SUITE.case("P2/pytorch-pytorch-95847", level=4, dtypes=("float32",), ops=("aten::_fused_adamw_",), requires=FUSED,
            cite=GH + "pytorch/pytorch/pull/95847")
def fused_adamw_found_inf_without_scale(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Fused Adam and AdamW (CUDA) did not pass found_inf to the kernel when grad_scale was None, so
    parameters were updated from gradients holding inf or NaN. AdamW with found_inf=1 and no scale,
    then with found_inf=0."""
    _compare(ctx, torch.optim.AdamW, dtype, None, 1.0)
    _compare(ctx, torch.optim.AdamW, dtype, None, 0.0)
