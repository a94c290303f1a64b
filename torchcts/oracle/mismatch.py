"""What a failed comparison reports, kept free of torch so the run controller never imports it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Mismatch:
    """What differs between actual and expected, JSON-able."""

    what: str
    path: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatched: int | None = None
    total: int | None = None
    first_index: list[int] | None = None
    first_actual: Any = None
    first_expected: Any = None
    atol: float | None = None
    rtol: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, "")}

    @classmethod
    def from_json(cls, data: Any) -> Mismatch | None:
        """A record's `mismatch` object typed for its readers (reports, triage), each field checked:
        the record is untrusted, and a field of the wrong type reads as unset (as Precision.from_json).
        None for a record without one."""
        if not isinstance(data, dict) or not data:
            return None

        def text(key: str) -> str:
            value = data.get(key)
            return value if isinstance(value, str) else ""

        def number(key: str) -> float | None:
            value = data.get(key)
            return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None  # as written

        def count(key: str) -> int | None:
            value = data.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        index = data.get("first_index")
        extra = data.get("extra")
        return cls(what=text("what"), path=text("path"), max_abs_error=number("max_abs_error"),
                   max_rel_error=number("max_rel_error"), mismatched=count("mismatched"), total=count("total"),
                   first_index=index if isinstance(index, list) and all(type(i) is int for i in index) else None,
                   first_actual=data.get("first_actual"), first_expected=data.get("first_expected"),
                   atol=number("atol"), rtol=number("rtol"), extra=extra if isinstance(extra, dict) else {})

    def describe(self) -> str:
        loc = f" at {self.path}" if self.path else ""
        layouts = ""
        if self.extra.get("actual_layout"):
            layouts = f"; got {self.extra['actual_layout']}, expected {self.extra['expected_layout']}"
        if self.max_abs_error is None:
            shown = "" if self.first_actual is None and self.first_expected is None else \
                f": got {_short(self.first_actual)}, expected {_short(self.first_expected)}"  # both sides: what differs
            return f"{self.what}{loc}{shown}{layouts}"
        return (
            f"{self.what}{loc}: {self.mismatched}/{self.total} elements differ, "
            f"max abs error {self.max_abs_error:.3g}, {self.relative()} "
            f"(atol {self.atol:.3g}, rtol {self.rtol:.3g}); first at index {self.first_index}: "
            f"got {self.first_actual}, expected {self.first_expected}{layouts}"
        )

    def relative(self) -> str:
        """The relative error, or why there is none: every differing element expects exactly 0."""
        if self.max_rel_error is not None:
            return f"max rel error {self.max_rel_error:.3g}"
        scale = self.extra.get("max_abs_expected")
        tail = f", the largest |expected| is {scale:.3g}" if isinstance(scale, (int, float)) else ""
        return f"no rel error (every differing element expects 0{tail})"


def _short(value: Any, limit: int = 200) -> str:
    """A side of a mismatch as the message shows it: a repr of any length is cut to `limit`."""
    text = str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class OracleMismatch(AssertionError):
    """The device result disagrees with the oracle: the case is `failed`."""

    def __init__(self, mismatch: Mismatch) -> None:
        self.mismatch = mismatch
        super().__init__(mismatch.describe())
