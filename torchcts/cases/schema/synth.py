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
from torchcts.cases.schema import recipes

SHAPES: tuple[tuple[int, ...], ...] = ((3, 3), (2, 3, 3), (1, 2, 3, 3), (3,), (1, 2, 3, 3, 3), ())
INDEX_NAMES = frozenset({
    "index", "indices", "target", "offsets", "lengths", "batch_sizes", "repeats", "counts",
    "input_lengths", "target_lengths", "per_sample_weights_idx", "segment_ids", "indices_or_sections",
})
INDEX_OUTS = frozenset({"indices", "argmax", "max_indices", "min_indices", "inverse", "counts", "index"})
SIZE_NAMES = frozenset({"size", "sizes", "shape", "output_size", "input_size", "self_sizes", "input_sizes",
                        "sym_sizes", "out_size", "grad_input_size"})
# out= dtypes tried after the case's own: "like" (each out the dtype of the functional sibling's
# result in its place: values and indices, a sign and a log-abs, a result and an int32 info), then
# one dtype for every out (comparisons, argmax-likes, int32 counts).
OUT_DTYPES = ("like", "bool", "int64", "int32")
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
    recipe: str = ""  # a family recipe's name (recipes.py): its arguments win

    def describe(self) -> str:
        return ((f"recipe {self.recipe}, " if self.recipe else "") + f"shape {list(self.shape)}"
                + (", int64 indices" if self.int_index else "")
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
    """The inputs to try, most widely accepted first: a family recipe's (recipes.py), then the generic ones."""
    has_index = any(arg.name in INDEX_NAMES for arg in schema.arguments)
    modes = (False, True) if has_index else (False,)
    outs = (None, *OUT_DTYPES) if any(arg.is_out for arg in schema.arguments) else (None,)
    recipe = recipes.recipe_for(schema.name.removeprefix("aten::"))
    first = [Profile(recipe.shape, True, o, recipe.name) for o in outs] if recipe else []
    return first + [Profile(shape, m, o) for shape in SHAPES for o in outs for m in modes]


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
        if name in ("mask", "condition"):
            return self.tensor(self.profile.shape, torch.bool)
        if self.profile.int_index and name in INDEX_NAMES:
            return self.tensor(self.profile.shape, torch.int64, high=2)
        return self.tensor(self.profile.shape, self.dtype)

    def out(self, name: str) -> torch.Tensor:
        if self.profile.out_dtype and self.profile.out_dtype != "like":
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
    made: dict[str, Any] = {}

    recipe = recipes.by_name(profile.recipe) if profile.recipe else None

    def value(arg: Any, dev: torch.device | str) -> Any:
        if recipe is not None and arg.name in recipe.args:  # a recipe's value wins, even over a default
            made[arg.name] = _from_recipe(recipe.args[arg.name], arg, make, recipe)
        elif arg.has_default_value():
            raise KeyError(arg.name)  # omitted: the default applies
        else:
            made[arg.name] = _value(arg, make, profile, dtype, dev)
        return made[arg.name]

    args, kwargs = overloads.build_args(schema, value, device)
    if profile.out_dtype != "like":
        return args, kwargs
    outs = _outs_like_sibling(schema, made)
    if outs is None:
        return args, kwargs
    return overloads.build_args(schema, lambda arg, _dev: outs[arg.name] if arg.name in outs else _made(made, arg),
                                device)


def _made(made: dict[str, Any], arg: Any) -> Any:
    if arg.name not in made:
        raise KeyError(arg.name)
    return made[arg.name]


def sibling_of(schema: Any) -> Any:
    """The functional overload of an out= overload's packet taking exactly its other arguments (by
    name) and returning one tensor per out argument, or None."""
    packet = getattr(torch.ops.aten, schema.name.removeprefix("aten::"), None)
    outs = [a for a in schema.arguments if a.is_out]
    names = [a.name for a in schema.arguments if not a.is_out]
    for name in (packet.overloads() if packet is not None else ()):
        other = getattr(packet, name)._schema
        if (not any(a.is_out for a in other.arguments) and [a.name for a in other.arguments] == names
                and len(other.returns) == len(outs)):
            return getattr(packet, name)
    return None


def _outs_like_sibling(schema: Any, made: dict[str, Any]) -> dict[str, Any] | None:
    """Each out= argument -> a zero tensor (list) of the shape and dtype of the functional sibling's CPU
    result in its place; None when there is no sibling or CPU rejects its call."""
    sibling = sibling_of(schema)
    if sibling is None:
        return None
    try:
        with torch.no_grad():
            args, kwargs = overloads.build_args(sibling._schema, lambda arg, _dev: _made(made, arg), "cpu")
            result = sibling(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the out= call's own profiles say what CPU accepts
        return None
    results = result if isinstance(result, tuple) else (result,)

    def empty(like: Any) -> Any:
        if isinstance(like, torch.Tensor):  # sized (some kernels never resize), zeros: never uninitialised
            return torch.zeros(like.shape, dtype=like.dtype)
        return [empty(t) for t in like] if isinstance(like, list) else None

    return {a.name: empty(r) for a, r in zip([a for a in schema.arguments if a.is_out], results, strict=False)}


def _from_recipe(spec: Any, arg: Any, make: _Maker, recipe: recipes.Recipe) -> Any:
    if isinstance(spec, recipes.T):
        dtype = getattr(torch, spec.dtype) if spec.dtype else make.dtype
        if spec.values is not None:
            return torch.tensor(spec.values, dtype=dtype)
        if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
            return make.tensor(spec.shape, dtype)
        return torch.randint(spec.low, spec.high, spec.shape, generator=make.gen).to(dtype)
    if isinstance(spec, list) and str(arg.type) == "Tensor":  # lengths given as a list, taken as a tensor
        return torch.tensor(spec, dtype=torch.int64)
    if isinstance(spec, (int, float)) and not isinstance(spec, bool) and str(arg.type) in ("Tensor", "Optional[Tensor]"):
        # a bound given as a number, to a Tensor overload: 0-dim (int64, or the case's dtype for a float)
        return torch.tensor(spec, dtype=torch.int64 if isinstance(spec, int) else make.dtype)
    if isinstance(spec, list):
        return [_from_recipe(v, arg, make, recipe) if isinstance(v, recipes.T) else v for v in spec]
    if isinstance(spec, int) and not isinstance(spec, bool) and str(arg.type) in ("List[int]", "Optional[List[int]]"):
        return [spec] * (arg.N or recipe.spatial)
    return spec


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
