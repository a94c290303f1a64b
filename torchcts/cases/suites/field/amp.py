"""Field cases of the mixed-precision classes (docs/bug-classes.md P1, P2): the ops of an autocast
region, and non-finite gradients under a GradScaler that must skip the optimizer step.

P1 (claim `autocast`, level 4 as the amp suite's autocast cases): the device's autocast policy may
run an op in the low dtype or in float32, but it must run it, and the result must be the op's in the
dtype it chose (compared with CPU computing the op in that dtype).

P2: a GradScaler hands fused optimizers its scale and found-inf flag as the attributes `grad_scale`
and `found_inf` (torch.optim reads them in step()): the fused kernel divides the gradients by the
scale and leaves parameters and state untouched when found_inf is 1. Level 4 and the claims of the
foreach suite's fused cases (`training`, `foreach`); each step on the device is compared with the
same fused step on CPU: parameter, step count and moment buffers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, expect, on_cpu, sample
from torchcts.cases.suites.field._common import GH

SUITE = CaseSet("field")
cases = SUITE.cases

FUSED = ("training", "foreach")


@SUITE.case("P1/pytorch-pytorch-160332", level=4, dtypes=("float16", "bfloat16"), requires=("autocast",),
            ops=("aten::conv_transpose3d.input",), cite=GH + "pytorch/pytorch/issues/160332")
def autocast_conv_transpose3d(ctx: CaseContext, dtype: torch.dtype) -> None:
    """MPS autocast ran nn.ConvTranspose3d(16, 33, 3, stride=2) in half precision, which its kernel
    refuses ("ConvTranspose 3D with BF16 or FP16 types is not supported on MPS"): the autocast list
    named an op the backend cannot run in that dtype. A smaller ConvTranspose3d in an autocast region
    must run, in the low dtype or float32."""
    x = sample((2, 4, 3, 4, 5), torch.float32, ctx.seed)
    w = sample((4, 5, 3, 3, 3), torch.float32, ctx.seed + 1) / 8
    b = sample((5,), torch.float32, ctx.seed + 2)
    dx, dw, db = (t.to(ctx.device, copy=True) for t in (x, w, b))
    with torch.autocast(device_type=ctx.device_type, dtype=dtype):
        got = F.conv_transpose3d(dx, dw, db, stride=2)
    expect(got.dtype in (dtype, torch.float32), "autocast's conv_transpose3d returned neither the autocast dtype "
           "nor float32", got=str(got.dtype))
    want = on_cpu(lambda: F.conv_transpose3d(x.to(got.dtype), w.to(got.dtype), b.to(got.dtype), stride=2))
    ctx.describe(step=f"conv_transpose3d under autocast({dtype}), computed in {got.dtype}")
    ctx.assert_close(got.cpu(), want, category="conv")


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
