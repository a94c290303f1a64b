"""The expectations ledger (SPEC §4): known failures a backend records honestly."""

from __future__ import annotations

import datetime as _dt
from typing import Any

LEDGER_STATUSES = ("xfail", "known_crash")
ENTRY_KEYS = ("match", "status", "reason", "tracker", "expires", "signature")


def validate_entries(entries: list[dict[str, Any]]) -> list[str]:
    """Problems of a ledger, each with its key path."""
    problems: list[str] = []
    for i, entry in enumerate(entries):
        path = f"expectations[{i}]"
        for key in entry:
            if key not in ENTRY_KEYS:
                problems.append(f"unknown key '{key}' under {path}; known: {', '.join(ENTRY_KEYS)}")
        if not isinstance(entry.get("match"), (str, dict)) or not entry.get("match"):
            problems.append(f"missing 'match' (case-id glob or {{op, dtype}} selector) under {path}")
        if entry.get("status") not in LEDGER_STATUSES:
            problems.append(f"status must be one of {LEDGER_STATUSES}, got {entry.get('status')!r} under {path}")
        if not isinstance(entry.get("reason"), str) or not entry.get("reason"):
            problems.append(f"missing 'reason' (why it fails) under {path}")
        expires = entry.get("expires")
        if expires is not None:
            try:
                _dt.date.fromisoformat(str(expires))
            except ValueError:
                problems.append(f"expires must be a date YYYY-MM-DD, got {expires!r} under {path}")
    return problems
