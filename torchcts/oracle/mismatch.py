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

    def describe(self) -> str:
        loc = f" at {self.path}" if self.path else ""
        if self.max_abs_error is None:
            return f"{self.what}{loc}"
        return (
            f"{self.what}{loc}: {self.mismatched}/{self.total} elements differ, "
            f"max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g} "
            f"(atol {self.atol:.3g}, rtol {self.rtol:.3g}); first at index {self.first_index}: "
            f"got {self.first_actual}, expected {self.first_expected}"
        )


class OracleMismatch(AssertionError):
    """The device result disagrees with the oracle: the case is `failed`."""

    def __init__(self, mismatch: Mismatch) -> None:
        self.mismatch = mismatch
        super().__init__(mismatch.describe())
