"""An explored sample as JSON, exactly: for the record, the corpus and repro scripts.

Floats travel as `float.hex` text, so -0.0, subnormals, NaN and infinities come back bit for bit
(a plain JSON number loses -0.0's sign in some readers and NaN in every strict one). A tensor is
{"tensor": {"dtype", "shape", "values", "requires_grad"}} (values in logical order), with "expand"
for a stride-0 expansion, "order" for dimensions stored in a permuted order and "conj"/"neg" for a
lazily conjugated or negated view (layout.py). A host operand (placement.py) is {"host": value}, or
{"host_view": value} for a 0-dim view at a storage offset (rebuilt by placement.host_view).
Decoding is for untrusted input (a corpus file, a record): only these shapes are accepted,
anything else raises `CodecError`, and nothing is executed or imported.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchcts.cases.explore.placement import host_view
from torchcts.cases.opinfo.samples import HostArg

# Larger samples are described, not stored (a shrunk sample is small; an original may not be).
MAX_ELEMENTS = 4096


MEMORY_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")


class CodecError(ValueError):
    """The value cannot be encoded (an unsupported leaf, too large) or is not a valid encoding."""


def _num(x: float) -> str:
    return float(x).hex()


def _unnum(text: Any) -> float:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        raise CodecError(f"not a number: {type(text).__name__}")
    try:
        return float.fromhex(text) if text not in ("nan", "inf", "-inf") else float(text)
    except ValueError:
        raise CodecError(f"not a number: {text[:20]!r}") from None


def _dtype(name: Any) -> torch.dtype:
    dt = getattr(torch, str(name), None) if isinstance(name, str) and name.isidentifier() else None
    if not isinstance(dt, torch.dtype):
        raise CodecError(f"not a dtype: {str(name)[:20]!r}")
    return dt


def encode(x: Any, budget: list[int] | None = None) -> Any:
    """A JSON-able form of a sample leaf or container; CodecError when it cannot be stored."""
    budget = budget if budget is not None else [MAX_ELEMENTS]
    if isinstance(x, HostArg):  # a 0-dim view at an offset (placement.host_view) is rebuilt as one
        view = x.value.dim() == 0 and x.value.storage_offset() > 0
        return {"host_view" if view else "host": encode(x.value.detach().clone() if view else x.value, budget)}
    if isinstance(x, torch.Tensor):
        if x.layout != torch.strided or x.device.type == "meta":
            raise CodecError(f"a {x.layout} tensor on {x.device.type} is not stored")
        zero = [st == 0 and n > 1 for st, n in zip(x.stride(), x.shape, strict=True)]
        if any(zero):  # an expanded operand (layout.py): its slice, and the expansion
            base = x.detach()[tuple(slice(0, 1) if z else slice(None) for z in zero)].contiguous()
            return {"tensor": {**encode(base, budget)["tensor"], "expand": list(x.shape)}}
        budget[0] -= x.numel()
        if budget[0] < 0:
            raise CodecError(f"more than {MAX_ELEMENTS} elements")
        flat = x.detach().resolve_conj().resolve_neg().reshape(-1).cpu()
        if x.is_complex():
            values: list[Any] = [[_num(v.real), _num(v.imag)] for v in flat.tolist()]
        elif x.is_floating_point():
            values = [_num(v) for v in flat.double().tolist()]
        else:
            values = flat.tolist()
        body = {"dtype": str(x.dtype).removeprefix("torch."), "shape": list(x.shape), "values": values,
                "requires_grad": bool(x.requires_grad)}
        order = memory_order(x)
        bits = {k: True for k, on in (("conj", x.is_conj()), ("neg", x.is_neg())) if on}
        if len(bits) > 1:
            raise CodecError("a tensor both conjugated and negated lazily is not stored")
        return {"tensor": {**body, **({"order": order} if order is not None else {}), **bits}}
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        return {"float": _num(x)}
    if isinstance(x, complex):
        return {"complex": [_num(x.real), _num(x.imag)]}
    if isinstance(x, torch.dtype):
        return {"dtype": str(x).removeprefix("torch.")}
    if isinstance(x, torch.memory_format):
        return {"memory_format": str(x).removeprefix("torch.")}
    if isinstance(x, torch.device):
        return {"device": x.type}
    if isinstance(x, list):
        return [encode(v, budget) for v in x]
    if isinstance(x, tuple) and (type(x) is tuple or isinstance(x, torch.Size)):
        return {"tuple": [encode(v, budget) for v in x]}
    raise CodecError(f"a {type(x).__name__} argument is not stored")


def decode(x: Any) -> Any:
    """The value `encode` gave `x` for, on CPU; CodecError on anything else."""
    if x is None or isinstance(x, (bool, str, int)):
        return x
    if isinstance(x, list):
        return [decode(v) for v in x]
    if not isinstance(x, dict) or len(x) != 1:
        raise CodecError(f"not an encoded value: {type(x).__name__}")
    [(tag, body)] = x.items()
    if tag == "tensor":
        return _lazy_bits(_ordered(_expanded(_tensor(body), body), body), body)
    if tag == "float":
        return _unnum(body)
    if tag == "complex" and isinstance(body, list) and len(body) == 2:
        return complex(_unnum(body[0]), _unnum(body[1]))
    if tag == "dtype":
        return _dtype(body)
    if tag == "memory_format" and body in MEMORY_FORMATS:
        return getattr(torch, body)
    if tag == "device" and isinstance(body, str):
        return torch.device("cpu")  # copy_sample points a device argument at the device under test
    if tag == "tuple" and isinstance(body, list):
        return tuple(decode(v) for v in body)
    if tag == "host":
        return HostArg(decode(body))
    if tag == "host_view":
        value = decode(body)
        if not isinstance(value, torch.Tensor) or value.dim() != 0:
            raise CodecError("a host view must be a 0-dim tensor")
        return HostArg(host_view(value))
    raise CodecError(f"unknown encoding {str(tag)[:20]!r}")


def _tensor(body: Any) -> torch.Tensor:
    if not isinstance(body, dict):
        raise CodecError("a tensor encoding is not an object")
    dtype = _dtype(body.get("dtype"))
    shape = body.get("shape")
    values = body.get("values")
    if not isinstance(shape, list) or not all(isinstance(s, int) and 0 <= s for s in shape) or not isinstance(values, list):
        raise CodecError("a tensor encoding needs a shape of sizes and a list of values")
    if math.prod(shape) != len(values) or len(values) > MAX_ELEMENTS:
        raise CodecError(f"a tensor of shape {shape[:8]} with {len(values)} values")
    if dtype.is_complex:
        if not all(isinstance(v, list) and len(v) == 2 for v in values):
            raise CodecError("complex values must be [real, imag] pairs")
        data = torch.tensor([complex(_unnum(r), _unnum(i)) for r, i in values], dtype=torch.complex128)
    elif dtype.is_floating_point:
        data = torch.tensor([_unnum(v) for v in values], dtype=torch.float64)
    else:
        if not all(isinstance(v, (int, bool)) for v in values):
            raise CodecError("integer and bool values must be integers")
        data = torch.tensor(values, dtype=torch.int64 if dtype != torch.bool else torch.bool)
    out = data.to(dtype).reshape(shape)
    if body.get("requires_grad") is True and (dtype.is_floating_point or dtype.is_complex):
        out.requires_grad_(True)
    return out


def _expanded(t: torch.Tensor, body: dict[str, Any]) -> torch.Tensor:
    """`t` expanded to the tensor encoding's `expand` shape (stride 0 where t has size 1), if it has one."""
    shape = body.get("expand")
    if shape is None:
        return t
    if not isinstance(shape, list) or len(shape) != t.dim() or not all(
            isinstance(s, int) and not isinstance(s, bool) and (s == n or n == 1) and 0 <= s <= MAX_ELEMENTS
            for s, n in zip(shape, t.shape, strict=True)):
        raise CodecError(f"a tensor of shape {list(t.shape)[:8]} cannot expand to {str(shape)[:40]}")
    return t.expand(shape)


def memory_order(x: torch.Tensor) -> list[int] | None:
    """The order of x's dimensions in memory, slowest first, when x is dense in a permuted order
    (layout.py: reversed_memory); None for a contiguous tensor or any other layout."""
    if x.dim() < 2 or x.is_contiguous():
        return None
    order = sorted(range(x.dim()), key=lambda d: (-x.stride(d), d))
    return order if x.permute(order).is_contiguous() else None


def _ordered(t: torch.Tensor, body: dict[str, Any]) -> torch.Tensor:
    """`t` (contiguous) stored in the tensor encoding's `order` of dimensions, if it has one."""
    order = body.get("order")
    if order is None:
        return t
    if not isinstance(order, list) or sorted(order) != list(range(t.dim())) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in order) or t.stride(0) == 0:
        raise CodecError(f"a tensor of rank {t.dim()} cannot be stored in the order {str(order)[:40]}")
    inverse = [order.index(d) for d in range(t.dim())]
    return t.permute(order).contiguous().permute(inverse)


def _lazy_bits(t: torch.Tensor, body: dict[str, Any]) -> torch.Tensor:
    """`t`'s values as a lazily conjugated ("conj") or negated ("neg") view, as the encoding says."""
    conj, neg = body.get("conj", False), body.get("neg", False)
    if conj not in (True, False) or neg not in (True, False) or (conj and not t.is_complex()) or (
            neg and not (t.is_floating_point() or t.is_complex())) or (conj and neg) or ((conj or neg) and t.requires_grad):
        raise CodecError("a conj or neg bit on a tensor that cannot hold it")
    if conj:
        return t.conj().resolve_conj().conj()
    return torch._neg_view(t.neg()) if neg else t


def encode_sample(sample: Any) -> dict[str, Any]:
    """{"input", "args", "kwargs"} of a SampleInput, encoded; CodecError when it cannot be stored."""
    budget = [MAX_ELEMENTS]
    return {"input": encode(sample.input, budget), "args": [encode(a, budget) for a in sample.args],
            "kwargs": {str(k): encode(v, budget) for k, v in sample.kwargs.items()}}


def decode_sample(data: Any, like: Any = None) -> Any:
    """A SampleInput from `encode_sample`'s form (`like`: a sample whose output_process_fn_grad
    and broadcasts_input it keeps)."""
    from torch.testing._internal.opinfo.core import SampleInput

    if not isinstance(data, dict) or not isinstance(data.get("args"), list) or not isinstance(data.get("kwargs"), dict):
        raise CodecError("an encoded sample needs input, args and kwargs")
    sample = SampleInput(decode(data.get("input")), args=tuple(decode(a) for a in data["args"]),
                         kwargs={str(k): decode(v) for k, v in data["kwargs"].items()})
    if like is not None:
        sample.output_process_fn_grad = like.output_process_fn_grad
        sample.broadcasts_input = like.broadcasts_input
    return sample
