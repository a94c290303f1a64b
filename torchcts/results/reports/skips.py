"""What did not run and why, summarised: `show-skips` and the top of summary.md read the same counts.

Why a summary: one line per skipped case is thousands of lines for a backend that claims a few
dtypes; what a reader acts on is "which claim would run how many more cases" (a dtype, a
capability), the reasons the build rules cases out, and the ops most affected.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from torchcts.model.record import CaseRecord

SKIPPED = ("not_claimed", "not_applicable")
# The wording of engine/selection.py: claim_decision (records hold it as `message`).
_DTYPE = re.compile(r"^dtype (\S+) (not in supported_dtypes|claimed False)$")
_CAPABILITY = re.compile(r"^capability (.+) not claimed$")
# The wording of cases/opinfo/run.py: UnclaimedSample (a case found at run time to need another dtype)
_UNCLAIMED = re.compile(r"the unclaimed dtype (\w+)")


@dataclass
class SkipSummary:
    by_status: Counter[str] = field(default_factory=Counter)
    by_dtype: Counter[str] = field(default_factory=Counter)  # not_claimed: the dtype is not claimed
    by_capability: Counter[str] = field(default_factory=Counter)  # not_claimed: a capability is not
    by_reason: Counter[tuple[str, str]] = field(default_factory=Counter)  # (status, reason with {op}/{dtype})
    by_op: Counter[str] = field(default_factory=Counter)
    # by_reason's key -> the first case's (op, dtype): shown with the reason, so {op}/{dtype} read as placeholders
    examples: dict[tuple[str, str], tuple[str, str | None]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.by_status.values())


def op_label(record: CaseRecord) -> str:
    """The op a record is about: an OpInfo case's name with variant (its id's second part), else
    its first declared op (an aten op without namespace and overload), else the id's second part."""
    parts = record.id.split("/")
    if record.suite == "opinfo" and len(parts) > 1:
        return parts[1]
    ops = record.ops or ()
    if ops:
        from torchcts.cases.ops import parse_op

        ref = parse_op(str(ops[0]))
        return ref.name if ref.namespace == "aten" else str(ops[0])
    return parts[1] if len(parts) > 1 else parts[0]


def general_reason(record: CaseRecord, op: str) -> str:
    """The reason with the case's own op and dtype replaced by {op} and {dtype}, so one rule
    that excludes 200 cases is one line."""
    text = str(record.message or "no reason recorded")
    if op:
        text = re.sub(rf"(?<![\w.]){re.escape(op)}(?!\w)", "{op}", text)
    for dt in {record.dtype, *(record.extra.get("dtypes") or ())} - {None}:
        text = re.sub(rf"(?<!\w){re.escape(str(dt))}(?!\w)", "{dtype}", text)
    return text


def summarize(records: Iterable[CaseRecord]) -> SkipSummary:
    """Counts of the not_claimed and not_applicable records (other records are ignored)."""
    out = SkipSummary()
    for r in records:
        status = r.status
        if status not in SKIPPED:
            continue
        out.by_status[status] += 1
        op = op_label(r)
        out.by_op[op] += 1
        message = str(r.message or "")
        if status == "not_claimed" and (m := _DTYPE.match(message) or _UNCLAIMED.search(message)):
            out.by_dtype[m.group(1)] += 1
        elif status == "not_claimed" and (m := _CAPABILITY.match(message)):
            for cap in re.findall(r"'([^']+)'", m.group(1)):
                out.by_capability[cap.replace("|", " or ")] += 1
        else:
            key = (status, general_reason(r, op))
            out.by_reason[key] += 1
            out.examples.setdefault(key, (op, r.dtype))
    return out


def reason_label(s: SkipSummary, key: tuple[str, str]) -> str:
    """A reason row as read: its placeholders as <op> and <dtype>, and one case they stand for
    (`not_applicable: <op> is not supported for <dtype> on CPU (the oracle); e.g. t, uint16`)."""
    status, reason = key
    text = reason.replace("{op}", "<op>").replace("{dtype}", "<dtype>")
    op, dtype = s.examples.get(key, ("", None))
    shown = [v for v, mark in ((op, "<op>"), (dtype, "<dtype>")) if v and mark in text]
    return f"{status}: {text}" + (f"; e.g. {', '.join(shown)}" if shown else "")


def _table(counter: Counter[Any], top: int | None) -> list[tuple[Any, int]]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))[:top]


def sections(s: SkipSummary, top: int = 10) -> list[tuple[str, list[tuple[str, int]]]]:
    """The summary's sections, each a title and (label, count) rows, most cases first."""
    out = []
    if s.by_dtype:
        out.append(("not claimed, by dtype (claim it in supported_dtypes to run these)", _table(s.by_dtype, None)))
    if s.by_capability:
        out.append(("not claimed, by capability (a case may need several)", _table(s.by_capability, None)))
    if s.by_reason:
        rows = [(reason_label(s, key), n) for key, n in _table(s.by_reason, top)]
        rest = len(s.by_reason) - len(rows)
        title = "by reason" + (f" (top {len(rows)} of {len(s.by_reason)})" if rest > 0 else "")
        out.append((title, rows))
    if s.by_op:
        out.append((f"ops with the most skipped cases (top {min(top, len(s.by_op))} of {len(s.by_op)})",
                    _table(s.by_op, top)))
    return out


def headline(s: SkipSummary, verb: str = "did not run") -> str:
    """`20 cases did not run (4 not_claimed, 16 not_applicable)`."""
    parts = ", ".join(f"{s.by_status[k]} {k}" for k in SKIPPED if s.by_status.get(k))
    return f"{s.total} cases {verb}" + (f" ({parts})" if parts else "")


def render_text(s: SkipSummary, top: int = 10) -> list[str]:
    lines = []
    for title, rows in sections(s, top):
        lines += [f"{title}:", *[f"  {n:6}  {label}" for label, n in rows]]
    return lines


def render_markdown(records: list[CaseRecord], top: int = 10) -> list[str]:
    """summary.md's "Not claimed or not applicable" section; nothing when every case ran."""
    from torchcts.results.reports.quoting import md_text

    s = summarize(records)
    if not s.total:
        return []
    lines = ["## Not claimed or not applicable", "", md_text(headline(s)) + " (`torchcts show-skips --details` lists them).", ""]
    for title, rows in sections(s, top):
        lines += [f"**{md_text(title)}**", "", "| | cases |", "| --- | ---: |"]
        lines += [f"| {md_text(label)} | {n} |" for label, n in rows]
        lines.append("")
    return lines
