"""Level 4 training: seeded optimizer steps of small models on the device against the same steps on CPU.

Each case trains a model built from code under the run's seed, on the device and on CPU, and
compares parameters and losses (category "training") and checks that the loss went down.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from torchcts.cases.api import (
    MODELS,
    OPTIMIZERS,
    CaseContext,
    CaseSet,
    TrainPlan,
    compare_training,
    compat,
    expect,
    not_on_host,
    seeded,
)

SUITE = CaseSet("training")
cases = SUITE.cases

F32 = ("float32",)
TRAINING = ("training",)
_OPTIM_OPS = {
    "sgd_momentum": ("aten::mul_", "aten::add_"),
    "adam": ("aten::addcdiv_", "aten::addcmul_", "aten::sqrt"),
    "adamw": ("aten::addcdiv_", "aten::addcmul_", "aten::sqrt"),
}
_FUSED_OPS = {"sgd_momentum": ("aten::_fused_sgd_",), "adam": ("aten::_fused_adam_",), "adamw": ("aten::_fused_adamw_",)}


def optimizer_steps(ctx: CaseContext, dtype: torch.dtype, model: str, optimizer: str, impl: str) -> None:
    """N steps with one optimizer implementation (for_loop, foreach or fused) vs the CPU for-loop."""
    if impl == "fused":
        devices = compat.fused_optimizer_devices()
        if devices is None or ctx.device_type not in devices:
            ctx.not_applicable(f"this PyTorch build has no fused optimizer kernels for '{ctx.device_type}' "
                               f"(fused devices: {devices})")
    kwargs = {"for_loop": (("foreach", False),), "foreach": (("foreach", True),), "fused": (("fused", True),)}[impl]
    ctx.describe(impl=impl)
    compare_training(ctx, model, optimizer, TrainPlan(optimizer_kwargs=kwargs))


for _opt in OPTIMIZERS:
    SUITE.case(f"optim/{_opt}", level=4, dtypes=F32, requires=TRAINING, ops=_OPTIM_OPS[_opt],
               params={m: {"model": m, "optimizer": _opt, "impl": "for_loop"} for m in ("mlp", "cnn", "rnn")},
               )(optimizer_steps)
    SUITE.case(f"optim_foreach/{_opt}", level=4, dtypes=F32, requires=(*TRAINING, "foreach"),
               ops=("aten::_foreach_add_", "aten::_foreach_mul_"),
               params={"mlp": {"model": "mlp", "optimizer": _opt, "impl": "foreach"}})(optimizer_steps)
    SUITE.case(f"optim_fused/{_opt}", level=4, dtypes=F32, requires=TRAINING, ops=_FUSED_OPS[_opt],
               params={"mlp": {"model": "mlp", "optimizer": _opt, "impl": "fused"}})(optimizer_steps)


@SUITE.case("grad/clip_norm", level=4, dtypes=F32, requires=TRAINING, ops=("aten::linalg_vector_norm", "aten::mul_"))
def clip_norm(ctx: CaseContext, dtype: torch.dtype) -> None:
    actual, expected = compare_training(ctx, "mlp", "sgd_momentum", TrainPlan(clip_norm=0.25))
    ctx.assert_close(actual.extra["grad_norms"], expected.extra["grad_norms"], category="training")


@SUITE.case("grad/clip_value", level=4, dtypes=F32, requires=TRAINING, ops=("aten::clamp_",))
def clip_value(ctx: CaseContext, dtype: torch.dtype) -> None:
    compare_training(ctx, "cnn", "sgd_momentum", TrainPlan(clip_value=0.05))


@SUITE.case("grad/accumulation", level=4, dtypes=F32, requires=TRAINING, ops=("aten::add_",))
def accumulation(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Gradients of two half batches accumulated equal the full batch gradient; training matches CPU."""
    kind = MODELS["mlp"]
    model = seeded(ctx.seed, kind.build).to(ctx.device)
    x, y = (t.to(ctx.device) for t in kind.batch(ctx.seed))
    kind.loss(model(x), y).backward()
    full = [p.grad.detach().clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    for half in (slice(0, 4), slice(4, 8)):
        (kind.loss(model(x[half]), y[half]) / 2).backward()
    ctx.assert_close([p.grad.cpu() for p in model.parameters()], [g.cpu() for g in full], category="training")
    compare_training(ctx, "mlp", "adam", TrainPlan(accumulate=3))


@SUITE.case("grad/zero_grad", level=4, dtypes=F32, requires=TRAINING, ops=("aten::zero_",),
            params={"set_to_none": {"set_to_none": True}, "zero_fill": {"set_to_none": False}})
def zero_grad(ctx: CaseContext, dtype: torch.dtype, set_to_none: bool) -> None:
    kind = MODELS["mlp"]
    model = seeded(ctx.seed, kind.build).to(ctx.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = (t.to(ctx.device) for t in kind.batch(ctx.seed))
    kind.loss(model(x), y).backward()
    opt.zero_grad(set_to_none=set_to_none)
    for p in model.parameters():
        if set_to_none:
            expect(p.grad is None, "zero_grad(set_to_none=True) left a gradient tensor")
        else:
            expect(p.grad is not None and p.grad.device.type == ctx.device_type,
                   "zero_grad(set_to_none=False) dropped the gradient")
            ctx.assert_close(p.grad.cpu(), torch.zeros_like(p.grad, device="cpu"))
    compare_training(ctx, "cnn", "adamw", TrainPlan(set_to_none=set_to_none))


@SUITE.case("autocast/forward_backward", level=4, dtypes=F32, requires=(*TRAINING, "autocast"),
            ops=("aten::linear", "aten::mse_loss"))
def autocast_forward_backward(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Inside autocast, linear runs in the device's autocast dtype and mse_loss in float32; grads stay float32."""
    if not torch.amp.autocast_mode.is_autocast_available(ctx.device_type):
        ctx.not_applicable(f"torch.autocast is not available for '{ctx.device_type}' in this build")
    low = torch.get_autocast_dtype(ctx.device_type)
    ctx.describe(autocast_dtype=str(low))
    kind = MODELS["mlp"]
    x, y = kind.batch(ctx.seed)

    def run(device: torch.device, ref_dtype: torch.dtype):
        model = seeded(ctx.seed, kind.build).to(device)
        with torch.autocast(device_type=device.type, dtype=ref_dtype):
            out = model(x.to(device))
            loss = F.mse_loss(out, y.to(device))
        loss.backward()
        return model, out, loss

    model, out, loss = run(ctx.device, low)
    expect(out.dtype == low, "a linear layer inside autocast did not run in the autocast dtype",
           got=str(out.dtype), expected=str(low))
    expect(loss.dtype == torch.float32, "mse_loss inside autocast did not run in float32", got=str(loss.dtype))
    for p in model.parameters():
        expect(p.grad is not None and p.grad.dtype == p.dtype == torch.float32, "autocast changed a parameter or gradient dtype",
               got=str(None if p.grad is None else p.grad.dtype))
    expect((model(x.to(ctx.device))).dtype == torch.float32, "autocast leaked outside its region")
    ref_dtype = low if torch.amp.autocast_mode.is_autocast_available("cpu") else torch.float32
    ref_model, ref_out, _ = run(torch.device("cpu"), ref_dtype)
    ctx.assert_close(out.float().cpu(), ref_out.float(), category="training", dtype=low)
    ctx.assert_close([p.grad.cpu() for p in model.parameters()], [p.grad for p in ref_model.parameters()],
                     category="training", dtype=low)


def _loader_batches(ctx: CaseContext, pin: bool) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(ctx.seed)
    data = TensorDataset(torch.randn(24, 16, generator=g), torch.randn(24, 4, generator=g))
    return [(x, y) for x, y in DataLoader(data, batch_size=8, shuffle=False, pin_memory=pin)]


@SUITE.case("data/dataloader", level=4, dtypes=F32, requires=TRAINING)
def dataloader(ctx: CaseContext, dtype: torch.dtype) -> None:
    compare_training(ctx, "mlp", "sgd_momentum", data=_loader_batches(ctx, pin=False))


@SUITE.case("data/pin_memory", level=4, dtypes=F32, requires=(*TRAINING, "pinned_memory"))
def dataloader_pinned(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Batches of a pin_memory DataLoader are pinned; non_blocking copies train like the CPU."""
    not_on_host(ctx)  # a claim CPU cannot have: there is no transfer to a device to speed up
    data = _loader_batches(ctx, pin=True)
    for i, (x, y) in enumerate(data):
        expect(x.is_pinned() and y.is_pinned(),
               "a pin_memory DataLoader returned an unpinned batch", batch=i)
    compare_training(ctx, "mlp", "sgd_momentum", TrainPlan(non_blocking=True), data=data)
