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
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "Unreadable", "check_depth", "loads", "loads_toml"]

# Deeper than anything TorchCTS writes (a record nests about 6 levels; records.MAX_DEPTH writes
# deeper free-form values as text) and far below the interpreter's recursion limit.
MAX_DEPTH = 64
# Far longer than any integer TorchCTS writes (int64 has 19 digits), far below Python's own limit
# (4,300 digits, whose ValueError carries no `msg` and so once ended verify-evidence with exit 3).
MAX_INT_DIGITS = 400


class Unreadable(ValueError):
    """Valid syntax, out of bounds (too deep, an integer too long). `msg` as json.JSONDecodeError
    has it, so callers that print `exc.msg` need no second branch."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg


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
