"""The input generator of the generated suite: arguments synthesised from an overload's schema.

Documented in docs/coverage.md ("Generated cases"). Small on purpose: an argument that has a
default keeps it; a required one gets a value from its type (and, where the type says too little,
its name). Inputs are tried as a short list of *profiles* (a shape for every data tensor, and
whether index-like tensors are int64), first the one most ops accept; the first profile the CPU
kernel accepts is the case's input, the same on every run (values come from a torch.Generator
seeded by the overload name and the profile).

- Tensor: the profile's shape, the case's dtype; floating values in [0.1, 1.1) (inside the domain
  of log, sqrt, acos-ish ops' common part), integers in [0, 3), bools random. An argument named
  like an index (INDEX_NAMES) is int64 in [0, 2) in the profiles that say so; `mask` is bool.
- out= tensors (`Tensor(a!) out`): empty, so the kernel resizes them; `indices`-like outs int64;
  further profiles try every out= as bool, int64, int32 (OUT_DTYPES).
- Optional without default: None (a size-like int[]? gets the size); Tensor[]: two tensors; Tensor?[] (indices): one int64 index.
- int: `dim` 0, `reduction` 0 (none), `groups` 1, else 1; `dtype` the case's dtype; `layout`
  strided; `memory_format` contiguous. int[] / SymInt[]: size-like names the tensor's shape,
  `stride` its contiguous strides, `dims` every dim, `dim` [0], padding 0, else 1 (fixed-size
  `int[N]` lists have N entries).
- float 0.5 (`eps` 1e-5), Scalar (number) 2 (`alpha`/`beta` 1), bool False, complex 1+1j,
  str from a short table of names (STRINGS), Device: the device the call runs on.
- Anything else (Generator, Storage, Stream, Dimname, TorchScript types, an unknown required
  string): the generator cannot make it, and the overload gets no case (`unsupported`).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import torch

from torchcts.cases import overloads

SHAPES: tuple[tuple[int, ...], ...] = ((3, 3), (2, 3, 3), (1, 2, 3, 3), (3,), (1, 2, 3, 3, 3), ())
INDEX_NAMES = frozenset({
    "index", "indices", "target", "offsets", "lengths", "batch_sizes", "repeats", "counts",
    "input_lengths", "target_lengths", "per_sample_weights_idx", "segment_ids", "indices_or_sections",
})
INDEX_OUTS = frozenset({"indices", "argmax", "max_indices", "min_indices", "inverse", "counts", "index"})
SIZE_NAMES = frozenset({"size", "sizes", "shape", "output_size", "input_size", "self_sizes", "input_sizes",
                        "sym_sizes", "out_size", "grad_input_size"})
# out= dtypes tried after the case's own (comparisons, argmax-likes, int32 counts).
OUT_DTYPES = ("bool", "int64", "int32")
STRINGS: dict[str, str] = {
    "reduce": "sum", "approximate": "none", "rounding_mode": "floor", "padding": "valid", "indexing": "ij",
    "UPLO": "L", "interpolation": "linear", "side": "left", "padding_mode": "zeros", "ord": "fro",
}
class Unsupported(Exception):
    """The generator cannot make a value of this argument's type: no case for the overload."""


@dataclass(frozen=True)
class Profile:
    shape: tuple[int, ...]
    int_index: bool  # index-like tensors are int64 (else the case's dtype)
    out_dtype: str | None = None  # out= tensors of this dtype (else the case's, int64 for indices)

    def describe(self) -> str:
        return (f"shape {list(self.shape)}" + (", int64 indices" if self.int_index else "")
                + (f", {self.out_dtype} out" if self.out_dtype else ""))


def unsupported(schema: Any) -> str | None:
    """Why the generator cannot build this overload's arguments, or None when it can."""
    for arg in schema.arguments:
        if arg.has_default_value():
            continue
        try:
            _check_type(arg)
        except Unsupported as exc:
            return f"argument {arg.name}: {exc}"
    return None


def _check_type(arg: Any) -> None:
    text = str(arg.type)
    if text in ("Tensor", "int", "float", "bool", "number", "complex", "Device") or text.startswith("Optional["):
        return
    if text == "str":
        if arg.name not in STRINGS:
            raise Unsupported(f"no value for a required str named {arg.name!r}")
        return
    if text in ("List[int]", "List[float]", "List[bool]", "List[Tensor]", "List[Optional[Tensor]]", "List[number]"):
        return
    raise Unsupported(f"type {text} has no generator")


def profiles(schema: Any) -> list[Profile]:
    """The inputs to try, most widely accepted first."""
    has_index = any(arg.name in INDEX_NAMES for arg in schema.arguments)
    modes = (False, True) if has_index else (False,)
    outs = (None, *OUT_DTYPES) if any(arg.is_out for arg in schema.arguments) else (None,)
    return [Profile(shape, m, o) for shape in SHAPES for o in outs for m in modes]


def seed_of(overload: str, k: int) -> int:
    return zlib.crc32(f"{overload}#{k}".encode()) & 0x7FFFFFFF


class _Maker:
    def __init__(self, overload: str, k: int, dtype: torch.dtype, profile: Profile) -> None:
        self.gen = torch.Generator().manual_seed(seed_of(overload, k))
        self.dtype, self.profile = dtype, profile

    def tensor(self, shape: tuple[int, ...], dtype: torch.dtype, high: int = 3) -> torch.Tensor:
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=self.gen).bool()
        if dtype.is_floating_point:
            return (torch.rand(shape, generator=self.gen, dtype=torch.float64) + 0.1).to(dtype)
        if dtype.is_complex:
            real = torch.rand((*shape, 2), generator=self.gen, dtype=torch.float64) + 0.1
            return torch.view_as_complex(real).to(dtype)
        return torch.randint(0, high, shape, generator=self.gen).to(dtype)

    def data(self, name: str) -> torch.Tensor:
        if name == "mask":
            return self.tensor(self.profile.shape, torch.bool)
        if self.profile.int_index and name in INDEX_NAMES:
            return self.tensor(self.profile.shape, torch.int64, high=2)
        return self.tensor(self.profile.shape, self.dtype)

    def out(self, name: str) -> torch.Tensor:
        if self.profile.out_dtype:
            return torch.empty(0, dtype=getattr(torch, self.profile.out_dtype))
        return torch.empty(0, dtype=torch.int64 if name in INDEX_OUTS else self.dtype)


def _int_list(arg: Any, shape: tuple[int, ...]) -> list[int]:
    name, n = arg.name, arg.N
    if name in SIZE_NAMES:
        sizes = list(shape) if n is None else ([2] * n + list(shape))[-n:]
        return sizes
    if name == "stride":
        return list(torch.empty(shape).stride()) if n is None else [1] * n
    if name in ("dims", "perm"):
        return list(range(len(shape)))
    if name == "dim":
        return [0] if shape else []
    fill = 0 if "padding" in name else 1
    return [fill] * (n if n is not None else 1)


def _scalar(arg: Any, dtype: torch.dtype) -> Any:
    text, name = str(arg.type), arg.name
    if text == "int":
        if name == "dtype":
            return dtype
        if name == "layout":
            return torch.strided
        if name == "memory_format":
            return torch.contiguous_format
        return 0 if name in ("dim", "reduction", "diagonal", "offset", "start", "ignore_index") else 1
    if text == "float":
        return 1e-5 if name == "eps" else 0.5
    if text == "number":
        return 1 if name in ("alpha", "beta") else 2
    if text == "bool":
        return False
    if text == "complex":
        return complex(1, 1)
    if text == "str":
        return STRINGS[name]
    raise Unsupported(text)


def build_args(schema: Any, overload: str, k: int, dtype: torch.dtype, profile: Profile,
               device: torch.device | str) -> tuple[list[Any], dict[str, Any]]:
    """Positional args and kwargs of one call, on CPU (the Device arguments name `device`); an
    argument with a default keeps it (overloads.build_args places the others)."""
    make = _Maker(overload, k, dtype, profile)

    def value(arg: Any, dev: torch.device | str) -> Any:
        if arg.has_default_value():
            raise KeyError(arg.name)  # omitted: the default applies
        return _value(arg, make, profile, dtype, dev)

    return overloads.build_args(schema, value, device)


def _value(arg: Any, make: _Maker, profile: Profile, dtype: torch.dtype, device: torch.device | str) -> Any:
    text = str(arg.type)
    if text == "Optional[List[int]]" and arg.name in SIZE_NAMES:  # upsample's .vec: a size, no scales
        return _int_list(arg, profile.shape)
    if text.startswith("Optional["):
        return None
    if text == "Tensor":
        return make.out(arg.name) if arg.is_out else make.data(arg.name)
    if text == "Device":
        return device
    if text == "List[Tensor]":
        if arg.is_out:
            return [make.out(arg.name), make.out(arg.name)]
        return [make.data(arg.name), make.data(arg.name)]
    if text == "List[Optional[Tensor]]":
        return [make.tensor((2,), torch.int64, high=2)]
    if text == "List[int]":
        return _int_list(arg, profile.shape)
    if text == "List[float]":
        return [0.5] * (arg.N or 1)
    if text == "List[bool]":
        return [True] * (arg.N or 1)
    if text == "List[number]":
        return [2, 2]
    return _scalar(arg, dtype)
