"""What a failure shows beside its message, the same in the console, summary.md and report.html.

The message says what differs (max abs/rel error, the first element, layouts that differ); these
lines say where to start: the op, dtype and kind, and the sample that failed (shapes, strides,
dtypes, kwargs), taken from the record's `info` as the case described it.
"""

from __future__ import annotations

import re

from torchcts.model.record import CaseRecord
from torchcts.oracle.mismatch import Mismatch
from torchcts.results.reports.repeat_rate import repeated

# A citation shown as a link: an http(s) URL of plain URL characters only. The record is untrusted
# (cases.jsonl): anything else (javascript:, quotes, spaces, markup) is shown as text, never linked.
_SAFE_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~%/+=&?#:@!,;-]*)?")


def context_line(record: CaseRecord) -> str:
    """`op mul (aten::mul.Tensor), dtype float32, kind noncontiguous`; '' when the record has none."""
    info = record.info or {}
    op = info.get("op") or record.op
    variant = info.get("variant")
    ops = [str(o) for o in record.ops or () if str(o) != op]
    parts = []
    if op or ops:
        name = f"{op}.{variant}" if op and variant else str(op or ops.pop(0))
        parts.append(f"op {name}" + (f" ({', '.join(ops[:4])})" if ops else ""))
    if record.dtype:
        parts.append(f"dtype {record.dtype}")
    if record.kind:
        parts.append(f"kind {record.kind}")
    return ", ".join(parts)


def sample_line(record: CaseRecord) -> str:
    """`sample 1: (Tensor[5] float32 strides=(2,) offset=1, ...)`; '' when the case named none."""
    info = record.info or {}
    index, sample = info.get("sample_index"), info.get("sample")
    if isinstance(sample, int) and index is None:  # a hand-written case numbers its samples
        index, sample = sample, None
    if index is None and sample is None:
        return ""
    head = f"sample {index}" if index is not None else "sample"
    head += " (shrunk)" if isinstance(info.get("explore"), dict) and info.get("original_sample") else ""
    shape = f" shape {info['shape']}" if info.get("shape") is not None and sample is None else ""
    return f"{head}: {sample}" if sample is not None else head + shape


def failed_op_line(record: CaseRecord) -> str:
    """`failed in aten::abs, a helper op (not the op under test)`; '' when the case's own op failed."""
    return f"failed in {record.failed_op}, a helper op (not the op under test)" if record.failed_op else ""


def original_line(record: CaseRecord) -> str:
    """An explore case's failure: the input exploration found, which `sample` is the shrunk form of
    (cases/explore/run.py); '' for every other record."""
    info = record.info or {}
    original, found = info.get("original_sample"), info.get("explore")
    if not isinstance(found, dict) or original is None:
        return ""
    recipe = found.get("recipe") or ""
    how = f"replayed from the corpus ({found['replayed']})" if found.get("replayed") else \
        f"shrunk in {found.get('shrink_calls')} calls"
    return f"found as: {original} ({recipe}); {found.get('variant') or 'forward'}, {how}"


def output_line(record: CaseRecord) -> str:
    """`the case printed 337 lines (kept in cases.jsonl, case_output)`; '' when it printed nothing.
    The output itself stays in the record: a backend's build log would bury every other failure."""
    text = record.case_output
    if not isinstance(text, str) or not text:
        return ""
    head = text.split("\n", 1)[0]
    lines = head[1:].split(" ", 1)[0] if head.startswith("[") and head[1:2].isdigit() else str(text.count("\n"))
    return f"the case printed {lines} lines (kept in cases.jsonl: case_output)"


def cite_url(record: CaseRecord) -> str | None:
    """The report a field case replays (`CaseRecord.cite`) when it is a plain http(s) URL, to be
    linked; None otherwise (no citation, or one that is not safe to link: `cite_line` shows it)."""
    cite = record.cite
    return cite if isinstance(cite, str) and len(cite) <= 300 and _SAFE_URL.fullmatch(cite) else None


def cite_line(record: CaseRecord) -> str:
    """`replays the report https://github.com/...`; '' for a case that cites none."""
    return f"replays the report {str(record.cite)[:300]}" if record.cite else ""


def repeat_line(record: CaseRecord) -> str:
    """`passed 8 of 10 repeats (--repeat)`: a case run N times (results/reports/repeats.py); '' otherwise."""
    found = repeated(record)
    return f"passed {found[0]} of {found[1]} repeats (--repeat)" if found else ""


def details(record: CaseRecord, cite: bool = True) -> list[str]:
    """The lines beside a failure's message; `cite=False` where the report links the citation itself."""
    return [line for line in (repeat_line(record), failed_op_line(record), context_line(record), sample_line(record),
                              original_line(record), output_line(record), cite_line(record) if cite else "")
            if line]


def rel_error_text(mismatch: Mismatch) -> str:
    """The relative error as a report cell: 'n/a (expected 0)' where every differing element expects 0."""
    if mismatch.max_rel_error is not None:
        return f"{mismatch.max_rel_error:.3g}"
    return "n/a (expected 0)" if mismatch.max_abs_error is not None else ""
