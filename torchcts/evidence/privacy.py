"""What must never be in evidence: absolute paths, host names, user names (and where to look for them).

The writer scrubs free text (exception messages) and then refuses any record that still leaks;
the verifier applies the same checks to a whole store, so a hand-edited record is caught too.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from collections.abc import Iterator
from typing import Any

# A POSIX absolute path not glued to a word (so "operators/core/zeros" and "1/2" pass), a Windows
# drive path, or a home-relative path.
_ABS_PATH = re.compile(r"(?<![\w.:/-])/(?:[\w.@+-]+)(?:/[\w.@+-]*)*|\b[A-Za-z]:[\\/][^\s\"']*|(?<!\w)~[\\/][^\s\"']*")
_USER_AT_HOST = re.compile(r"\b[\w.-]+@[\w-]+(?:\.[\w-]+)*\b")
# Keys that name identity or location; forbidden anywhere in a record.
FORBIDDEN_KEYS = frozenset({"host", "hostname", "node", "user", "username", "login", "home", "cwd", "path",
                            "env", "environ", "environment"})
# Identities too generic to identify anyone (and that would match ordinary words in records).
GENERIC = frozenset({"root", "localhost", "user", "runner", "admin", "cpu", "cuda", "mps", "xpu", "rocm"})


def local_identities() -> set[str]:
    """This machine's host and user names, as they could leak into a record."""
    found: set[str] = set()
    for get in (socket.gethostname, socket.getfqdn, getpass.getuser, lambda: os.path.basename(os.path.expanduser("~"))):
        try:
            value = get() or ""
        except Exception:  # noqa: BLE001 - no user database entry, no network name
            continue
        for v in (value, value.split(".")[0]):
            if len(v) >= 2 and v.lower() not in GENERIC:
                found.add(v)
    return found


def _strings(obj: Any, where: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(obj, str):
        yield where, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield f"{where}.{k}" if where else str(k), str(k)
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _strings(v, f"{where}[{i}]")


def _keys(obj: Any, where: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            path = f"{where}.{k}" if where else str(k)
            yield path, str(k)
            yield from _keys(v, path)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _keys(v, f"{where}[{i}]")


def leaks(record: Any, identities: set[str] | None = None) -> list[str]:
    """Every identity or path found in a record, as 'field: problem' lines (empty when clean)."""
    ids = local_identities() if identities is None else identities
    patterns = [(i, re.compile(rf"(?<![\w-]){re.escape(i)}(?![\w-])", re.IGNORECASE)) for i in sorted(ids)]
    problems = []
    for path, key in _keys(record):
        if key.lower() in FORBIDDEN_KEYS:
            problems.append(f"{path}: key '{key}' names host, user or location")
    for path, text in _strings(record):
        m = _ABS_PATH.search(text)
        if m:
            problems.append(f"{path}: absolute path '{m.group(0)}'")
        m = _USER_AT_HOST.search(text)
        if m:
            problems.append(f"{path}: user@host or e-mail '{m.group(0)}'")
        for ident, pat in patterns:
            if pat.search(text):
                problems.append(f"{path}: host or user name '{ident}'")
    return sorted(set(problems))


def scrub(text: str, identities: set[str] | None = None) -> str:
    """Free text made safe for evidence: paths reduced to their base name, identities redacted."""
    ids = local_identities() if identities is None else identities
    text = _ABS_PATH.sub(lambda m: "<path:" + re.split(r"[\\/]", m.group(0).rstrip("/\\"))[-1] + ">", text)
    text = _USER_AT_HOST.sub("<redacted>", text)
    for ident in sorted(ids, key=len, reverse=True):
        text = re.sub(rf"(?<![\w-]){re.escape(ident)}(?![\w-])", "<redacted>", text, flags=re.IGNORECASE)
    return text
