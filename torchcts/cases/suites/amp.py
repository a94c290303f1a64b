"""Automatic mixed precision: autocast's op lists on the device (level 4) and GradScaler (level 6).

Autocast (claim `autocast`, one case per op and claimed low dtype, float16 / bfloat16): PyTorch
defines the op lists per device type in C++ (autocast_mode.cpp; none for PrivateUse1, whose
backend registers its own, usually a copy of CUDA's). The ops here are the ones both CPU's lists
and the lists PyTorch documents for CUDA put in the same class, so CPU is the reference for any
device that follows either: a `lower` op given float32 inputs runs in the autocast dtype, a
`float32` op given low inputs runs in float32, a `promote` op given (low, float32) inputs runs in
float32. Each case runs the op under autocast on CPU and on the device: CPU must show the class
(else this build's CPU lists moved: not_applicable), the device the same dtype and close values.

GradScaler (claim `training`, float32): `torch.amp.GradScaler(device)` scales the loss, unscales
the gradients, skips the optimizer step when a gradient holds inf or NaN (scale times
backoff_factor) and grows the scale after growth_interval clean steps; every step is compared
with the same steps of `torch.amp.GradScaler("cpu")`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from torchcts.cases.api import CaseContext, CaseSet, cpu_reference, expect

SUITE = CaseSet("amp")
cases = SUITE.cases

LOW = ("float16", "bfloat16")
AUTOCAST = ("autocast",)

# An op's inputs: a function of `make(shape)` -> tensor (floating inputs; integer targets are built).
Inputs = Callable[[Callable[..., torch.Tensor]], tuple]
_IDX = torch.tensor([0, 1, 2, 3])


def _conv_t(make: Callable[..., torch.Tensor]) -> tuple:
    return make(2, 3, 8, 8), make(3, 4, 3, 3)


# op -> (aten ops it reaches, function, inputs). Ops in the same class in CPU's and CUDA's lists.
LOWER: dict[str, tuple[tuple[str, ...], Callable[..., torch.Tensor], Inputs]] = {
    "mm": (("aten::mm",), torch.mm, lambda m: (m(8, 8), m(8, 8))),
    "bmm": (("aten::bmm",), torch.bmm, lambda m: (m(2, 8, 8), m(2, 8, 8))),
    "addmm": (("aten::addmm",), torch.addmm, lambda m: (m(8, 8), m(8, 8), m(8, 8))),
    "baddbmm": (("aten::baddbmm",), torch.baddbmm, lambda m: (m(2, 8, 8), m(2, 8, 8), m(2, 8, 8))),
    "matmul": (("aten::matmul",), torch.matmul, lambda m: (m(3, 8, 8), m(8, 8))),
    "linear": (("aten::linear",), F.linear, lambda m: (m(8, 8), m(4, 8), m(4))),
    "conv1d": (("aten::conv1d",), F.conv1d, lambda m: (m(2, 3, 16), m(4, 3, 3))),
    "conv2d": (("aten::conv2d",), F.conv2d, lambda m: (m(2, 3, 8, 8), m(4, 3, 3, 3))),
    "conv_transpose2d": (("aten::conv_transpose2d",), F.conv_transpose2d, _conv_t),
    "prelu": (("aten::prelu",), F.prelu, lambda m: (m(4, 8), m(1))),
}


def _nll(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    return lambda x: fn(x, _IDX.to(x.device))


FLOAT32: dict[str, tuple[tuple[str, ...], Callable[..., torch.Tensor], Inputs]] = {
    "mse_loss": (("aten::mse_loss",), F.mse_loss, lambda m: (m(4, 8), m(4, 8))),
    "l1_loss": (("aten::l1_loss",), F.l1_loss, lambda m: (m(4, 8), m(4, 8))),
    "smooth_l1_loss": (("aten::smooth_l1_loss",), F.smooth_l1_loss, lambda m: (m(4, 8), m(4, 8))),
    "kl_div": (("aten::kl_div",), lambda a, b: F.kl_div(a, b, reduction="batchmean"), lambda m: (m(4, 8), m(4, 8))),
    "binary_cross_entropy_with_logits": (("aten::binary_cross_entropy_with_logits",),
                                         F.binary_cross_entropy_with_logits, lambda m: (m(4, 8), m(4, 8).sigmoid())),
    "nll_loss": (("aten::nll_loss",), _nll(F.nll_loss), lambda m: (m(4, 8),)),
    "cross_entropy": (("aten::cross_entropy_loss",), _nll(F.cross_entropy), lambda m: (m(4, 8),)),
    "soft_margin_loss": (("aten::soft_margin_loss",), F.soft_margin_loss, lambda m: (m(4, 8), m(4, 8).sign())),
    "prod": (("aten::prod",), torch.prod, lambda m: (m(4, 8) * 0.25 + 1,)),
    "cdist": (("aten::cdist",), torch.cdist, lambda m: (m(2, 5, 8), m(2, 6, 8))),
}

PROMOTE: dict[str, tuple[tuple[str, ...], Callable[..., torch.Tensor]]] = {
    "cat": (("aten::cat",), lambda a, b: torch.cat([a, b])),
    "stack": (("aten::stack",), lambda a, b: torch.stack([a, b])),
}


def _maker(seed: int, dtype: torch.dtype) -> Callable[..., torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return lambda *shape: torch.randn(*shape, generator=g).to(dtype)


def _autocast_on(ctx: CaseContext, low: torch.dtype) -> None:
    """not_applicable where this build has no autocast for the device, or for CPU (the reference)."""
    for device_type in (ctx.device_type, "cpu"):
        if not torch.amp.autocast_mode.is_autocast_available(device_type):
            ctx.not_applicable(f"torch.autocast is not available for '{device_type}' in this build")
    ctx.describe(autocast_dtype=str(low))


def _under_autocast(device: torch.device, low: torch.dtype, fn: Callable[..., torch.Tensor], args: tuple) -> torch.Tensor:
    with torch.autocast(device_type=device.type, dtype=low):
        return fn(*(a.to(device) for a in args))


def _check_class(ctx: CaseContext, op: str, kind: str, fn: Callable[..., torch.Tensor], args: tuple,
                 low: torch.dtype, expected: torch.dtype) -> None:
    """CPU shows the class (else not_applicable); the device the same dtype and close values."""
    ref = cpu_reference(ctx, lambda: _under_autocast(torch.device("cpu"), low, fn, args), f"{op} under autocast")
    if ref.dtype != expected:
        ctx.not_applicable(f"CPU autocast of this PyTorch does not run {op} in {expected} (got {ref.dtype}): "
                           f"its lists moved, no reference for the '{kind}' class")
    out = _under_autocast(ctx.device, low, fn, args)
    expect(out.dtype == expected, f"{op} under autocast({low}) did not run in {expected} (autocast's '{kind}' list)",
           got=str(out.dtype), expected=str(expected), input_dtypes=[str(a.dtype) for a in args])
    expect(out.device.type == ctx.device_type, f"{op} under autocast left the device", got=str(out.device))
    ctx.assert_close(out.cpu(), ref, category="matmul" if kind == "lower" else "reduction", dtype=low)


def lower_case(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    """float32 inputs of a `lower` op run in the autocast dtype."""
    _autocast_on(ctx, dtype)
    _, fn, inputs = LOWER[op]
    _check_class(ctx, op, "lower", fn, inputs(_maker(ctx.seed, torch.float32)), dtype, dtype)


def float32_case(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    """Low-dtype inputs of a `float32` op run in float32."""
    _autocast_on(ctx, dtype)
    _, fn, inputs = FLOAT32[op]
    _check_class(ctx, op, "float32", fn, inputs(_maker(ctx.seed, dtype)), dtype, torch.float32)


def promote_case(ctx: CaseContext, dtype: torch.dtype, op: str) -> None:
    """(low, float32) inputs of a `promote` op run in float32, the widest."""
    _autocast_on(ctx, dtype)
    _, fn = PROMOTE[op]
    make = _maker(ctx.seed, torch.float32)
    _check_class(ctx, op, "promote", fn, (make(4, 8).to(dtype), make(4, 8)), dtype, torch.float32)


_CHECKS: dict[str, Callable[..., None]] = {"lower": lower_case, "float32": float32_case, "promote": promote_case}


def _member(kind: str, op: str) -> Callable[[CaseContext, torch.dtype], None]:
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        _CHECKS[kind](ctx, dtype, op)

    run.__doc__ = _CHECKS[kind].__doc__
    return run


for _kind, _table in (("lower", LOWER), ("float32", FLOAT32), ("promote", PROMOTE)):
    for _op, _entry in _table.items():
        SUITE.family(f"autocast/{_kind}/{_op}", qualname=f"autocast_{_kind}_{_op}", level=4, dtypes=LOW,
                     requires=AUTOCAST, ops=_entry[0])(_member(_kind, _op))


@SUITE.case("autocast/region", level=4, dtypes=LOW, requires=AUTOCAST, ops=("aten::mm",))
def region(ctx: CaseContext, dtype: torch.dtype) -> None:
    """The claimed low dtype is accepted; the region's state is visible, nests, and ends with it."""
    _autocast_on(ctx, dtype)
    dev = ctx.device_type
    a = torch.ones(4, 4, device=ctx.device)
    with torch.autocast(device_type=dev, dtype=dtype):
        expect(torch.is_autocast_enabled(dev), "torch.is_autocast_enabled is False inside autocast")
        expect(torch.get_autocast_dtype(dev) == dtype, "torch.get_autocast_dtype inside autocast is not the dtype asked",
               got=str(torch.get_autocast_dtype(dev)), expected=str(dtype))
        expect((a @ a).dtype == dtype, "mm inside autocast did not run in the claimed low dtype",
               got=str((a @ a).dtype), expected=str(dtype))
        with torch.autocast(device_type=dev, enabled=False):
            expect((a @ a).dtype == torch.float32, "mm inside a nested autocast(enabled=False) was still cast")
    expect(not torch.is_autocast_enabled(dev), "autocast still enabled after its region")
    expect((a @ a).dtype == torch.float32, "autocast leaked outside its region")


# --- GradScaler (level 6) -----------------------------------------------------------------------

TRAINING = ("training",)
F32 = ("float32",)
_SCALER = {"init_scale": 2.0**10, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2}


def _scaler(ctx: CaseContext, device: torch.device) -> torch.amp.GradScaler:
    try:
        scaler = torch.amp.GradScaler(device.type, **_SCALER)
    except (RuntimeError, ValueError, AssertionError) as exc:
        if device.type == "cpu":
            ctx.not_applicable(f"torch.amp.GradScaler('cpu') is not supported by this PyTorch ({exc}); no reference")
        raise
    expect(scaler.is_enabled(), f"torch.amp.GradScaler('{device.type}') disabled itself")
    return scaler


def _steps(ctx: CaseContext, device: torch.device, poison: list[float | None]) -> dict[str, list]:
    """Train a linear layer one step per entry of `poison`: None a clean step, else the value written
    into the first gradient before unscale_. Returns what each step saw."""
    g = torch.Generator().manual_seed(ctx.seed)
    model = torch.nn.Linear(8, 4)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    model = model.to(device)
    x, y = torch.randn(16, 8, generator=g).to(device), torch.randn(16, 4, generator=g).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = _scaler(ctx, device)
    seen: dict[str, list] = {"scaled": [], "grads": [], "skipped": [], "scale": [], "params": []}
    for bad in poison:
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        scaled = scaler.scale(loss)
        scaled.backward()
        seen["scaled"].append((scaled.detach().cpu(), loss.detach().cpu()))
        if bad is not None:
            with torch.no_grad():
                model.weight.grad.view(-1)[3] = bad
        before = [p.detach().cpu().clone() for p in model.parameters()]
        scaler.unscale_(opt)
        seen["grads"].append([p.grad.detach().cpu().clone() for p in model.parameters()])
        scaler.step(opt)
        scaler.update()
        after = [p.detach().cpu().clone() for p in model.parameters()]
        seen["skipped"].append(all(torch.equal(b, a) for b, a in zip(before, after, strict=True)))
        seen["scale"].append(float(scaler.get_scale()))
        seen["params"].append(after)
    return seen


def _compare(ctx: CaseContext, poison: list[float | None]) -> tuple[dict[str, list], dict[str, list]]:
    ref = cpu_reference(ctx, lambda: _steps(ctx, torch.device("cpu"), poison), "GradScaler on cpu")
    got = _steps(ctx, ctx.device, poison)
    ctx.describe(poison=[None if p is None else str(p) for p in poison], scale=got["scale"])
    return got, ref


@SUITE.case("gradscaler/scale_unscale", level=6, dtypes=F32, requires=TRAINING,
            ops=("aten::mul", "aten::_amp_foreach_non_finite_check_and_unscale_"))
def scale_unscale(ctx: CaseContext, dtype: torch.dtype) -> None:
    """scale() multiplies the loss by the scale; unscale_ divides the gradients back; clean steps run."""
    got, ref = _compare(ctx, [None])
    scaled, loss = got["scaled"][0]
    ctx.assert_close(scaled, loss * _SCALER["init_scale"])
    expect(not got["skipped"][0], "GradScaler skipped a step whose gradients were finite")
    ctx.assert_close(got["grads"][0], ref["grads"][0], category="training")
    ctx.assert_close(got["params"][0], ref["params"][0], category="training")


@SUITE.case("gradscaler/skip_nonfinite", level=6, dtypes=F32, requires=TRAINING,
            ops=("aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_"),
            params={"inf": {"bad": "inf"}, "nan": {"bad": "nan"}})
def skip_nonfinite(ctx: CaseContext, dtype: torch.dtype, bad: str) -> None:
    """A gradient holding inf or NaN skips the optimizer step and multiplies the scale by backoff_factor."""
    got, ref = _compare(ctx, [None, float(bad), None])
    expect(got["skipped"] == [False, True, False], f"GradScaler did not skip exactly the step with a {bad} gradient",
           got=got["skipped"], expected=[False, True, False])
    backoff = _SCALER["init_scale"] * _SCALER["backoff_factor"]
    expect(got["scale"][1] == backoff, f"the scale after a {bad} gradient is not init_scale * backoff_factor",
           got=got["scale"][1], expected=backoff)
    expect(got["scale"] == ref["scale"], "the scale sequence differs from GradScaler on CPU",
           got=got["scale"], expected=ref["scale"])
    ctx.assert_close(got["params"][-1], ref["params"][-1], category="training")


@SUITE.case("gradscaler/growth", level=6, dtypes=F32, requires=TRAINING, ops=("aten::_amp_update_scale_",))
def growth(ctx: CaseContext, dtype: torch.dtype) -> None:
    """After growth_interval clean steps the scale grows by growth_factor (and not before)."""
    got, ref = _compare(ctx, [None] * 5)
    s, k = _SCALER["init_scale"], _SCALER["growth_factor"]
    want = [s, s * k, s * k, s * k * k, s * k * k]
    expect(got["scale"] == want, "GradScaler's scale did not grow by growth_factor every growth_interval steps",
           got=got["scale"], expected=want)
    expect(ref["scale"] == want, "GradScaler on CPU (the reference) grew differently", got=ref["scale"])
    ctx.assert_close(got["params"][-1], ref["params"][-1], category="training")

