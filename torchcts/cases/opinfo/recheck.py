"""A CPU reference that is not one: rechecked before a failure is declared (issue 48 item 3).

CPU is the oracle, but on some inputs CPU's own kernel answers garbage: median(dim) and nanmedian
of a stride-0 input (PyTorch 2.13), a zero batch with a mismatched size that native_group_norm
accepts and answers with uninitialised memory (2.14). Listing such ops would miss the next one; the
sign is generic: an answer that differs from itself on a second call, or from the same call on a
contiguous copy of the sample's tensors, is no reference. The recheck runs only where the device
already disagrees (the one place it matters, and nothing is spent on the passes), and a sample found
so is dropped with the reason (`SkipSample`: counted in `samples_skipped`, a case left with none is
not_applicable): neither a pass nor a failure.

The contiguous copy is compared only when the sample holds a non-contiguous tensor and CPU's result
is no view of an input (a view answers with the input's own strides, as_strided's point).

A reference that writes outside its arguments is none either, and worse: PyTorch's CPU
native_batch_norm takes running statistics shorter than the input's channels and writes past them,
corrupting the heap of the process that holds the oracle (a shrunk explore sample, OpenReg). The
shrinker asks `writes_outside` of each candidate before any call of it counts (explore/run.py).

A failure may also be no claim at all: a reference that computes in a dtype the manifest does not
claim (`computed_dtypes`) makes the sample unclaimed (cases/opinfo/run.py: UnclaimedSample).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torchcts.cases.opinfo.samples import leaves_of, rebuilt, tensors_of, transformed
from torchcts.oracle.compare import TolSpec, find_mismatch

# again(contiguous) -> (the CPU sample the call ran on, the answer compared): the reference again, on
# the sample as the first call had it, or (contiguous=True) on a contiguous copy of its tensors
Again = Callable[[bool], tuple[Any, Any]]


def contiguous(sample: Any) -> Any:
    """The sample with every strided tensor contiguous (a copy where it was not)."""
    def one(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.layout == torch.strided and not x.is_contiguous():
            return x.detach().contiguous().requires_grad_(x.requires_grad)
        if type(x) in (list, tuple):
            return type(x)(one(v) for v in x)
        return x

    return rebuilt(sample, one(sample.input), [one(a) for a in sample.args],
                   {k: one(v) for k, v in sample.kwargs.items()})


def strided(sample: Any) -> bool:
    """Whether a tensor of the sample is not contiguous (a contiguous copy would change its layout)."""
    return any(t.layout == torch.strided and not t.is_contiguous()
               for t in tensors_of((sample.input, sample.args, sample.kwargs)))


def _aliases(cpu: Any, answer: Any) -> bool:
    inputs = {t.untyped_storage().data_ptr() for t in tensors_of(leaves_of((cpu.input, cpu.args, cpu.kwargs)))
              if t.layout == torch.strided}
    return any(t.layout == torch.strided and t.untyped_storage().data_ptr() in inputs for t in tensors_of(answer))


def unstable(first: Any, again: Again, tol: TolSpec, layout_matters: bool) -> str | None:
    """Why CPU's answer `first` is no reference for its sample, None when it holds: it differs (beyond
    `tol`) from a second call, or, with `layout_matters` (the sample holds a non-contiguous tensor),
    from the call on a contiguous copy."""
    try:
        cpu, second = again(False)
    except Exception:  # noqa: BLE001 - the same call raising now: its first answer is no reference either
        return "the CPU reference raises on a second call"
    if find_mismatch(second, first, tol) is not None:
        return "the CPU reference differs from itself on a second call"
    if not layout_matters or _aliases(cpu, second):
        return None
    try:
        _, third = again(True)
    except Exception:  # noqa: BLE001 - CPU rejects the contiguous copy: nothing to say of the first answer
        return None
    if find_mismatch(third, first, tol) is not None:
        return "the CPU reference differs from the same call on a contiguous copy of the sample"
    return None


class _Dtypes(TorchDispatchMode):
    """CPU, noting the dtype of every tensor an aten call takes or gives."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[torch.dtype] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.seen.update(t.dtype for t in tensors_of((args, kwargs, out)))
        return out


def computed_dtypes(call: Callable[[], Any]) -> set[torch.dtype]:
    """The dtypes of the tensors `call()` (a CPU reference) computes with, intermediates too: stft of
    float32 returning real pairs computes in complex64, which a backend claiming float32 alone lacks.
    Asked where the device failed (check_call), so its passes pay nothing, and by out_variants in the
    one CPU call that sizes its outs."""
    mode = _Dtypes()
    try:
        with mode:
            call()
    except Exception:  # noqa: BLE001 - CPU rejects it now: what it computed so far is all there is
        pass
    return mode.seen


GUARD_BYTE = 0xA5  # the margins' pattern: an unlikely value in every dtype


def writes_outside(fn: Callable[..., Any], sample: Any) -> bool:
    """Whether CPU's `fn` on the sample writes outside its tensor arguments. Each strided CPU tensor
    is called from inside a buffer with a margin its own size (at least 64 elements) on both sides,
    filled with GUARD_BYTE; a margin changed after the call is a write out of bounds, which the
    margins kept off the heap. A call CPU rejects writes nothing here (the checks judge it)."""
    guards: list[tuple[torch.Tensor, int, int]] = []

    def place(x: Any) -> Any:
        if not (isinstance(x, torch.Tensor) and x.layout == torch.strided and x.device.type == "cpu"
                and x.numel() and not x.is_conj() and not x.is_neg()):
            return x
        span = 1 + sum((n - 1) * st for n, st in zip(x.shape, x.stride(), strict=True))
        margin = max(span, 64)
        buf = torch.empty(span + 2 * margin, dtype=x.dtype)
        buf.view(torch.uint8).fill_(GUARD_BYTE)
        inner = buf.as_strided(x.shape, x.stride(), margin)
        inner.copy_(x.detach())
        guards.append((buf, margin, span))
        return inner

    with torch.no_grad():
        try:
            guarded = transformed(sample, place)
            fn(guarded.input, *guarded.args, **guarded.kwargs)
        except Exception:  # noqa: BLE001 - rejected (or not placeable): not this question
            return False
    for buf, margin, span in guards:
        raw = buf.view(torch.uint8)
        size = buf.element_size()
        if bool((raw[: margin * size] != GUARD_BYTE).any()) or bool((raw[(margin + span) * size:] != GUARD_BYTE).any()):
            return True
    return False
