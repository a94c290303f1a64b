"""Switch points: the argument values at which an op's semantics change (docs/exploration.md).

A switch point is (where, value): `where` is a keyword name or the position of a positional
argument after the input. They come from three places, in this order:

1. the op's own points (op facts of kind `switch_points`, `own_switches`, extended with
   `add_switch_points`, e.g. from the backend module a manifest imports): kept first, so a few of
   them always fit in the budget, and in place of the points the rules below would derive for that
   argument;
2. the sample's own arguments by the type of their value: a bool flipped; an int at 0, 1, -1;
   a list of dims at [], [0], [-1], [0, -1] and a repeated dim; a float at 0, -0.0, 1, -1, 0.5,
   inf, nan; a string from `STRING_ENUMS` by the argument's name; a number, tensor or string
   argument also at None (an optional left out);
3. the aten schema of the op's overloads for the keywords the sample leaves at their default:
   `bool` both ways, `int?`/`float?`/`Tensor?` at None and at their points, `str?` from the table,
   `int[]` dims as above.

Values CPU rejects are dropped by the runner, so a point that does not fit an overload costs one
CPU call and nothing else.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch

from torchcts.oracle.opfacts import FACTS, Fact

Where = str | int  # a keyword name, or the index of a positional argument after the input
SwitchPoint = tuple[Where, Any]

# String arguments whose value selects an algorithm, by argument name (every value PyTorch accepts
# somewhere; an op that accepts fewer rejects the rest on CPU, and they are dropped).
STRING_ENUMS: dict[str, tuple[Any, ...]] = {
    "rounding_mode": (None, "trunc", "floor"),
    "reduce": ("sum", "prod", "mean", "amax", "amin", "add", "multiply"),
    "reduction": ("none", "mean", "sum"),
    "interpolation": ("linear", "lower", "higher", "midpoint", "nearest"),
    "side": ("left", "right"),
    "mode": ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area",
             "constant", "reflect", "replicate", "circular", "sum", "mean", "max"),
    "padding_mode": ("zeros", "border", "reflection", "reflect", "replicate", "circular"),
    "approximate": ("none", "tanh"),
    "norm": (None, "forward", "backward", "ortho"),
    "indexing": ("ij", "xy"),
    "padding": ("same", "valid"),
    "driver": (None, "gelsy", "gelsd", "gelss"),
    "UPLO": ("L", "U"),
}
# Numeric arguments whose value selects an algorithm (p-norms, orders).
NUMERIC_ENUMS: dict[str, tuple[Any, ...]] = {
    "p": (0, 1, 2, 0.5, 3, math.inf, -math.inf),
    "ord": (None, 1, 2, -1, -2, math.inf, -math.inf, "fro", "nuc"),
    "correction": (0, 1, 2),
    "diagonal": (0, 1, -1),
    "offset": (0, 1, -1),
    "decimals": (0, 1, -1),
}
DIM_LISTS: tuple[Any, ...] = ([], [0], [-1], [0, -1], [0, 0])
# An unnamed positional list may be a shape, not dims: CPU accepts the shape [0, -1] (its numel is
# 0) where it should refuse a negative size, so such a list never gets that point (no reference).
SHAPE_SAFE_LISTS: tuple[Any, ...] = ([], [0], [-1], [0, 0])
INTS: tuple[int, ...] = (0, 1, -1)


class AtSize(int):
    """An int argument's point that refers to the input: its size at the sample's dimension plus
    `offset` (`size`: a count at its end, such as kthvalue's k; `size-1`: the last valid index).
    generate.py's with_switches turns it into the sample's number."""

    def __new__(cls, offset: int) -> AtSize:
        return super().__new__(cls, offset)

    def __repr__(self) -> str:
        return "size" if int(self) == 0 else f"size{int(self):+d}"


# Points of an int argument that is not a dimension: both ends of what the input offers.
SIZE_POINTS: tuple[AtSize, ...] = (AtSize(0), AtSize(-1))
FLOATS: tuple[float, ...] = (0.0, -0.0, 1.0, -1.0, 0.5, math.inf, math.nan)
FINITE: tuple[float, ...] = FLOATS[:5]
# Float arguments that size an output (scale_factor, step, end...): finite points only, since
# an infinite one asks CPU for an output of unbounded size.
_SIZING = ("size", "scale", "factor", "step", "end", "start", "steps")


def _sizing(name: str) -> bool:
    return not name or any(word in name for word in _SIZING)

def own_switches(op: str) -> dict[Where, tuple[Any, ...]]:
    """The op's own points by argument (OpInfo name -> argument -> values, op facts of kind
    `switch_points`), tried before every other point of that op; they replace the points derived for
    that argument (an enum passed as an int, whose other values CPU does not check)."""
    merged: dict[Where, tuple[Any, ...]] = {}
    for fact in FACTS.find_all("switch_points", op):
        for where, values in fact.value.items():
            merged[where] = (*merged.get(where, ()), *values)
    return merged


def add_switch_points(op: str, where: Where, values: Iterable[Any], reason: str = "registered by the backend's "
                      "module (add_switch_points)") -> None:
    """Register an op's own switch points: `add_switch_points("nn.functional.gelu", "approximate",
    ["tanh"])`; `where` a keyword name or a positional index after the input."""
    FACTS.add(Fact("switch_points", (op,), reason, "add_switch_points", {where: tuple(values)}))


def by_value(where: Where, value: Any) -> tuple[Any, ...]:
    """The points of an argument given as `value` (its type decides; its name may refine)."""
    name = where if isinstance(where, str) else ""
    if name in STRING_ENUMS:
        return STRING_ENUMS[name]
    if name in NUMERIC_ENUMS:
        return NUMERIC_ENUMS[name]
    if isinstance(value, bool):
        return (not value,)
    if isinstance(value, int):
        return (*INTS, None) if "dim" in name else (*INTS, *SIZE_POINTS, None)
    if isinstance(value, float):
        return (*(FINITE if _sizing(name) else FLOATS), None)
    if isinstance(value, (list, tuple)) and value and all(_int(v) for v in value):
        if "dim" in name:
            return DIM_LISTS
        return (*(SHAPE_SAFE_LISTS if not name else ()), *_each_position(value)) if _sizes(name) else ()
    if isinstance(value, (list, tuple)) and value and all(_int(v) or v is None for v in value) and _sizes(name):
        return _each_position(value)  # an output size with None: that dimension kept (adaptive pooling)
    if value is None:
        return ()
    if isinstance(value, torch.Tensor):
        return (None,)
    return ()


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _sizes(name: str) -> bool:
    """A list argument that may hold sizes: unnamed (a positional shape or output size) or named so."""
    return not name or "size" in name or "shape" in name


def _each_position(value: list[Any] | tuple[Any, ...]) -> tuple[Any, ...]:
    """A size list with 1, then 0, at each position that holds a size (class L10: a dimension of one
    takes a kernel's degenerate path, one of zero an empty output), the list's own type kept."""
    points = []
    for k, v in enumerate(value):
        for size in (1, 0):
            if _int(v) and v != size:
                points.append(type(value)((*value[:k], size, *value[k + 1:])))
    return tuple(points)


def by_schema(type_text: str, name: str) -> tuple[Any, ...]:
    """The points of a keyword the sample does not pass, from its aten schema type."""
    if name in STRING_ENUMS:
        return STRING_ENUMS[name]
    if name in NUMERIC_ENUMS:
        return NUMERIC_ENUMS[name]
    optional = type_text.endswith("?")
    base = type_text.rstrip("?")
    if base == "bool":
        return (True, False)
    if base == "int":
        return INTS + (() if "dim" in name else SIZE_POINTS) + ((None,) if optional else ())
    if base.startswith("int[") or base == "SymInt[]":
        return DIM_LISTS if "dim" in name else ()
    if base in ("float", "Scalar", "number"):  # "number": a Scalar in TorchScript's type text
        return FINITE + ((None,) if optional else ())
    return ()


# Keywords never worth a switch: they move or allocate rather than compute, ask the kernel to skip
# the checks that keep CPU itself from reading out of bounds (`unsafe`), or turn a result sparse
# (`sparse_grad`, `sparse`: sparse layouts are a claim of their own, checked by the sparse cases).
_SKIPPED = frozenset({"out", "dtype", "layout", "device", "pin_memory", "memory_format", "generator", "self",
                      "input", "names", "requires_grad", "unsafe", "sparse_grad", "sparse"})


def _tensor_overloads(aten_name: str) -> Iterator[Any]:
    """The schemas of the op's overloads that take or return a tensor: TorchScript's scalar math
    (`acos.int(int a) -> float`) is not the op's tensor API."""
    packet = getattr(torch.ops.aten, aten_name, None)
    for overload in packet.overloads() if packet is not None else ():
        try:
            schema = getattr(packet, overload)._schema
        except (AttributeError, RuntimeError):
            continue
        if any("Tensor" in str(a.type) for a in (*schema.arguments, *schema.returns)):
            yield schema


@functools.cache
def positions(aten_name: str) -> dict[str, int]:
    """Each argument's position where an overload takes it positionally (the input is 0): a sample
    that already passes that many positional values gives it, so it is no keyword to add."""
    out: dict[str, int] = {}
    for schema in _tensor_overloads(aten_name):
        for i, arg in enumerate(schema.arguments):
            if not arg.kwarg_only:
                out[arg.name] = min(i, out.get(arg.name, i))
    return out


@functools.cache
def schema_keywords(aten_name: str) -> tuple[tuple[str, str], ...]:
    """(name, type) of every non-tensor argument of the op's tensor overloads, once per name.

    Overloads with no tensor among their arguments and returns are TorchScript's scalar math; their
    parameter names (`a`, `b`) are no keyword of the Python op, so every sample switching one would
    be rejected by CPU and dropped."""
    seen: dict[str, str] = {}
    for schema in _tensor_overloads(aten_name):
        for arg in schema.arguments:
            text = str(arg.type)
            # ScalarType, Layout, MemoryFormat are ints in TorchScript's types: not values to switch
            if arg.name in _SKIPPED or "Tensor" in text or arg.name in seen or _enum_like(arg):
                continue
            seen[arg.name] = _schema_text(text)
    return tuple(seen.items())


def _schema_text(text: str) -> str:
    """TorchScript's type text in the schema notation by_schema reads: `Optional[List[int]]` -> `int[]?`."""
    optional = text.startswith("Optional[") and text.endswith("]")
    if optional:
        text = text[len("Optional["):-1]
    if text.startswith("List[") and text.endswith("]"):
        text = text[len("List["):-1] + "[]"
    return text + ("?" if optional else "")


def cpu_unsafe(op: Any) -> frozenset[Where]:
    """The arguments of this OpInfo (by name, or name.variant) never switched, because CPU itself (the
    reference) reads out of bounds or aborts on some of their values: no reference, and an abort kills
    the worker before any verdict (op facts of kind `cpu_unsafe_arguments`)."""
    unsafe: frozenset[Where] = FACTS.get("cpu_unsafe_arguments", op.name) or frozenset()
    return unsafe | (FACTS.get("cpu_unsafe_arguments", op.name, op.variant_test_name) or frozenset())


def switch_points(op: Any, bases: Sequence[Any]) -> list[SwitchPoint]:
    """Every switch point of the op given its base samples, without repeats, the hook's first."""
    points: list[SwitchPoint] = []
    own = own_switches(op.name)
    for where, values in own.items():
        points += [(where, v) for v in values]
    unsafe = cpu_unsafe(op)
    for sample in bases:
        for i, value in enumerate(sample.args):
            if i not in own and i not in unsafe:
                points += [(i, v) for v in by_value(i, value) if not _same(v, value)]
        for name, value in sample.kwargs.items():
            if name not in own and name not in _SKIPPED and name not in unsafe:
                points += [(name, v) for v in by_value(name, value) if not _same(v, value)]
    given = 1 + min((len(s.args) for s in bases), default=0)  # positional values every base passes
    at = op_positions(op)
    for name, type_text in schema_keywords(_aten_name(op)):
        where: Where = name
        if at.get(name) == 0:  # the op's input itself (eye's n): the sample's, never a keyword
            continue
        if at.get(name, given) < given:  # passed positionally by every base: switch it there, by its name
            where = at[name] - 1
        # also where the samples pass it: the schema's type may allow more (sum's dim: int in the
        # samples, int[]? in the schema, so empty and repeated dim lists)
        if where not in own and name not in own and name not in unsafe and where not in unsafe:
            points += [(where, v) for v in by_schema(type_text, name)]
    if takes_dtype(_aten_name(op)) and "dtype" not in own and "dtype" not in unsafe:
        points += [("dtype", d) for d in DTYPE_POINTS]
    if takes_memory_format(_aten_name(op)) and "memory_format" not in own and "memory_format" not in unsafe:
        points += [("memory_format", f) for f in MEMORY_FORMAT_POINTS]
    return _unique(points)


# The accumulation or result dtype an op takes as `dtype=` (sum, mean, prod, cumsum, softmax, ...): part
# of the op's semantics (PyTorch accumulates in it), never in OpInfo's samples of sum, mean or nansum.
# Issue 39 item 3: the ScalarType arguments exploration used to skip. Combinations CPU refuses are
# dropped and counted, as every rejected input.
DTYPE_POINTS = (torch.float64, torch.float32, torch.int64)


@functools.cache
def takes_dtype(aten_name: str) -> bool:
    """Whether a tensor overload of the op has a ScalarType `dtype` argument."""
    return any(arg.name == "dtype" and "ScalarType" in str(getattr(arg, "real_type", arg.type))
               for schema in _tensor_overloads(aten_name) for arg in schema.arguments)


# The layout an op's result is asked for (clone, the *_like factories, contiguous, to): its strides
# are the semantics, so a sample with one has its result's strides compared with CPU's too
# (cases/opinfo/run.py: check_output). channels_last fits 4-d inputs, channels_last_3d 5-d ones:
# CPU refuses the others, and those samples are dropped and counted.
MEMORY_FORMAT_POINTS = (torch.channels_last, torch.contiguous_format, torch.preserve_format, torch.channels_last_3d)


@functools.cache
def takes_memory_format(aten_name: str) -> bool:
    """Whether a tensor overload of the op has a MemoryFormat `memory_format` argument."""
    return any(arg.name == "memory_format" and "MemoryFormat" in str(getattr(arg, "real_type", arg.type))
               for schema in _tensor_overloads(aten_name) for arg in schema.arguments)


def _enum_like(arg: Any) -> bool:
    real = str(getattr(arg, "real_type", arg.type))
    return any(kind in real for kind in ("ScalarType", "Layout", "MemoryFormat", "Device"))


def op_positions(op: Any) -> dict[str, int]:
    """positions() of an OpInfo's aten op: what generate.explored needs to place keyword switches."""
    return positions(_aten_name(op))


def _aten_name(op: Any) -> str:
    name = op.aten_name or op.name
    return name.rsplit(".", 1)[-1]


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return math.copysign(1.0, a) == math.copysign(1.0, b) and (a == b or (math.isnan(a) and math.isnan(b)))
    try:
        return bool(a == b)
    except (RuntimeError, TypeError, ValueError):
        return False


def _unique(points: list[SwitchPoint]) -> list[SwitchPoint]:
    out: list[SwitchPoint] = []
    for p in points:
        if not any(p[0] == q[0] and _same(p[1], q[1]) for q in out):
            out.append(p)
    return out
