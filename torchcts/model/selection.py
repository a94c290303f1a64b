"""What the user selected (`--suite`, `--op`, `--dtype`, the levels, `--case`, `--sample`, `--shard`):
run.json's "selection", read by every process of the run (engine/selection.py applies it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Selection:
    suites: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)
    level: int | None = None
    level_exact: int | None = None
    level_range: tuple[int, int] | None = None
    max_samples: int | None = None
    sample: int | None = None  # run only this OpInfo sample index (a failure's repro)
    shard: tuple[int, int] | None = None
    # Per-case durations of an earlier run to balance shards (not written to run.json).
    shard_durations: dict[str, float] | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("shard_durations")
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Selection:
        d = dict(data)
        for key in ("level_range", "shard"):
            if d.get(key) is not None:
                d[key] = tuple(d[key])
        return cls(**d)

    def levels(self, default: int) -> tuple[int, int]:
        if self.level_exact is not None:
            return self.level_exact, self.level_exact
        if self.level_range is not None:
            return self.level_range
        return 1, self.level if self.level is not None else default
