"""Planted faults that prove each input axis against its own class (issue 50 item 2).

Every exploration axis (cases/explore/: placement, layout, memory order, ...) and the transfers suite
exist because a backend's bug sits in *what* a call is given (a host scalar, a permuted or offset
tensor) or *how* data is copied (blocking or not, to or from the device), not in its values. Each
fault here is one such bug, wrong only in its axis's situation and right beside it, so that a plain
`torchcts run --device sim --manifest torchcts:sim/manifest.py --op OP` catches it through that
axis's case alone while every other case of the op passes (tests/explore/test_axis_faults.py).
`Fault.axis` names the axis and `catches` the one case id meant to catch it.

Placement faults read the hooked call's host tensors from `tensor.HOST_TENSORS` (CPU 0-dim tensors
beside sim tensors; a Python number reaches an op as a number, never as a tensor), so the same op
with the operand on the device, or as a number, is right.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.sim import tensor
from torchcts.sim.fault_model import Fault, on_op

aten = torch.ops.aten


def _host_scalar(x: Any, *dtypes: torch.dtype) -> bool:
    """A CPU 0-dim tensor beside the call's sim tensors, of one of `dtypes` (any floating one if none)."""
    return (isinstance(x, torch.Tensor) and id(x) in tensor.HOST_TENSORS and x.dim() == 0
            and (x.dtype in dtypes if dtypes else x.is_floating_point()))


# --- placement: host 0-dim operands -------------------------------------------------------------

@on_op("add")
def _add_host_float64_as_float32(func, args, kwargs, call):
    """float64 add stages a host 0-dim float64 operand through its float32 scalar slot (a kernel-argument
    ABI without doubles): values beyond float32's range become inf, below it 0, the rest lose 29 bits.
    The operand on the device, or as a Python number (a double argument), is right."""
    if func is not aten.add.Tensor or len(args) < 2:
        return call(*args, **kwargs)
    staged = [a.to(torch.float32).to(a.dtype) if _host_scalar(a, torch.float64) else a for a in args[:2]]
    return call(*staged, *args[2:], **kwargs)


@on_op("remainder")
def _remainder_host_divisor_sign_lost(func, args, kwargs, call):
    """float64 remainder with a host 0-dim divisor computes through its magnitude (fmod by |b|, then
    the sign fix-up reads the device operand's sign only): remainder(x, -7) is remainder(x, 7), where
    the result must take the divisor's sign. A device divisor, or a Python number, is right."""
    if func is not aten.remainder.Tensor or len(args) < 2 or not _host_scalar(args[1], torch.float64):
        return call(*args, **kwargs)
    return call(args[0], args[1].abs(), *args[2:], **kwargs)


@on_op("xlogy")
def _xlogy_host_operand_as_int(func, args, kwargs, call):
    """float64 xlogy reads a host 0-dim `other` through the integer path of its scalar argument (C++
    `Scalar::toLong`): xlogy(x, 3.17) computes x * log(3). A device operand, or a Python number
    (`xlogy.Scalar_Other`), is right."""
    if func is not aten.xlogy.Tensor or len(args) < 2 or not _host_scalar(args[1], torch.float64):
        return call(*args, **kwargs)
    return call(args[0], args[1].trunc(), *args[2:], **kwargs)


@on_op("mul", "mul_")
def _mul_host_view_reads_storage_start(func, args, kwargs, call):
    """float32 mul binds a host 0-dim operand's storage, not the view: a CPU scalar tensor that is a view
    at a storage offset (`cpu_t[1]`) is read at element 0 of its storage (pytorch/pytorch#187117, MPS).
    A fresh host scalar, a device operand or a Python number is right."""
    if func not in (aten.mul.Tensor, aten.mul_.Tensor, aten.mul.out) or len(args) < 2:
        return call(*args, **kwargs)  # every form of the one kernel: the agree kind sees no difference
    moved = [torch.as_strided(a, (), (), 0) if _host_scalar(a, torch.float32) and a.storage_offset() else a
             for a in args[:2]]
    return call(*moved, *args[2:], **kwargs)


# --- transfers: copies between the host and the device --------------------------------------------

def _non_blocking(func: Any, args: tuple, kwargs: dict) -> bool:
    if func is aten.copy_.default:
        return bool(kwargs.get("non_blocking", args[2] if len(args) > 2 else False))
    return bool(kwargs.get("non_blocking", False))


@on_op("_to_copy")
def _d2h_non_blocking_drops_offset(func, args, kwargs, call):
    """A non_blocking copy from the device (to the host) hands the DMA queue the source's storage
    pointer without its storage offset: it copies from the storage's first element. A blocking copy,
    a host-to-device one, or a device view at offset 0 is right."""
    src = args[0] if args else None
    if (func is not aten._to_copy.default or not _non_blocking(func, args, kwargs) or not isinstance(src, torch.Tensor)
            or id(src) in tensor.HOST_TENSORS or src.storage_offset() == 0):
        return call(*args, **kwargs)
    return call(torch.as_strided(src, src.shape, src.stride(), 0), *args[1:], **kwargs)


@on_op("copy_")
def _copy_to_host_drops_offset(func, args, kwargs, call):
    """A blocking `copy_` from the device into a host tensor (a synchronous buffer read) passes the
    source's buffer without the view's storage offset: it reads from the storage's first element. The
    non_blocking path (staged), `.cpu()` (`_to_copy`) and an upload are right."""
    if (func is not aten.copy_.default or len(args) < 2 or _non_blocking(func, args, kwargs)
            or id(args[0]) not in tensor.HOST_TENSORS or id(args[1]) in tensor.HOST_TENSORS
            or args[1].storage_offset() == 0):
        return call(*args, **kwargs)
    src = args[1]
    return call(args[0], torch.as_strided(src, src.shape, src.stride(), 0), *args[2:], **kwargs)


def _contiguous_read(src: torch.Tensor) -> torch.Tensor | None:
    """src's numel elements read in memory order from its offset (a memcpy), where that stays in its storage."""
    end = src.storage_offset() + src.numel()
    if src.is_contiguous() or src.numel() < 2 or end * src.element_size() > src.untyped_storage().nbytes():
        return None
    return torch.as_strided(src, src.shape, torch.empty(src.shape, device="meta").stride(), src.storage_offset())


@on_op("_to_copy", "copy_")
def _h2d_non_blocking_strided_as_contiguous(func, args, kwargs, call):
    """A non_blocking host-to-device copy of a strided (non-contiguous) host tensor goes through the
    pinned staging path, a memcpy of numel elements from its data pointer: the offset is kept, the
    strides are not. Blocking copies (an element-wise strided copy) and contiguous sources are right."""
    at = 1 if func is aten.copy_.default else 0
    src = args[at] if len(args) > at else None
    if (func not in (aten._to_copy.default, aten.copy_.default) or not _non_blocking(func, args, kwargs)
            or not isinstance(src, torch.Tensor) or id(src) not in tensor.HOST_TENSORS):
        return call(*args, **kwargs)
    raw = _contiguous_read(src)
    return call(*args[:at], src if raw is None else raw, *args[at + 1:], **kwargs)


# --- layout: memory order of a non-elementwise op's input ----------------------------------------

def _dense_order(x: torch.Tensor) -> list[int] | None:
    """The dims from outermost to innermost in memory when x is dense but not contiguous (a permuted
    contiguous tensor), else None."""
    if x.is_contiguous() or x.dim() < 2 or x.numel() < 2:
        return None
    order = sorted(range(x.dim()), key=lambda d: (-x.stride(d), d))
    return order if x.permute(order).is_contiguous() else None


@on_op("argmax")
def _argmax_dense_memory_order(func, args, kwargs, call):
    """float32 argmax over the whole tensor takes its flat path for any dense input: for one stored
    with its dimensions permuted (a transposed matrix, a column-major copy) it returns the position
    of the maximum in memory, not its logical index. Contiguous and non-dense (sliced) inputs are right,
    and so is argmax along a dim."""
    x = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    flat = func in (aten.argmax.default, aten.argmax.out) and dim is None  # every form of the one kernel
    order = _dense_order(x) if flat and x.dtype == torch.float32 else None
    if order is None:
        return call(*args, **kwargs)
    return call(x.permute(order), *args[1:], **kwargs)


def _axis(name: str, description: str, axis: str, install: Callable[[], None], op: str, dtype: str,
          case: str, suite: str = "opinfo", level: int = 2) -> Fault:
    # a plain --op run explores at the focused depth (up to 128 samples a case) in a fresh worker: more
    # than selftest's default 20 s a case on a loaded machine
    return Fault(name, description, suite, level, (case,), install, dtype=dtype, op=op, case_timeout=120, axis=axis)


FAULTS: tuple[Fault, ...] = (
    _axis("add_host_float64_as_float32", "float64 add stages a host 0-dim float64 operand through float32",
          "placement", _add_host_float64_as_float32, "add", "float64", "opinfo/add/float64/explore"),
    _axis("remainder_host_divisor_sign_lost", "float64 remainder by a host 0-dim divisor uses its magnitude "
          "(its sign lost)", "placement", _remainder_host_divisor_sign_lost, "remainder", "float64",
          "opinfo/remainder/float64/explore"),
    _axis("xlogy_host_operand_as_int", "float64 xlogy truncates a host 0-dim `other` to an integer", "placement",
          _xlogy_host_operand_as_int, "xlogy", "float64", "opinfo/xlogy/float64/explore"),
    _axis("mul_host_view_reads_storage_start", "float32 mul reads a host 0-dim view at its storage's start "
          "(the offset ignored)", "placement", _mul_host_view_reads_storage_start, "mul", "float32",
          "opinfo/mul/float32/explore"),
    _axis("d2h_non_blocking_drops_offset", "a non_blocking copy from the device ignores its source's storage offset",
          "transfers", _d2h_non_blocking_drops_offset, "_to_copy", "int64", "transfers/to_host/*",
          suite="transfers", level=3),
    _axis("h2d_non_blocking_strided_as_contiguous", "a non_blocking host-to-device copy of a strided source reads "
          "it as contiguous memory", "transfers", _h2d_non_blocking_strided_as_contiguous, "_to_copy", "float32",
          "transfers/to_device/*/non_blocking*", suite="transfers", level=3),
    _axis("copy_to_host_drops_offset", "a blocking copy_ from a device view into a host tensor ignores its storage "
          "offset", "transfers", _copy_to_host_drops_offset, "copy_", "float32", "transfers/copy_into_host/*/blocking/*",
          suite="transfers", level=3),
    _axis("argmax_dense_memory_order", "float32 argmax of a dense permuted input returns the maximum's memory "
          "position", "memory order", _argmax_dense_memory_order, "argmax", "float32", "opinfo/argmax/float32/explore"),
)
