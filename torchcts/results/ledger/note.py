"""A record's `expectation`: the ledger entry that matched its case and what the ledger made of it.

The record keeps it as JSON (model/record.py: its schema is the ledger's, as `precision` is the
oracle's); the ledger writes it (`apply.py`) and every reader takes it through `LedgerNote.from_json`,
which checks each field of what may be a crafted record (a wrong type reads as unset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class LedgerNote:
    """What cases.jsonl holds in a record's `expectation`."""

    entry: int | None  # the entry's index in the manifest's expectations; None: none of this ledger (edited)
    status: Any = None  # the entry's status (known_failure, known_crash, ...), as the entry says it
    reason: Any = None  # the entry's reason, as written
    tracker: Any = None  # the entry's tracker, when it names one
    expires: Any = None  # the entry's expiry date, when it has one
    expired: bool = False  # the entry expired at the run's date
    # Why the entry did not forgive the record (another signature; a crash on a device that never
    # forgives one), or that the case passed and the entry should go; None when it forgave it.
    note: str | None = None
    original_status: str | None = None  # the status the ledger turned into xfailed

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"entry": self.entry, "status": self.status, "reason": self.reason}
        for key in ("tracker", "expires"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.expired:
            out["expired"] = True
        for key in ("note", "original_status"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_json(cls, note: Any) -> LedgerNote | None:
        """A record's `expectation`, typed; None for a record no entry matched."""
        if not isinstance(note, dict) or not note:
            return None
        entry, says, original = note.get("entry"), note.get("note"), note.get("original_status")
        return cls(entry=entry if type(entry) is int else None, status=note.get("status"), reason=note.get("reason"),
                   tracker=note.get("tracker"), expires=note.get("expires"), expired=note.get("expired") is True,
                   note=says if isinstance(says, str) else None,
                   original_status=original if isinstance(original, str) else None)

    def names_entry_of(self, entries: list[Any]) -> bool:
        """The note names an entry of this ledger (an edited record may name any number)."""
        return self.entry is not None and 0 <= self.entry < len(entries)
