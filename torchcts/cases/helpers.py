"""Helpers for suite authors (re-exported by cases/api.py): inputs, property checks, CPU-vs-device runs.

Kept here (not copied per suite) so that every suite builds inputs and reports property failures
the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch

from torchcts.cases.context import CaseContext, dtype_of
from torchcts.cases.observe import unobserved
from torchcts.compat import compile_backend, current_accelerator, device_module, is_missing_kernel
from torchcts.errors import first_line
from torchcts.oracle.compare import Mismatch, OracleMismatch, find_mismatch
from torchcts.oracle.tolerances import Tolerance

__all__ = [
    "MB", "budget_mb", "compiled", "contiguous_strides", "cpu_reference", "dtype_of", "expect", "expect_identical",
    "expect_raises", "not_on_host", "on_cpu", "run_both", "same_storage", "sample", "sample_for_cast", "synced", "synchronize",
    "to_device",
]

T = TypeVar("T")


@unobserved()  # a CPU input, not the device's work (matters on --device cpu)
def sample(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """A deterministic CPU tensor of any dtype, with values valid for every elementwise op here."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_complex:
        return torch.complex(torch.randn(shape, generator=g), torch.randn(shape, generator=g)).to(dtype)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 4).to(dtype)
    lo = 0 if dtype == torch.uint8 else -20
    return torch.randint(lo, 20, shape, generator=g).to(dtype)


def sample_for_cast(shape: tuple[int, ...], src: torch.dtype, dst: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Values of `src` whose conversion to `dst` is defined: in range, non-negative for unsigned."""
    with unobserved():
        t = sample(shape, src, seed)
        if dst == torch.uint8 and src != torch.bool:
            t = t.abs() if not src.is_complex else torch.complex(t.real.abs(), t.imag).to(src)
        if dst == torch.bool and src != torch.bool and t.numel() > 1:
            t = t.clone()
            t.view(-1)[::3] = 0  # zeros cast to False: an all-True reference proves nothing (oracle/weak.py)
        return t


def on_cpu(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) on CPU tensors: input preparation (values made positive, a mask, bounds) done before
    the inputs move, so no op but the one under test runs on the device and a gap in a helper op
    is never reported against it; unobserved, so on --device cpu it is not counted as the device's
    work either. A device op a case cannot avoid goes in `ctx.helper_op(op)` (cases/context.py)."""
    with unobserved():
        return fn(*args)


def expect(cond: bool, what: str, /, **extra: object) -> None:
    """A property check: fail with a structured mismatch when cond is false."""
    if not cond:
        raise OracleMismatch(Mismatch(what, extra=dict(extra)))


@unobserved()  # the comparison is TorchCTS's work, not the device's
def expect_identical(actual: torch.Tensor, expected: torch.Tensor, what: str, signed_zero: bool = False) -> None:
    """Bit for bit (NaN equal to NaN; -0.0 unequal to 0.0 where `signed_zero`), shape and dtype too: for a
    result with exactly one right answer (a rounding, a cast, integers, an exact sum), where a float
    tolerance would hide a one-ulp error. The oracle's exact comparison (atol = rtol = 0), its mismatch
    naming the first differing element, prefixed with `what`; TorchCTS's work, not the device's."""
    actual = actual.cpu()
    with unobserved():
        found = find_mismatch(actual, expected, Tolerance(0.0, 0.0, signed_zero=signed_zero))
    if found is not None:
        found.what = f"{what}: {found.what}"
        raise OracleMismatch(found)


def to_device(ctx: CaseContext, *tensors: torch.Tensor) -> list[torch.Tensor]:
    """Device copies, never the CPU tensors themselves (with --device cpu .to() would alias them)."""
    return [t.to(ctx.device, copy=True) for t in tensors]


def same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when both tensors use the same memory (the defining property of a view)."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def not_on_host(ctx: CaseContext) -> None:
    """Pinned memory cases: not applicable when the device under test is the host itself."""
    if ctx.device_type == "cpu":
        ctx.not_applicable("pinned memory is host memory locked for copies to an accelerator; the device under "
                           "test is the host itself (PyTorch pins nothing without an accelerator)")


def synchronize(device_type: str) -> None:
    """Wait for the device's queued work: torch.<device>.synchronize(), else torch.accelerator's where
    this device is the accelerator (OpenReg's module has none: device_api/module/synchronize reports
    that gap; a case that only needs its copies finished must not fail on it); neither fails the case."""
    if device_type == "cpu":
        return
    mod = device_module(device_type)
    if mod is not None and hasattr(mod, "synchronize"):
        mod.synchronize()
        return
    accelerator = getattr(torch, "accelerator", None)
    expect(hasattr(accelerator, "synchronize") and current_accelerator() == device_type,
           f"torch.{device_type}.synchronize does not exist, nor torch.accelerator.synchronize for it")
    accelerator.synchronize()


def synced(out: Any) -> Any:
    """Bring results to CPU so that an asynchronous device error surfaces inside the call."""
    if isinstance(out, torch.Tensor):
        return out.cpu()
    if isinstance(out, (list, tuple)):
        return type(out)(synced(o) for o in out)
    return out


def expect_raises(fn: Callable[[], Any], what: str,
                  like: type[BaseException] | tuple[type[BaseException], ...] = Exception) -> BaseException:
    """The call (results synchronised) must raise an instance of `like` (a type, or a tuple of
    types any of which will do); returns the exception."""
    named = " or ".join(t.__name__ for t in (like if isinstance(like, tuple) else (like,)))
    try:
        synced(fn())
    except like as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - a wrong exception type is the mismatch we report
        raise OracleMismatch(Mismatch(f"{what}: raised {type(exc).__name__}, expected {named}",
                                      extra={"message": str(exc)[:300]})) from None
    raise OracleMismatch(Mismatch(f"{what}: no exception raised, expected {named}"))


def run_both(ctx: CaseContext, fn: Callable[..., Any], *args: Any, category: str = "elementwise") -> Any:
    """Run fn on CPU args and on their device copies; compare values and dtypes.

    When CPU raises, the device must raise too (CPU is the oracle of what is an error), an exception
    of CPU's type or a RuntimeError: a device kernel's check (a device-side assert, a runtime's error
    code) surfaces as RuntimeError, as CUDA's out-of-range index does where CPU raises IndexError, and
    that is no wrong answer; a missing kernel on the device is (no check ran). A missing kernel on
    CPU (compat.is_missing_kernel, whatever exception class this PyTorch uses for it) is no
    reference: the case is not_applicable. Returns the device
    result (None when both raised).

    The device copies are made before CPU's run: fn may write into its arguments (an in-place op, an
    out=, a view's base), and copies taken after would carry CPU's writes to the device, where an op
    that writes nothing would then pass.
    """
    moved = _move(ctx, args)
    try:
        with unobserved():
            expected = fn(*args)
    except Exception as cpu_exc:  # noqa: BLE001 - CPU's verdict is the reference
        if is_missing_kernel(cpu_exc):  # CPU lacks the kernel: no reference, not an error rule
            ctx.not_applicable(f"CPU has no kernel for this ({first_line(cpu_exc, 120)}); no reference")
        raised = expect_raises(lambda: fn(*moved), "CPU raises for these inputs",
                               tuple(dict.fromkeys((type(cpu_exc), RuntimeError))))
        if is_missing_kernel(raised):  # the device lacks the op (CPU has it: see above): no check of the inputs ran
            raise OracleMismatch(Mismatch(f"CPU raises {type(cpu_exc).__name__} for these inputs; the device has "
                                          f"no kernel for the call ({first_line(raised, 200)})")) from None
        return None
    actual = fn(*moved)
    ctx.assert_close(actual, expected, category=category)
    return actual


def _move(ctx: CaseContext, args: tuple[Any, ...]) -> list[Any]:
    return [a.to(ctx.device, copy=True) if isinstance(a, torch.Tensor) else a for a in args]


def cpu_reference(ctx: CaseContext, fn: Callable[[], Any], what: str) -> Any:
    """The CPU result, or not_applicable when CPU has no kernel for it (no reference exists)."""
    try:
        with unobserved():
            return fn()
    except Exception as exc:
        if not is_missing_kernel(exc):
            raise
        ctx.not_applicable(f"CPU has no kernel for {what} ({first_line(exc, 120)}); no reference")


def round_trip(obj: Any, **load_kwargs: Any) -> Any:
    """`obj` through torch.save and torch.load in memory (the serialization suite and its field cases)."""
    import io

    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kwargs)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a contiguous (row-major) tensor of `shape`, as PyTorch computes them."""
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def compiled(ctx: CaseContext, fn: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    """torch.compile with the device's backend, from a clean dynamo cache, recorded in ctx.info."""
    import torch._dynamo

    backend = compile_backend(ctx.device_type)
    ctx.describe(compile_backend=backend, compile_options={k: str(v) for k, v in kwargs.items()})
    torch._dynamo.reset()
    return torch.compile(fn, backend=backend, **kwargs)


MB = 1 << 20
DEFAULT_MB = 16.0


def budget_mb(ctx: CaseContext, wanted: float = DEFAULT_MB) -> float:
    """The size one case may allocate: wanted, capped by both resource limits."""
    limits = ctx.manifest.resource_limits
    caps = [wanted]
    if "max_tensor_mb" in limits:
        caps.append(limits["max_tensor_mb"])
    if "max_device_memory_mb" in limits:  # leave room for the case's other tensors and copies
        caps.append(limits["max_device_memory_mb"] / 4)
    return max(min(caps), 0.0)
