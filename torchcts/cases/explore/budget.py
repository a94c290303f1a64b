"""The exploration depth: explored samples per `opinfo/<op>/<dtype>/explore` case.

`torchcts run --explore N` sets it; without the flag it follows the top level the run selects
(`--level`, else the manifest's semantic_level): quick where a run is a presubmit, deeper where it
is a release run. Each explored sample goes through every variant the op has (forward, in-place,
out=, backward where claimed), so a case costs about depth x variants x 2 calls (device and CPU).
Costs measured on this project's 2-core machine: docs/exploration.md.
"""

from __future__ import annotations

# top selected level -> default depth
DEPTH_BY_LEVEL: dict[int, int] = {1: 0, 2: 2, 3: 3, 4: 3, 5: 4, 6: 4, 7: 4, 8: 4}
MAX_DEPTH = 100_000


def default_depth(top_level: int) -> int:
    """The depth a run whose selection tops out at `top_level` explores by default."""
    return DEPTH_BY_LEVEL.get(top_level, DEPTH_BY_LEVEL[max(DEPTH_BY_LEVEL)])


def samples_for(depth: int, slots: int) -> int:
    """Explored samples of one case: the depth, raised to the op's switch points + 1 (`slots`) up to
    3 x depth, so each switch point is tried at least once where that fits (generate.py's order)."""
    return 0 if depth <= 0 else max(depth, min(slots, 3 * depth))
