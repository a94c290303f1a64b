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


# A focused run (a few ops: the loop of a kernel engineer, `--op NAME`) explores deeper at the cost
# of a few seconds: FOCUSED_SAMPLES explored samples shared by its explore cases, at most
# FOCUSED_DEPTH each. A whole level's run has thousands of explore cases and keeps the level's depth.
FOCUSED_SAMPLES = 2048
FOCUSED_DEPTH = 128


def default_depth(top_level: int, explore_cases: int | None = None) -> int:
    """The depth a run whose selection tops out at `top_level` explores by default; with the number
    of explore cases it runs, a focused run's deeper share of FOCUSED_SAMPLES (never off where the
    level has exploration off)."""
    depth = DEPTH_BY_LEVEL.get(top_level, DEPTH_BY_LEVEL[max(DEPTH_BY_LEVEL)])
    if depth <= 0 or not explore_cases:
        return depth
    return max(depth, min(FOCUSED_DEPTH, FOCUSED_SAMPLES // explore_cases))


def samples_for(depth: int, slots: int) -> int:
    """Explored samples of one case: the depth, raised to the op's switch points + 1 (`slots`) up to
    3 x depth, so each switch point is tried at least once where that fits (generate.py's order)."""
    return 0 if depth <= 0 else max(depth, min(slots, 3 * depth))
