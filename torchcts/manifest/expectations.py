"""The expectations ledger (docs/ledger.md): known failures a backend records honestly.

An entry:

    {"match": "opinfo/atan2/float16/*",          # case-id glob, or a selector:
     # "match": {"op": "atan2", "dtype": ["float16", "bfloat16"], "suite": "opinfo", "kind": "forward"},
     "status": "xfail",                           # or "known_crash" (the case still runs, isolated)
     "reason": "fp16 atan2 kernel loses precision near 0",
     "tracker": "BUG-123",                        # URL or id
     "expires": "2027-06-30",                     # after this date the entry is reported as expired
     "signature": "mismatch"}                     # a bucket, "Type: message pattern", or
                                                  # {"exception": "RuntimeError", "message": "..."}

Structure is checked here, on every load (fast, no case list). Matching entries to cases and
records is results/ledger/match.py; whether a match names any case at all is checked by
`check-manifest` only, against the case registry (`results/ledger/match.py: registry_problems`).
"""

from __future__ import annotations

import datetime as _dt
import difflib
import fnmatch
import re
from typing import Any

from torchcts.manifest.schema import BUCKETS, KNOWN_SUITE_NAMES, dtype_name

LEDGER_STATUSES = ("xfail", "known_crash")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # YYYY-MM-DD only (fromisoformat also takes 20270630)
ENTRY_KEYS = ("match", "status", "reason", "tracker", "expires", "signature")
SELECTOR_KEYS = ("op", "dtype", "suite", "kind", "case")
SIGNATURE_KEYS = ("exception", "message")


def selector_values(value: Any) -> list[str]:
    """A selector key's value as a list of patterns (one string or a list)."""
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def _check_selector(match: dict[str, Any], path: str) -> list[str]:
    problems: list[str] = []
    if not match:
        return [f"empty selector under {path}.match: give at least one of {', '.join(SELECTOR_KEYS)}"]
    for key, value in match.items():
        where = f"{path}.match.{key}"
        if key not in SELECTOR_KEYS:
            problems.append(f"unknown selector key '{key}' under {path}.match; known: {', '.join(SELECTOR_KEYS)}")
            continue
        items = [value] if not isinstance(value, (list, tuple)) else list(value)
        ok = bool(items) and all(isinstance(v, str) and v or key == "dtype" and dtype_name(v) for v in items)
        if not ok:
            problems.append(f"expected a non-empty string or list of strings under {where}, got {value!r}")
            continue
        if key == "dtype":
            for v in selector_values(value):
                if not any(ch in v for ch in "*?[") and dtype_name(v) is None:
                    problems.append(f"unknown dtype '{v}' under {where}: use a torch dtype name such as float32")
        if key == "suite":
            for v in selector_values(value):
                if not any(fnmatch.fnmatchcase(s, v) for s in KNOWN_SUITE_NAMES):
                    problems.append(f"unknown suite '{v}' under {where}; known: {', '.join(KNOWN_SUITE_NAMES)}")
    return problems


def _check_signature(sig: Any, path: str) -> list[str]:
    if sig is None:
        return []
    if isinstance(sig, dict):
        unknown = [k for k in sig if k not in SIGNATURE_KEYS]
        if unknown or not sig or not all(isinstance(v, str) and v for v in sig.values()):
            return [f"signature must be {{'exception': str, 'message': str}} under {path}.signature, got {sig!r}"]
        return []
    if not isinstance(sig, str) or not sig.strip():
        return [f"signature must be a bucket ({', '.join(BUCKETS)}), 'Type: message pattern' or a dict "
                f"{{exception, message}} under {path}.signature, got {sig!r}"]
    head = sig.partition(":")[0].strip()
    # An exception type has a capital letter (RuntimeError, _LinAlgError); a lowercase word is a bucket.
    if head in BUCKETS or any(ch.isupper() for ch in head) or "*" in head:
        return []
    close = difflib.get_close_matches(head, list(BUCKETS), n=1)
    hint = f": did you mean '{close[0]}'?" if close else ""
    return [f"unknown signature bucket '{sig}'{hint} under {path}.signature (buckets: {', '.join(BUCKETS)}; "
            "or write 'ExceptionType: message pattern')"]


def validate_entries(entries: list[dict[str, Any]]) -> list[str]:
    """Problems of a ledger's structure, each with its key path and the fix."""
    problems: list[str] = []
    for i, entry in enumerate(entries):
        path = f"expectations[{i}]"
        for key in entry:
            if key not in ENTRY_KEYS:
                problems.append(f"unknown key '{key}' under {path}; known: {', '.join(ENTRY_KEYS)}")
        match = entry.get("match")
        if isinstance(match, dict):
            problems += _check_selector(match, path)
        elif not isinstance(match, str) or not match:
            problems.append(f"missing 'match' (case-id glob or {{op, dtype, suite, kind}} selector) under {path}")
        if entry.get("status") not in LEDGER_STATUSES:
            problems.append(f"status must be one of {LEDGER_STATUSES}, got {entry.get('status')!r} under {path}")
        if not isinstance(entry.get("reason"), str) or not entry.get("reason"):
            problems.append(f"missing 'reason' (why it fails) under {path}")
        tracker = entry.get("tracker")
        if tracker is not None and not isinstance(tracker, str):
            problems.append(f"tracker must be a URL or id string, got {tracker!r} under {path}")
        expires = entry.get("expires")
        if expires is not None and expiry_date(expires) is None:
            problems.append(f"expires must be a date YYYY-MM-DD, got {expires!r} under {path}")
        problems += _check_signature(entry.get("signature"), path)
    return problems


def normalise_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """JSON-able entries: torch dtypes in selectors become names, TOML dates become YYYY-MM-DD."""
    out = []
    for entry in entries:
        e = dict(entry)
        if isinstance(e.get("match"), dict) and "dtype" in e["match"]:
            d = e["match"]["dtype"]
            names = [dtype_name(v) or str(v) for v in (d if isinstance(d, (list, tuple)) else [d])]
            e["match"] = {**e["match"], "dtype": names[0] if not isinstance(d, (list, tuple)) else names}
        if isinstance(e.get("expires"), _dt.date):
            e["expires"] = e["expires"].isoformat()
        out.append(e)
    return out


def expiry_date(value: Any) -> _dt.date | None:
    """The date of an `expires` value (a TOML date or `YYYY-MM-DD` text); None for anything else,
    a TOML datetime or time included: its text would not read back as a date from run.json."""
    if isinstance(value, _dt.datetime):
        return None
    if isinstance(value, _dt.date):
        return value
    if not isinstance(value, str) or not _ISO_DATE.fullmatch(value):
        return None
    try:
        return _dt.date.fromisoformat(str(value))
    except ValueError:
        return None


def is_expired(entry: dict[str, Any], today: _dt.date) -> bool:
    date = expiry_date(entry.get("expires")) if entry.get("expires") is not None else None
    return date is not None and date < today
