#!/usr/bin/env python3
"""Size and cost of the generated suite (docs/coverage.md, "Generated cases"): a script, not a test.

Prints one JSON object: remaining surfaces, cases (value / properties checks), surfaces without
a case by reason (excluded by family, unsafe, no generator), the time to build the plan from the
other suites' cached lists, and to load the suite's own cached list. With `--run`, also runs the
suite as a user would (`torchcts run --validation --suite generated`) and adds its wall time and
status counts, with the most common pending reasons.

    python bench/generated.py [--run]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import emit, latest, torchcts  # noqa: E402


def plan_numbers() -> dict:
    from torchcts.cases.registry import SUITES, suite_cases
    from torchcts.cases.schema.build import SUITE, plan

    others = [c for n, s in SUITES.items() if n != SUITE and s.module.startswith("torchcts.") for c in suite_cases(n)]
    start = time.perf_counter()
    cases, skipped = plan(others)
    build_s = time.perf_counter() - start
    suite_cases(SUITE)  # fill the cache, then time a load
    start = time.perf_counter()
    suite_cases(SUITE)
    load_s = time.perf_counter() - start
    kinds = Counter(why.split(":")[0] for why in skipped.values())
    families = Counter(why.split(": ", 1)[1] for why in skipped.values() if why.startswith("excluded"))
    return {
        "remaining_surfaces": len({c.params["overload"] for c in cases}) + len(skipped),
        "cases": len(cases),
        "checks": dict(Counter(c.params["check"] for c in cases)),
        "without_case": dict(kinds),
        "excluded_by_family": dict(families.most_common()),
        "unsafe_or_unsupported": {k: v for k, v in skipped.items() if not v.startswith("excluded")},
        "plan_build_s": round(build_s, 3),
        "cached_load_s": round(load_s, 4),
    }


def run_numbers() -> dict:
    from torchcts.results.records.rundir import final_records

    with tempfile.TemporaryDirectory() as tmp:
        wall, _ = torchcts(["run", "--validation", "--suite", "generated", "--level", "8"], Path(tmp), dict(os.environ))
        recs = final_records(latest(Path(tmp)))
    pending = Counter(r.message.split("(first: ", 1)[-1][:80] for r in recs if r.status == "pending")
    return {"run_wall_s": round(wall, 1), "statuses": dict(Counter(r.status for r in recs)),
            "top_pending_reasons": dict(pending.most_common(10))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="store_true", help="also run the suite with --validation")
    args = parser.parse_args()
    out = plan_numbers()
    if args.run:
        out.update(run_numbers())
    emit(out, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
