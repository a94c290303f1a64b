"""One root cause, one cluster: the key triage groups failures by across ops (issue 48 item 4).

A signature (results/triage/signatures.py) is what the ledger compares, so it stays as precise as it is.
Triage asks a coarser question, the one a backend tracker keeps by hand: which failures share a
cause, and how many cases does each cause block? On pytorch_ocl one device-index bug (its tensors
say `ocl`, PyTorch's checks expect `ocl:0`) read as 12+ clusters, each message naming a different
op or check, and a 0-dim result returned as shape [1] as one cluster per op. Here:

- a rule (ROOT_CAUSES) names a cause that messages of many shapes share: the same device named
  with and without an index;
- an error message's shape: the signature with an op-name prefix (`dot: `, `quantile() `) masked,
  so one check raised from many ops is one cluster;
- a mismatch that is structural (shape, dtype, device, layout) is one cluster across ops, its
  shapes reduced to how they relate (`got [1], expected []`: a 0-dim result returned as 1-d);
  values that differ stay one cluster per op (two ops' wrong numbers are two numerical bugs).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from torchcts.model.record import CaseRecord
from torchcts.oracle.mismatch import Mismatch

# `ocl:0`, `cuda:1`: a device with an index, not inside a path or a dotted name.
_INDEXED = re.compile(r"(?<![\w./<])([a-z][a-z0-9_]*):(\d+)\b")
# A check's op-name prefix: `dot: Expected ...`, `all.dims: output ...`, `quantile() out tensor ...`.
_OP_PREFIX = re.compile(r"^[A-Za-z_][\w.]*(?:\(\)|:)\s")


def device_index_type(message: str) -> str | None:
    """The device type a message names both with an index and without (`ocl:0` and `ocl`), else None."""
    for m in _INDEXED.finditer(message):
        if re.search(rf"(?<![\w./<]){re.escape(m.group(1))}\b(?!:\d)", message):
            return m.group(1)
    return None


@dataclass(frozen=True)
class RootCause:
    """A cause that failures of many message shapes share; `match` returns its title or None."""

    name: str
    match: Callable[[CaseRecord], str | None]


def _device_index(record: CaseRecord) -> str | None:
    device = device_index_type(str(record.message or ""))
    if device is None:
        return None
    return (f"device index: one device named both '{device}' and '{device}:N' (a tensor or an output created "
            "without the device index, then compared by device)")


ROOT_CAUSES: list[RootCause] = [RootCause("device_index", _device_index)]


def root_cause(record: CaseRecord) -> str | None:
    """The title of the first ROOT_CAUSES rule a failing record matches, else None."""
    for cause in ROOT_CAUSES:
        title = cause.match(record)
        if title is not None:
            return title
    return None


# c10's ScalarType names as messages print them (`Unsupported data type:ComplexFloat`).
_DTYPE = re.compile(r"\b(?:Byte|Char|Short|Int|Long|Half|Float|Double|ComplexHalf|ComplexFloat|ComplexDouble|Bool|"
                    r"BFloat16|UInt16|UInt32|UInt64|Float8_\w+|QInt8|QUInt8|QInt32)\b")


def message_shape(signature: str) -> str:
    """An error signature with the op-name prefix of its message (`RuntimeError: <op>: ...`) and the
    dtype names in it masked: one check raised from many ops, or for many dtypes, is one cause."""
    exc, sep, text = signature.partition(": ")
    return f"{exc}{sep}{_DTYPE.sub('<dtype>', _OP_PREFIX.sub('<op>: ', text, count=1))}" if sep else signature


def _shape_class(shape: object) -> str:
    if not isinstance(shape, list):
        return "?"
    if len(shape) <= 1 and all(d in (0, 1) for d in shape):
        return str(shape)  # [], [0], [1]: the shapes that say how a result went wrong
    return f"{len(shape)}-d"


# The out= destination a mismatch names (cases/opinfo: `out= into a resized destination (shape [1], ...): ...`).
_DESTINATION = re.compile(r"^out= into an? (?P<layout>[\w ]+?) destination \(shape \[(?P<shape>[\d, ]*)\][^)]*\): (?P<rest>.*)$")


def structural_mismatch(record: CaseRecord) -> str | None:
    """`shape mismatch: got [1], expected []` and the like for a mismatch that is not about values
    (shape, dtype, device, layout), None for values that differ (those stay per op). An out=
    destination of a given layout is the argument pattern: a resized one that kept its shape is one
    cause (out= not resized) on every op, and so are wrong values written into an offset one."""
    m = Mismatch.from_json(record.mismatch)
    what = str((m.what if m is not None else "") or record.message or "")
    extra = m.extra if m is not None else {}
    dest = _DESTINATION.match(what)
    if dest is not None:
        given = [int(d) for d in dest["shape"].replace(" ", "").split(",") if d]
        if dest["rest"].startswith("shape mismatch") and extra.get("actual") == given:
            return f"out= into a {dest['layout']} destination: it kept its shape (the backend does not resize out=)"
        return f"out= into a {dest['layout']} destination: {dest['rest']}"
    if what.startswith("values differ") or not what:
        return None
    if what.startswith("shape mismatch"):
        got, expected = extra.get("actual"), extra.get("expected")
        if got == [0] and expected != [0]:
            return "shape mismatch: got an empty [0] result where another shape was expected"
        return f"shape mismatch: got {_shape_class(got)}, expected {_shape_class(expected)}"
    return None
