"""Which expectations-ledger entries name which cases and records.

The entries' structure is checked when the manifest loads (manifest/expectations.py); this is the
matching the Recorder applies to every record (results/ledger/apply.py) and `check-manifest` applies to
the case registry (`registry_problems`). An op selector matches the ops a case exercises
(`cases/ops.py: case_matches_op`), the same rule as `--op` selection and coverage.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import Any

from torchcts.cases.ops import case_matches_op
from torchcts.cases.registry import SUITES, suite_cases
from torchcts.manifest.expectations import selector_values
from torchcts.manifest.schema import dtype_name


def _any_glob(patterns: list[str]):  # a compiled regex's match method
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


class EntryMatcher:
    """An entry's `match`, compiled once: a run checks every record against every entry."""

    def __init__(self, entry: dict[str, Any]) -> None:
        match = entry.get("match")
        self.glob = _any_glob([match]) if isinstance(match, str) else None
        self.fields: list[tuple[str, Any]] = []
        self.ops: list[str] | None = None
        self.empty = not isinstance(match, (str, dict)) or not match
        if isinstance(match, dict):
            for key, value in match.items():
                pats = selector_values(value)
                if key == "op":
                    self.ops = pats
                elif key == "dtype":
                    self.fields.append(("dtype", _any_glob([dtype_name(p) or p for p in pats])))
                else:
                    self.fields.append(("id" if key == "case" else key, _any_glob(pats)))

    def __call__(self, item: dict[str, Any]) -> bool:
        """Whether the entry names a case, given as a record or Case.to_json() (id, suite, ops, dtype, kind)."""
        if self.empty:
            return False
        if self.glob is not None:
            return self.glob(str(item.get("id", ""))) is not None
        for name, match in self.fields:
            value = item.get(name)
            if value is None and name == "dtype" or match(str(value or "")) is None:
                return False
        if self.ops is not None:
            return case_matches_op(item, self.ops)
        return True


class LedgerMatcher:
    """All entries compiled together: `first(item)` is the index of the first entry naming the case.

    Case-id globs are one alternation regex (tried in entry order, in C); selectors are checked
    one by one, only those before the first matching glob.
    """

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.globs = [i for i, e in enumerate(entries) if isinstance(e.get("match"), str) and e["match"]]
        self.regex = re.compile("|".join(f"({fnmatch.translate(entries[i]['match'])})" for i in self.globs)).match \
            if self.globs else None
        self.selectors = [(i, EntryMatcher(e)) for i, e in enumerate(entries) if isinstance(e.get("match"), dict)]

    def first(self, item: dict[str, Any]) -> int | None:
        found = None
        if self.regex is not None:
            m = self.regex(str(item.get("id", "")))
            if m is not None:
                found = self.globs[next(g for g in range(len(self.globs)) if m.group(g + 1) is not None)]
        for i, matcher in self.selectors:
            if found is not None and i > found:
                break
            if matcher(item):
                return i
        return found


def outside_selection(entries: list[dict[str, Any]], selected: Iterable[Any], left_out: Iterable[Any]) -> list[int]:
    """The entries that name none of the `selected` cases but some case the selection `left_out`
    (model/case.py: Case): a focused run does not judge them, so they are not "unmatched". An
    entry naming no case at all stays unmatched (stale). Stops scanning once each entry is placed."""
    pending = {i: EntryMatcher(e) for i, e in enumerate(entries)}
    for case in selected:
        if not pending:
            return []
        view = case.to_json()
        pending = {i: m for i, m in pending.items() if not m(view)}
    outside = []
    for case in left_out:
        if not pending:
            break
        view = case.to_json()
        for i in [i for i, m in pending.items() if m(view)]:
            outside.append(i)
            del pending[i]
    return sorted(outside)


def matches(entry: dict[str, Any], item: dict[str, Any]) -> bool:
    """Whether an entry's `match` names a case (one-off; compile with EntryMatcher for many)."""
    return EntryMatcher(entry)(item)


def _suites_for(entry: dict[str, Any]) -> list[str] | None:
    """The suites an entry can name (to build only those), None when any suite may match."""
    match = entry.get("match")
    if isinstance(match, str):
        head = match.split("/", 1)[0]
        return None if any(ch in head for ch in "*?[") else [head]
    if isinstance(match, dict) and "suite" in match:
        return [s for s in SUITES if any(fnmatch.fnmatchcase(s, p) for p in selector_values(match["suite"]))]
    return None


def registry_problems(entries: list[dict[str, Any]], cases: Iterable[dict[str, Any]] | None = None) -> list[str]:
    """Entries whose match names no known case (docs/ledger.md: selectors that match no op are errors).

    Builds the case list lazily, and only the suites the entries can name.
    """
    if not entries:
        return []
    if cases is None:
        wanted: set[str] = set()
        for entry in entries:
            wanted.update(_suites_for(entry) or SUITES)
        cases = [c.to_json() for s in SUITES if s in wanted for c in suite_cases(s)]
    known = list(cases)
    problems = []
    for i, entry in enumerate(entries):
        matcher = EntryMatcher(entry)
        if not any(matcher(c) for c in known):
            problems.append(
                f"match {entry.get('match')!r} names no known case under expectations[{i}].match: "
                "check the case id glob or selector (`torchcts show-skips --details` lists case ids)"
            )
    return problems
