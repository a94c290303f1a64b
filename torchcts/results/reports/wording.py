"""Counts in words: "1 cluster", "2 clusters". Every line a report prints with a count says it
right, so a reader never stops at "1 clusters"."""

from __future__ import annotations


def plural(count: int, one: str, many: str | None = None) -> str:
    """`count` with the noun in the number it needs (`many` defaults to `one` + "s")."""
    return f"{count} {one if count == 1 else many or one + 's'}"
