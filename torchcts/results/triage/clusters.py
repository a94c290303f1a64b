"""Triage: group a run's failures into root-cause clusters, ranked by how many cases each explains.

Two failures share a cluster when they share a root cause (results/triage/root_causes.py: a rule such as
one device named with and without an index), else when their normalised error signature is the
same (results/triage/signatures.py: numbers, shapes, addresses and quoted names stripped; for triage the
op-name prefix of a check's message too), so one missing kernel or one broken device guard shows
up once, with every op and dtype it hits and the cases it blocks. Oracle mismatches of values are
split by op ("values differ" on two ops are two numerical bugs); structural ones (a shape, the
device, the layout) are one cluster across ops, their shapes reduced to how they relate. Crashes and
timeouts cluster by their crash signature (results/triage/crash_frames.py: the signal and the innermost
frames of the dead worker's stack, native when the log holds one), never by the message, which
names the worker: one native bug is one cluster however many workers it killed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from torchcts.model.record import CaseRecord
from torchcts.model.status import FAILURES
from torchcts.results.reports.quoting import md_code, md_text, one_field
from torchcts.results.reports.repeat_rate import flaky_in_repeats
from torchcts.results.reports.wording import plural
from torchcts.results.triage.crash_frames import crash_signature
from torchcts.results.triage.root_causes import message_shape, root_cause, structural_mismatch
from torchcts.results.triage.shared_args import shared
from torchcts.results.triage.signatures import bucket_of, signature_of


@dataclass
class Cluster:
    title: str
    bucket: str
    ops: Counter[str] = field(default_factory=Counter)
    dtypes: Counter[str] = field(default_factory=Counter)
    example: str = ""
    records: list[CaseRecord] = field(default_factory=list, repr=False)  # its failing records

    @property
    def count(self) -> int:
        return len(self.records)

    @cached_property
    def shared(self) -> list[str]:
        """The arguments, dtype and layout every failure of the cluster shares (results/triage/shared_args.py).
        Parses every record's sample, so computed once: read after `clusters` filled the cluster."""
        return shared(self.records)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "bucket": self.bucket, "count": self.count, "ops": dict(self.ops),
                "dtypes": dict(self.dtypes), "example_case": self.records[0].id if self.records else None,
                "example_message": self.example, "shared": self.shared}


def op_of(record: CaseRecord) -> str:
    """The op a failure counts under: the op that failed when it is not the op under test
    (`failed_op`), else its OpInfo name, else its first aten op, else its suite."""
    ops = record.ops or []
    return str(record.failed_op or record.op or (ops[0] if ops else record.suite or "?"))


def cluster_key(record: CaseRecord) -> tuple[str, str]:
    """(title, bucket) of the cluster a failing record belongs to."""
    if record.status == "flaky":
        first = record.first_failure or {}
        how = "under --repeat" if flaky_in_repeats(record) else "(passed on rerun)"
        return f"flaky {how}: {first.get('signature') or first.get('status', '?')}", "flaky"
    bucket = bucket_of(record) or "error"
    sig = record.signature or signature_of(record) or "?"
    if bucket in ("crash", "timeout"):
        return f"crash: {crash_signature(record)}" if bucket == "crash" else crash_signature(record), bucket
    cause = root_cause(record)  # one cause that messages of many shapes share (results/triage/root_causes.py)
    if cause is not None:
        return cause, bucket
    if bucket == "missing_kernel":
        return f"missing kernel: {sig.partition(': ')[2]}", bucket
    if bucket == "mismatch":
        structural = structural_mismatch(record)  # shape, dtype, device, layout: one cluster across ops
        return (f"mismatch: {structural or sig.partition(': ')[2]}" if structural or "values differ" not in sig
                else f"mismatch in {op_of(record)}: {sig.partition(': ')[2]}"), bucket
    return message_shape(sig), bucket


def clusters(records: list[CaseRecord]) -> list[Cluster]:
    """Clusters of the failing records (one record per case), largest first."""
    found: dict[str, Cluster] = {}
    for r in records:
        if r.status not in FAILURES:
            continue
        title, bucket = cluster_key(r)
        c = found.setdefault(title, Cluster(title, bucket, example=clip_words(str(r.message or ""), 300)))
        c.records.append(r)
        c.ops[op_of(r)] += 1
        if r.dtype:
            c.dtypes[str(r.dtype)] += 1
    return sorted(found.values(), key=lambda c: (-c.count, c.title))


def failures_by_op(records: list[CaseRecord]) -> list[tuple[str, int]]:
    counts = Counter(op_of(r) for r in records if r.status in FAILURES)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def top_counts(counter: Counter[str], n: int = 6) -> str:
    """`add (5), sub (2), +3 more`: the n most common, and how many more."""
    items = counter.most_common(n)
    more = len(counter) - len(items)
    return ", ".join(f"{k} ({v})" for k, v in items) + (f", +{more} more" if more > 0 else "")


def render_text(records: list[CaseRecord], limit: int = 30) -> str:
    """What `torchcts report --triage` prints."""
    found = clusters(records)
    total = sum(c.count for c in found)
    if not found:
        return "triage: no failures"
    lines = [f"triage: {plural(total, 'failing case')} in {plural(len(found), 'cluster')} (largest first)"]
    for i, c in enumerate(found[:limit], 1):
        lines.append(f"{i:3}. [{plural(c.count, 'case')}] {c.title}")
        lines.append(f"       ops: {top_counts(c.ops)}" + (f"; dtypes: {top_counts(c.dtypes)}" if c.dtypes else ""))
        if c.shared:
            lines.append(f"       shared by all {c.count}: {', '.join(c.shared)}")
        lines.append(f"       e.g. {c.records[0].id}: {clip_words(c.example, 160)}")
    if len(found) > limit:
        lines.append(f"  ... and {plural(len(found) - limit, 'smaller cluster')}")
    lines.append("failures by op: " + ", ".join(f"{op} ({n})" for op, n in failures_by_op(records)[:15]))
    return "\n".join(one_field(line) for line in lines)  # each line one line whatever a record holds


def clip_words(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut at a word boundary with "..." (a message cut mid-word
    reads as a different word: "expected 19, got -1")."""
    if len(text) <= limit:
        return text
    head = text[: limit - 3]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut.rstrip(" ,;:") + "..."


def render_markdown(records: list[CaseRecord], limit: int = 20) -> list[str]:
    """The summary.md triage section (empty without failures)."""
    found = clusters(records)
    if not found:
        return []
    lines = ["## Triage: root-cause clusters", "", "| cases | cluster | ops | shared by all | example |",
             "| ---: | --- | --- | --- | --- |"]
    for c in found[:limit]:
        lines.append(f"| {c.count} | {md_text(c.title)} | {md_text(top_counts(c.ops, 4))} | {md_text(', '.join(c.shared))} "
                     f"| {md_code(c.records[0].id, cell=True)} |")
    if len(found) > limit:
        lines.append(f"| | ... {plural(len(found) - limit, 'more cluster')} (`torchcts report --triage`) | | | |")
    lines.append("")
    return lines
