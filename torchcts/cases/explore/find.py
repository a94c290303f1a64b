"""What an explore case found, for the case's own rerun without the dispatch observer.

A failing case runs again without the observer (engine/runner.py). Its failure hands that run the
find (cases/observe.py: `hand_to_rerun`), which confirms it on the shrunk input instead of exploring
and shrinking again, and keeps the record of how it was found. Never stored: the corpus entry is
what a file holds (corpus.py), the record what the case record's `info` holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchcts.cases.explore.corpus import Entry


@dataclass(frozen=True)
class Find:
    """One explored failure: the input to confirm it on, how it was found, what was explored."""

    entry: Entry  # the shrunk input with the original, as saved to the corpus (its file name set)
    record: dict[str, Any]  # the record's `info["explore"]`: variant, index, recipe, failure, shrink counts
    explored: dict[str, int] = field(default_factory=dict)  # the finding run's counts (`info["explored"]`)
