"""The one bounded parser of untrusted JSON and TOML (run folders, evidence stores, corpora, manifests).

`json.loads` and `tomllib.loads` accept what a crafted file can make expensive or fatal later:
nesting 100,000 levels deep raises RecursionError inside the parser (not a ValueError), and
nesting a few hundred levels deep parses but breaks every recursive reader after it (scrubbing,
`plain`, the HTML report). Integers of thousands of digits raise ValueError in Python 3.11+ only
where they are converted, and slow every comparison before. A file of the shared-artifact kind
(docs/security.md) is read here: whatever is out of bounds is a `ValueError` subclass the caller
already handles as "unreadable", never an exception that reads as TorchCTS's own failure (exit 3).
"""

from __future__ import annotations

import json
import os
import re
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from torchcts.errors import UsageError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["MAX_DEPTH", "MAX_FILE", "MAX_INT_DIGITS", "MAX_LINE", "NotRegular", "Unreadable", "check_depth",
           "device_type", "invisible", "loads", "loads_toml", "open_regular", "read_bounded", "read_lines"]

# Deeper than anything TorchCTS writes (a record nests about 6 levels; records.MAX_DEPTH writes
# deeper free-form values as text) and far below the interpreter's recursion limit.
MAX_DEPTH = 64
# Far longer than any integer TorchCTS writes (int64 has 19 digits), far below Python's own limit
# (4,300 digits, whose ValueError carries no `msg` and so once ended verify-evidence with exit 3).
MAX_INT_DIGITS = 400
# A whole file read at once (run.json, a manifest, an index): far past any TorchCTS writes (a run.json
# of a 100,000-entry ledger is a few MB), so a crafted 10 GB file is refused before it is read.
MAX_FILE = 64 << 20
# One line of a JSON-lines file (a record keeps its output tail and traceback short): a longer line,
# a newline-free 1 GB file included, is one unreadable line, skipped in 1 MB pieces, never held.
MAX_LINE = 8 << 20
# A JSON escape of a lone surrogate (\ud800-\udfff): json.loads makes a str no UTF-8 writer accepts.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class Unreadable(ValueError):
    """Valid syntax, out of bounds (too deep, an integer too long). `msg` as json.JSONDecodeError
    has it, so callers that print `exc.msg` need no second branch."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg


class NotRegular(Unreadable, UsageError):
    """A FIFO, a device, a socket or a folder where a file belongs: never opened for reading (a
    FIFO blocks the reader until someone writes to it). A ValueError to readers that count
    unreadable input, a UsageError (one line, exit 2) to the rest."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise Unreadable(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def loads(text: str | bytes) -> Any:
    """`json.loads(text)` bounded: nesting at most MAX_DEPTH, integers at most MAX_INT_DIGITS digits.
    Raises ValueError (json.JSONDecodeError, UnicodeDecodeError or Unreadable) for any bad input."""
    try:
        value = json.loads(text, parse_int=_int)
    except RecursionError:  # the C scanner recurses per level: a few thousand levels end it
        raise Unreadable(f"nested deeper than {MAX_DEPTH} levels") from None
    check_depth(value)
    if (_SURROGATE_ESCAPE if isinstance(text, str) else _SURROGATE_ESCAPE_BYTES).search(text):
        value = _no_surrogates(value)
    return value


def _no_surrogates(value: Any) -> Any:
    """`value` with each lone surrogate in a string (a key too) replaced by U+FFFD: Python's own
    writers (`str.encode("utf-8")`, a UTF-8 terminal) raise on one, so a record's id or message
    carrying `\\ud800` would end every report that shows it (exit 3). Pairs were joined by the parser."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in value.items()}
    return value


def loads_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads(text)` bounded as `loads` is (tomllib, pure Python, recurses per inline level)."""
    try:
        value = tomllib.loads(text)
    except RecursionError:
        raise Unreadable(f"nested deeper than {MAX_DEPTH} levels") from None
    except tomllib.TOMLDecodeError:
        raise
    except ValueError as exc:  # int() of a literal past Python's 4,300 digits, raised past tomllib's own errors
        raise Unreadable(str(exc).split(";")[0][:120]) from None
    check_depth(value)
    return value


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise Unreadable when `value` nests deeper than `limit` (iterative: never recurses itself)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            raise Unreadable(f"nested deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def device_type(device: Any) -> str | None:
    """The device type a rule is decided on, from untrusted text (run.json, a record): `MPS`,
    ` mps:0 `, `mps\u200b` and `\u2066mps\u2069` are all `mps`. Compatibility forms folded (NFKC),
    every format control (category Cf: zero-width, bidi, BOM, soft hyphen) and variation selector
    removed, case and index dropped: a spelling must not talk a device out of its rule. None for no device."""
    if not isinstance(device, str):
        return None
    text = unicodedata.normalize("NFKC", device)
    if not text.isascii():
        text = "".join(ch for ch in text if not invisible(ch))
    return text.strip().lower().partition(":")[0].strip() or None


def invisible(ch: str) -> bool:
    """A character that changes what text looks like without showing: every Unicode format control
    (category Cf: bidi controls, zero-width characters, shorthand format controls U+1BCA0-3, tags)
    and the variation selectors (VS1-16 and the supplement VS17-256, category Mn). The one rule, for
    device names here and for every text shown (results/reports/quoting.py)."""
    return unicodedata.category(ch) == "Cf" or "\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef"


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading in binary, refusing what is not a regular file (NotRegular) before
    it blocks: opened with O_NONBLOCK (a FIFO planted after the check opens without waiting) and
    checked again with fstat. OSError as open raises it (a missing file is the caller's case)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(f"{_where(path)} is not a regular file (a FIFO, a device or a folder)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most `limit` (default MAX_FILE) bytes; NotRegular or
    Unreadable (a ValueError) otherwise, read no further than the bound."""
    limit = MAX_FILE if limit is None else limit
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise Unreadable(f"{_where(path)} is larger than {limit:,} bytes")
    return data


def read_lines(fh: BinaryIO, limit: int | None = None) -> Iterator[bytes | None]:
    """Each line of `fh` (its newline kept), one at a time; None for a line longer than `limit`
    (default MAX_LINE) bytes, whose rest is skipped in 1 MB pieces: memory stays bounded whatever
    the file holds (a newline-free 1 GB file is one None)."""
    limit = MAX_LINE if limit is None else limit
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit:
            yield raw
            continue
        while not raw.endswith(b"\n"):
            raw = fh.readline(1 << 20)
            if not raw:
                break
        yield None


def _where(path: Path) -> str:
    """A file named as the refusals name it: its folder's name and its own, never an absolute path."""
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name
