"""Proposed ledger entries for a run's current failures (`torchcts expectations update`).

For a team adopting the suite mid-bring-up: every failure becomes a candidate entry with its
signature, so the ledger starts honest (each entry names how the case fails today). The result is
written to a file for review; nothing here touches a manifest.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
from collections import defaultdict
from typing import Any

from torchcts.model.record import CaseRecord
from torchcts.model.status import CRASH_LIKE
from torchcts.results.ledger.apply import FAILING
from torchcts.results.ledger.note import LedgerNote
from torchcts.results.reports.quoting import py_comment, quoted_string
from torchcts.results.triage.clusters import Cluster, cluster_key, clusters, top_counts
from torchcts.results.triage.signatures import signature_of

TODO_TRACKER = "TODO: tracker URL or id"


def _status(record: CaseRecord) -> str:
    return "known_crash" if record.status in CRASH_LIKE else "xfail"


def _message(record: CaseRecord) -> str:
    """The whole failure message on one line (never cut: a reason cut mid-word reads as a bug)."""
    return " ".join(str(record.message or record.status).split())


def _replaces(members: list[CaseRecord]) -> str:
    notes = (LedgerNote.from_json(r.expectation) for r in members)
    entries = sorted({n.entry for n in notes if n is not None and n.entry is not None})
    names = ", ".join(f"expectations[{i}]" for i in entries)
    return f"; replaces {names}, whose signature no longer matches" if entries else ""


# The reason a proposed entry carries until a person writes the real one; `check-manifest` warns on
# an entry still holding it (cli/check_manifest.py).
PLACEHOLDER_REASON = "TODO: why it fails"


def _reason(record: CaseRecord) -> str:
    return f"{PLACEHOLDER_REASON} ({_message(record)}){_replaces([record])}"


def _entry(match: Any, record: CaseRecord, expires: str, reason: str | None = None,
           signature: str | None = None) -> dict[str, Any]:
    return {
        "match": match,
        "status": _status(record),
        "reason": reason or _reason(record),
        "tracker": TODO_TRACKER,
        "expires": expires,
        "signature": signature or record.signature or signature_of(record),
    }


def _glob(ids: list[str]) -> str:
    """One glob over case ids: segments all ids share kept, the others `*` (ids of one depth), else
    the shared leading segments and `*`."""
    parts = [i.split("/") for i in ids]
    if len({len(p) for p in parts}) == 1:
        return "/".join(seg[0] if len(set(seg)) == 1 else "*" for seg in zip(*parts, strict=True))
    common = []
    for seg in zip(*parts, strict=False):  # stops at the shortest id
        if len(set(seg)) != 1:
            break
        common.append(seg[0])
    return "/".join([*common, "*"])


def case_patterns(ids: list[str], all_ids: list[str]) -> list[str]:
    """The fewest globs (by splitting at the first segment the ids differ in) that name exactly
    `ids` among the run's case ids `all_ids`: a passing case an entry named would be reported xpassed."""
    ids = sorted(set(ids))
    if len(ids) == 1:
        return ids
    glob = _glob(ids)
    if {i for i in all_ids if fnmatch.fnmatchcase(i, glob)} == set(ids):
        return [glob]
    parts = [i.split("/") for i in ids]
    if len({len(p) for p in parts}) != 1:
        key = [str(len(p)) for p in parts]
    else:
        at = next(k for k, seg in enumerate(zip(*parts, strict=True)) if len(set(seg)) != 1)
        key = [p[at] for p in parts]
    groups: dict[str, list[str]] = defaultdict(list)
    for k, i in zip(key, ids, strict=True):
        groups[k].append(i)
    return [pattern for members in groups.values() for pattern in case_patterns(members, all_ids)]


def _cluster_entry(cluster: Cluster, all_ids: list[str], when: str) -> dict[str, Any]:
    """One entry for a triage cluster: a case-id glob (or the few that name exactly its cases) plus
    the signature its failures share (else the cluster's bucket), and the whole failure message."""
    members = cluster.records
    first = members[0]
    patterns = case_patterns([r.id for r in members], all_ids)
    signatures = {r.signature or signature_of(r) for r in members}
    signature = signatures.pop() if len(signatures) == 1 else cluster.bucket
    ops = f", ops {top_counts(cluster.ops)}" if cluster.ops else ""
    reason = (f"{PLACEHOLDER_REASON} ({len(members)} cases{ops}; e.g. {first.id}: {_message(first)})"
              f"{_replaces(members)}" if len(members) > 1 else _reason(first))
    match: Any = patterns[0] if len(patterns) == 1 else {"case": patterns}
    return _entry(match, first, when, reason=reason, signature=signature)


GROUPS = ("cluster", "case", "selector")


def propose(records: list[CaseRecord], expires: _dt.date, group: str = "cluster") -> list[dict[str, Any]]:
    """Entries for the failures the ledger does not already expect, by `group`:

    - cluster (the default): one per root-cause cluster of triage (results/triage/clusters.py), a case-id
      glob plus the cluster's signature, with the whole message in the reason;
    - case: one per failing case, by its id;
    - selector: one {suite, kind, op, dtype: [...]} selector per cluster and op (a cluster of one
      case is proposed by its id).
    """
    failing = [r for r in records if r.status in FAILING]
    when = expires.isoformat()
    if group == "case":
        return [_entry(r.id, r, when) for r in failing]
    if group == "cluster":
        all_ids = [r.id for r in records]
        return [_cluster_entry(c, all_ids, when) for c in clusters(failing)]
    groups: dict[tuple[str, ...], list[CaseRecord]] = defaultdict(list)
    for r in failing:
        ops = r.ops or []
        key = (cluster_key(r)[0], str(r.suite or ""), str(r.kind or ""), str(ops[0] if ops else ""))
        groups[key].append(r)
    out = []
    for (_title, suite, kind, op), members in groups.items():
        if len(members) == 1 or not op:
            out += [_entry(r.id, r, when) for r in members]
            continue
        selector: dict[str, Any] = {"suite": suite, **({"kind": kind} if kind else {}), "op": op}
        dtypes = sorted({str(r.dtype) for r in members if r.dtype})
        if dtypes:
            selector["dtype"] = dtypes
        out.append(_entry(selector, members[0], when))
    return out


def _value(v: Any) -> str:
    """A literal valid in Python and TOML: strings through the one quoting layer (no control, invisible
    or direction-changing character reaches the ledger file), lists element-wise."""
    if isinstance(v, str):
        return quoted_string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return json.dumps(v)


def render_python(entries: list[dict[str, Any]], run_name: str) -> str:
    lines = [
        f"# Proposed expectations ledger entries for the failures of run {py_comment(run_name)}",
        "# (written by `torchcts expectations update`; nothing was applied). Review each entry: state the",
        "# reason, set the tracker and expiry, drop what should be fixed instead, then paste the entries",
        "# into the \"expectations\" list of your manifest.",
        "expectations = [",
    ]
    for e in entries:
        lines.append("    {")
        lines += [f"        {_value(k)}: {_value(v)}," for k, v in e.items()]
        lines.append("    },")
    lines.append("]")
    return "\n".join(lines) + "\n"


def render_toml(entries: list[dict[str, Any]], run_name: str) -> str:
    lines = [
        f"# Proposed expectations ledger entries for the failures of run {py_comment(run_name)}",
        "# (written by `torchcts expectations update`; nothing was applied). Review each entry, then paste",
        "# them into torchcts.toml (in pyproject.toml, write [[tool.torchcts.expectations]]).",
    ]
    for e in entries:
        lines += ["", "[[expectations]]"]
        for k, v in e.items():
            if isinstance(v, dict):
                inner = ", ".join(f"{ik} = {_value(iv)}" for ik, iv in v.items())
                lines.append(f"{k} = {{ {inner} }}")
            else:
                lines.append(f"{k} = {_value(v)}")
    return "\n".join(lines) + "\n"
