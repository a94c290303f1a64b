"""What a group of failures has in common: the arguments and layouts every one of them shares.

Triage names it beside each cluster ("shared: keepdim=True, non-contiguous, dtype bfloat16"), so
the pattern behind a bug shows before any case is opened. The features come from what a record
says about its sample: the dtype and kind, the sample description an OpInfo case writes
(`(Tensor[4, 5] float32 strides=(1, 4), dim=1, keepdim=True)`, cases/opinfo/samples.py:
describe_sample) and the scalar details a hand-written case attached with `ctx.describe`.
Records are untrusted text: this only reads them; the reports quote the result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from torchcts.model.record import CaseRecord

# `ctx.describe` keys that identify rather than describe the sample (or are shown elsewhere).
_NOT_ARGUMENTS = frozenset({"op", "variant", "dtype", "kind", "repro", "sample", "sample_index", "tolerance",
                            "max_abs_error", "error", "no_reference", "initial_loss", "final_loss", "elapsed_ms"})
_KWARG = re.compile(r"^([A-Za-z_]\w*)=(.+)$", re.S)
_TENSOR = re.compile(r"^Tensor\[([^\]]*)\]\s+(\w+)(.*)$", re.S)
_MAX_VALUE = 60


def split_top_level(text: str) -> list[str]:
    """`a, (b, c), d=[e, f]` -> ['a', '(b, c)', 'd=[e, f]']: commas inside brackets stay."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _tensor_features(position: str, token: str) -> dict[str, str]:
    m = _TENSOR.match(token)
    if not m:
        return {}
    shape, _dtype, tail = m.groups()
    out = {f"{position} shape": f"{position} shape [{shape}]"}
    if "strides=" in tail:
        out["non-contiguous"] = "non-contiguous"
    if "offset=" in tail:
        out["storage offset"] = "storage offset"
    if shape.strip() == "":
        out[f"{position} 0-dim"] = f"{position} 0-dim"
    elif re.search(r"(^|,\s*)0(\s*,|$)", shape):
        out["empty"] = "empty tensor"
    return out


def sample_features(description: str) -> dict[str, str]:
    """Features of an OpInfo sample description: keyword arguments (`keepdim=True`), positional
    scalars, tensor shapes and layouts (`non-contiguous`, `storage offset`, `0-dim`, `empty`)."""
    text = description.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    out: dict[str, str] = {}
    for i, token in enumerate(split_top_level(text)):
        kw = _KWARG.match(token)
        if kw and not token.startswith("Tensor"):
            name, value = kw.groups()
            out[f"kw {name}"] = f"{name}={value[:_MAX_VALUE]}"
            out.update({k: v for k, v in _tensor_features(name, value).items() if k in ("non-contiguous", "storage offset")})
            continue
        position = "input" if i == 0 else f"arg {i}"
        found = _tensor_features(position, token)
        if found:
            out.update(found)
        elif i and not token.startswith(("(", "[")):
            out[position] = f"{position}={token[:_MAX_VALUE]}"
        elif "strides=" in token:  # a tensor inside a list argument
            out["non-contiguous"] = "non-contiguous"
    return out


def features(record: CaseRecord) -> dict[str, str]:
    """Every feature of one failing record: name -> how it reads ('dtype bfloat16', 'keepdim=True')."""
    out: dict[str, str] = {}
    if record.dtype:
        out["dtype"] = f"dtype {record.dtype}"
    if record.kind:
        out["kind"] = f"kind {record.kind}"
    info = record.info if isinstance(record.info, dict) else {}
    sample = info.get("sample")
    if isinstance(sample, str):
        out.update(sample_features(sample))
    for key, value in info.items():
        if key in _NOT_ARGUMENTS or key in out or not isinstance(value, (str, int, float, bool, list)):
            continue
        if isinstance(value, list) and not all(isinstance(v, (int, float, str)) for v in value):
            continue
        text = str(value)
        if len(text) <= _MAX_VALUE:
            out[f"info {key}"] = f"{key}={text}"
    return out


def shared(records: Iterable[CaseRecord]) -> list[str]:
    """The features every record has with the same value, in the first record's order; [] for
    fewer than two records (one case shares everything with itself)."""
    recs = list(records)
    if len(recs) < 2:
        return []
    common = features(recs[0])
    for r in recs[1:]:
        other = features(r)
        common = {k: v for k, v in common.items() if other.get(k) == v}
        if not common:
            break
    return list(common.values())
