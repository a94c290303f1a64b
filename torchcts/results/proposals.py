"""Proposed ledger entries for a run's current failures (`torchcts expectations update`).

For a team adopting the suite mid-bring-up: every failure becomes a candidate entry with its
signature, so the ledger starts honest (each entry names how the case fails today). The result is
written to a file for review; nothing here touches a manifest.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections import defaultdict
from typing import Any

from torchcts.results.ledger import FAILING
from torchcts.results.quoting import py_comment, quoted_string
from torchcts.results.records import CaseRecord
from torchcts.results.signatures import signature_of
from torchcts.results.statuses import CRASH_LIKE
from torchcts.results.triage import cluster_key

TODO_TRACKER = "TODO: tracker URL or id"


def _status(record: CaseRecord) -> str:
    return "known_crash" if record.status in CRASH_LIKE else "xfail"


def _reason(record: CaseRecord) -> str:
    message = " ".join(str(record.message or record.status).split())
    note = record.expectation or {}
    replaces = f"; replaces expectations[{note['entry']}], whose signature no longer matches" if note else ""
    return f"TODO: why it fails ({message[:120]}){replaces}"


def _entry(match: Any, record: CaseRecord, expires: str) -> dict[str, Any]:
    return {
        "match": match,
        "status": _status(record),
        "reason": _reason(record),
        "tracker": TODO_TRACKER,
        "expires": expires,
        "signature": record.signature or signature_of(record),
    }


def propose(records: list[CaseRecord], expires: _dt.date, group: str = "case") -> list[dict[str, Any]]:
    """Entries for the failures the ledger does not already expect, one per case or per cluster.

    A cluster entry is a selector {suite, kind, op, dtype: [...]} over the cases of one root-cause
    cluster that share suite, kind and op; a cluster of one case is proposed by its id.
    """
    failing = [r for r in records if r.status in FAILING]
    when = expires.isoformat()
    if group == "case":
        return [_entry(r.id, r, when) for r in failing]
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
