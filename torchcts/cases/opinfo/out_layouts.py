"""Where an out= result goes: destinations other than a fresh contiguous tensor (issue 39, class L2).

OpInfo's out= samples, and the out kind's zero-filled outs, are contiguous tensors of the right
size, so a kernel that writes its result in memory order into a transposed destination
(pytorch/pytorch#100764, MPS `neg(x, out=y.t())`), ignores a destination's storage offset, or
mishandles the resize of a destination of the wrong size passes them. The out kind's first checked
sample is therefore called once more into each of these destinations, zero-filled, made the same way
on CPU and on the device (the device copy keeps the whole storage, so strides, offset and the
memory around the view are the same):

- `strided`: a transposed tensor (its last two dimensions swapped in memory) where both are > 1,
  else every second element along a dimension of size > 1;
- `offset`: a contiguous view that starts 3 elements into its storage;
- `resized`: a tensor of 1 element (3 when the result has one), which out= must resize.

What the device wrote is compared with what CPU wrote into the same destination, and the memory of
the storage outside the view must stay as it was (zeros) on both. A destination CPU refuses, and a
resized one CPU itself leaves partly unwritten (fresh memory, whose values are undefined), is
skipped and counted in the record (`info.out_layouts`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.observe import unobserved
from torchcts.cases.opinfo.copier import over_storage
from torchcts.oracle.compare import Mismatch, OracleMismatch, assert_matches, find_mismatch
from torchcts.oracle.tolerances import Tolerance

LAYOUTS = ("strided", "offset", "resized")
OFFSET = 3


def destination(like: torch.Tensor, layout: str) -> torch.Tensor | None:
    """A zero-filled CPU tensor to receive a result shaped like `like`, in `layout`; None where the
    layout cannot be made for that shape (an empty result, or a strided one with no dimension > 1)."""
    if like.numel() == 0:
        return None
    shape, dtype = list(like.shape), like.dtype
    if layout == "offset":
        return torch.zeros(like.numel() + OFFSET, dtype=dtype)[OFFSET:].view(shape)
    if layout == "resized":
        return torch.zeros(3 if like.numel() == 1 else 1, dtype=dtype)
    if layout != "strided":
        raise ValueError(f"unknown out= layout {layout!r}")
    if like.dim() >= 2 and shape[-1] > 1 and shape[-2] > 1:
        return torch.zeros([*shape[:-2], shape[-1], shape[-2]], dtype=dtype).transpose(-1, -2)
    wide = [d for d in range(like.dim()) if shape[d] > 1]
    if not wide:
        return None
    d = wide[-1]
    return torch.zeros([*shape[:d], 2 * shape[d], *shape[d + 1:]], dtype=dtype)[(slice(None),) * d + (slice(None, None, 2),)]


@unobserved()
def destinations(expected: Any, layout: str) -> Any:
    """`destination` for each tensor of a result (a tensor, or a tuple/list of tensors); None where any
    cannot be made."""
    if isinstance(expected, torch.Tensor):
        return destination(expected, layout)
    made = [destination(t, layout) for t in expected]
    return None if any(t is None for t in made) else tuple(made)


def storage_elements(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes() // t.element_size()


@unobserved()
def on_device(cpu: Any, device: torch.device | str) -> Any:
    """The destination(s) on the device, each over a copy of its whole storage (copier.over_storage,
    which the repro script runs too)."""
    return over_storage(cpu, device) if isinstance(cpu, torch.Tensor) else tuple(over_storage(t, device) for t in cpu)


@unobserved()
def outside(t: torch.Tensor, elements: int) -> torch.Tensor:
    """The first `elements` elements of t's storage that are not in the view t (on the host)."""
    flat = t.detach().as_strided((elements,), (1,), 0).cpu()
    inside = torch.zeros(elements, dtype=torch.bool)
    inside.as_strided(t.shape, t.stride(), t.storage_offset()).fill_(True)
    return flat[~inside]


def each(obj: Any) -> list[torch.Tensor]:
    return [obj] if isinstance(obj, torch.Tensor) else list(obj)


def check(expected: Any, device: torch.device | str, returns_out: bool, info: dict[str, Any], *,
          cpu: Callable[[Any], Any], zeros: Callable[[], Any], device_call: Callable[[Any], Any],
          written: Callable[[Any, Any], None]) -> None:
    """One sample's out= call into each destination of LAYOUTS not yet checked on an earlier sample:
    `cpu(out)` calls CPU (raising where it rejects the sample), `device_call(out)` the device,
    `written(got, want)` compares what each wrote (the case's oracle); `zeros()` makes contiguous
    zero-filled outs. `info["out_layouts"]` keeps which sample checked each destination and why the
    others were skipped; while one runs, `info["out_layout"]` names it (a failure keeps it, for the
    repro script)."""
    done = info.setdefault("out_layouts", {"checked": {}, "skipped": {}})
    todo = [layout for layout in LAYOUTS if layout not in done["checked"]]
    if not todo:
        return
    zero_filled = None
    if "resized" in todo:  # what CPU writes into a contiguous out, against what it writes after a resize
        with unobserved():
            zero_filled = zeros()
        cpu(zero_filled)
    for layout in todo:
        fresh, cpu_out = destinations(expected, layout), destinations(expected, layout)
        if fresh is None:
            done["skipped"][layout] = "no such destination for the result's shape"
            continue
        try:
            with warnings.catch_warnings():  # a resized destination that had elements warns, on both sides
                warnings.simplefilter("ignore")
                cpu(cpu_out)
        except Exception as exc:  # noqa: BLE001 - CPU rejects this destination: nothing to compare with
            done["skipped"][layout] = f"CPU raises {type(exc).__name__}"
            continue
        if layout == "resized" and find_mismatch(cpu_out, zero_filled, Tolerance(0.0, 0.0)) is not None:
            done["skipped"][layout] = "CPU leaves elements of a resized destination unwritten"
            continue
        info["out_layout"] = layout
        out = on_device(fresh, device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = device_call(out)
        if returns_out and not is_out(result, out):
            raise OracleMismatch(Mismatch(f"out= into a {layout} destination did not return it",
                                          extra={"got": type(result).__name__}))
        try:
            written(out, cpu_out)
            if layout != "resized":
                _untouched_around(out, cpu_out)
        except OracleMismatch as exc:
            exc.mismatch.what = f"out= into a {layout} destination ({_describe(fresh)}): {exc.mismatch.what}"
            raise OracleMismatch(exc.mismatch) from None
        info.pop("out_layout")
        done["checked"][layout] = info.get("sample_index", 0)
        done["skipped"].pop(layout, None)


def _untouched_around(out: Any, cpu_out: Any) -> None:
    """The memory of each destination's storage outside its view is what CPU left there (zeros)."""
    for i, (got, want) in enumerate(zip(each(out), each(cpu_out), strict=True)):
        elements = storage_elements(want)  # the device's copy was made from a storage of that size
        try:
            assert_matches(outside(got, elements), outside(want, elements), Tolerance(0.0, 0.0))
        except OracleMismatch as exc:
            exc.mismatch.what = f"written outside the view (output {i}, the rest of its storage): {exc.mismatch.what}"
            raise OracleMismatch(exc.mismatch) from None


def _describe(fresh: Any) -> str:
    return "; ".join(f"shape {list(t.shape)}, strides {list(t.stride())}, offset {t.storage_offset()}"
                     for t in each(fresh))


def is_out(result: Any, out: Any) -> bool:
    if isinstance(out, torch.Tensor):
        return result is out
    return isinstance(result, (tuple, list)) and len(result) == len(out) and all(
        r is o for r, o in zip(result, out, strict=True))
