"""The one scrubber: keep host identity out of everything TorchCTS writes or prints (README, "Results").

Tracebacks, faulthandler output and exception messages name files by absolute path, which carry
the user's home, the checkout location and the temp folder; backend messages may name the host,
the user or an address. Every text written into a run folder or an evidence store passes through
`scrub` (records through `scrub_obj`), so `results/` can be committed and shared:

- paths under known locations become placeholders (`<site-packages>/torch/x.py`, `<torchcts>/...`,
  `<tmp>/...`, `./...` under the working directory), so stacks stay readable;
- any other absolute path, `file:` URL, UNC path, `~/` or `../` path becomes `<path:BASENAME>`;
- IPv4/IPv6 and MAC addresses become `<ip>` / `<mac>`, `user@host` and this machine's host and
  user names become `<redacted>`.

`evidence/privacy.py` detects the same patterns (`IDENTITY_PATTERN`) to refuse a store that leaks.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
import site
import socket
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

# Identities too generic to identify anyone (and that would match ordinary words in records).
GENERIC = frozenset({"root", "localhost", "user", "runner", "admin", "cpu", "cuda", "mps", "xpu", "rocm", "sim",
                     "meta", "host", "test", "ubuntu", "debian", "docker", "build", "ci"})


@functools.lru_cache(maxsize=1)
def _replacements() -> tuple[tuple[str, str], ...]:
    pairs: dict[str, str] = {}

    def add(path: str | None, label: str) -> None:
        if not path:
            return
        for p in {path, os.path.realpath(path)}:
            if len(p) > 1 and p not in pairs:
                pairs[p] = label

    add(str(Path(__file__).resolve().parents[3]), "<torchcts>")  # results/records/ in torchcts/ in it
    for name in ("purelib", "platlib", "stdlib", "platstdlib"):
        add(sysconfig.get_paths().get(name), f"<{name}>")
    for p in getattr(site, "getsitepackages", list)():
        add(p, "<site-packages>")
    add(getattr(site, "getusersitepackages", lambda: None)(), "<user-site>")
    add(sys.prefix, "<prefix>")
    add(sys.base_prefix, "<prefix>")
    try:
        add(os.getcwd(), ".")
    except OSError:  # the working folder was removed: nothing to shorten
        pass
    add(tempfile.gettempdir(), "<tmp>")
    # Longest first, so a path inside another is replaced by its own, more precise label.
    return tuple(sorted(pairs.items(), key=lambda kv: -len(kv[0])))


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


_H = "[0-9A-Fa-f]{1,4}"
_END = r"[^\s\"'<>`|]*"  # the rest of a path: up to white space, a quote or markup
# Each alternative is one kind of identity; the name says what it becomes.
IDENTITY_PATTERN = re.compile(
    "|".join(f"(?P<{name}>{rx})" for name, rx in (
        ("file_url", rf"\bfile:(?://[^/\s\"'<>]*)?/{_END}"),
        ("unc", rf"(?<![\w\\])\\\\[^\\\s\"'<>]+\\{_END}"),
        ("drive", rf"(?<![\w])[A-Za-z]:[\\/]{_END}"),
        # POSIX absolute, anywhere in a token: at its start, inside quotes, after `=` or `:` (`PATH=/a:/b`,
        # `--prefix=/x`) and after a compiler's `-I`, `-L` (`-I/srv/p/include`); not glued to a word, a
        # placeholder or a URL ("a/b", "<tmp>/x" pass; "http://h/x" has no name right after its slashes).
        ("posix", r"(?:(?<![\w./<>\\-])|(?<=-[IL]))/[\w.@+-]+(?:/[\w.@+-]*)*"),
        ("home", rf"(?<![\w])~[\w.-]*[\\/]{_END}"),
        ("up", rf"(?<![\w.])(?:\.\.[\\/])+{_END}"),
        ("mac", r"(?<![\w:-])[0-9A-Fa-f]{2}(?P<macsep>[:-])[0-9A-Fa-f]{2}(?:(?P=macsep)[0-9A-Fa-f]{2}){4}(?![\w:-])"),
        ("ipv6", rf"(?<![\w:])(?!(?:c10|aten|prims|at)::)(?:(?:{_H}:){{7}}{_H}|(?:{_H}:){{1,6}}(?::{_H}){{1,6}})(?![\w:])"),
        ("ipv4", r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?!\.?\d)(?!\w)"),
        ("email", r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\b"),
    ))
)
PATH_KINDS = ("file_url", "unc", "drive", "posix", "home", "up")


def _basename(path: str) -> str:
    return re.split(r"[\\/]", path.rstrip("/\\"))[-1] or "/"


def _replace(m: re.Match[str]) -> str:
    kind = m.lastgroup or ""
    if kind in PATH_KINDS:
        return f"<path:{_basename(m.group(0))}>"
    return {"mac": "<mac>", "ipv6": "<ip>", "ipv4": "<ip>"}.get(kind, "<redacted>")


@functools.lru_cache(maxsize=8)
def identity_regex(identities: frozenset[str]) -> re.Pattern[str] | None:
    if not identities:
        return None
    alts = "|".join(re.escape(i) for i in sorted(identities, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alts})(?![\w-])", re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def _default_identities() -> frozenset[str]:
    return frozenset(local_identities())


def scrub(text: str, identities: set[str] | frozenset[str] | None = None) -> str:
    """`text` with known path prefixes labelled, any other path reduced to its base name, and
    addresses, e-mail style `user@host` and this machine's host and user names redacted."""
    for path, label in _replacements():
        if path in text:
            text = text.replace(path, label)
    text = IDENTITY_PATTERN.sub(_replace, text)
    rx = identity_regex(frozenset(identities) if identities is not None else _default_identities())
    return rx.sub("<redacted>", text) if rx is not None else text


@functools.lru_cache(maxsize=4096)
def _scrub_short(text: str, identities: frozenset[str]) -> str:
    return scrub(text, identities)


def _scrub_field(text: str) -> str:
    """Record keys and short values (status, suite, dtype, op) repeat in every record, and the
    pattern scan costs microseconds per string: the controller scrubs each distinct one once."""
    return _scrub_short(text, _default_identities()) if len(text) <= 64 else scrub(text)


def scrub_obj(obj: Any) -> Any:
    """A JSON-able value with every string (keys too) scrubbed."""
    if isinstance(obj, str):
        return _scrub_field(obj)
    if isinstance(obj, dict):
        return {_scrub_field(str(k)): scrub_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub_obj(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    return scrub(str(obj))  # what json.dumps(default=str) would write
