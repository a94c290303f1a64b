"""What must never be in evidence: absolute paths, host names, user names (and where to look for them).

The writer scrubs free text (exception messages) and then refuses any record that still leaks;
the verifier applies the same checks to a whole store, so a hand-edited record is caught too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torchcts.results.records.scrub import IDENTITY_PATTERN, identity_regex, local_identities
from torchcts.results.records.scrub import scrub as _scrub

__all__ = ["FORBIDDEN_KEYS", "leaks", "local_identities", "scrub"]

# Keys that name identity or location; forbidden anywhere in a record.
FORBIDDEN_KEYS = frozenset({"host", "hostname", "node", "user", "username", "login", "home", "cwd", "path",
                            "env", "environ", "environment"})
_KIND = {"file_url": "file URL", "unc": "UNC path", "drive": "absolute path", "posix": "absolute path",
         "home": "home path", "up": "parent-relative path", "mac": "MAC address", "ipv6": "IP address",
         "ipv4": "IP address", "email": "user@host or e-mail"}


def _texts(obj: Any, where: str = "") -> Iterator[tuple[str, str, bool]]:
    """(field path, text, is a key) for every key and string of a JSON value."""
    if isinstance(obj, str):
        yield where, obj, False
    elif isinstance(obj, dict):
        for k, v in obj.items():
            path = f"{where}.{k}" if where else str(k)
            yield path, str(k), True
            yield from _texts(v, path)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _texts(v, f"{where}[{i}]")


def leaks(record: Any, identities: set[str] | None = None) -> list[str]:
    """Every identity or path found in a record, as 'field: problem' lines (empty when clean).

    Without `identities` this machine's names are looked up (socket.getfqdn may ask DNS): to check
    many records, look them up once with local_identities() and pass them."""
    ids = local_identities() if identities is None else identities
    names = identity_regex(frozenset(ids))
    problems = []
    for path, text, is_key in _texts(record):
        if is_key and text.lower() in FORBIDDEN_KEYS:
            problems.append(f"{path}: key '{text}' names host, user or location")
        for m in IDENTITY_PATTERN.finditer(text):
            problems.append(f"{path}: {_KIND.get(m.lastgroup or '', 'identity')} '{m.group(0)}'")
        for m in names.finditer(text) if names is not None else ():
            problems.append(f"{path}: host or user name '{m.group(0)}'")
    return sorted(set(problems))


def scrub(text: str, identities: set[str] | None = None) -> str:
    """Free text made safe for evidence: the one scrubber (results/records/scrub.py) with this machine's
    names looked up now (not cached), so nothing identifying reaches a store."""
    return _scrub(text, local_identities() if identities is None else identities)
