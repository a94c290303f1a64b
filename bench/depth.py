#!/usr/bin/env python3
"""Cost of the detection-depth suites (docs/depth.md), one bug class at a time (a script, not a test).

Per class (suite): its case count per level (from the registry), then the suite run alone as a
user would (`torchcts run --validation --suite NAME`): wall time, `cpu_s` (user + sys of the run's
processes, start-up included: steadier than wall time on a shared machine), `case_s` (the sum of
the cases' own durations: what the suite adds to a full run's work, shared by its workers), the
statuses, and the load average around it. compiler_ops runs only where `compile` is claimed
(`--validation` does not claim it), so it is measured on CPU with a manifest claiming it and the
aot_eager backend.

`--default-level` also runs the default level (`run --validation`, every suite at the validation
manifest's level) before (every suite but the depth ones) and after (all suites), and reports the
ratio against the issue's budget (after <= 1.5 x before) in wall and CPU time. That is two full
runs (about 15 min each on an idle 2-core machine): run it on a quiet machine. `--default-args`
narrows both runs alike (e.g. `--dtype float32 --max-samples 2` for a quick, rougher ratio).

    python bench/depth.py [--suite NAME ...] [--default-level [--default-args '...']] [--output FILE]
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench import emit, latest, torchcts  # noqa: E402

CLASSES = {
    "inplace_views": "in-place through views",
    "limits": "accumulation at dtype limits",
    "tiling": "sizes crossing tiling thresholds",
    "mixed_dtypes": "mixed dtypes",
    "random_ops": "random ops beyond shape",
    "compiler_ops": "compiler (torch.compile on OpInfo ops)",
}
BUDGET = 1.5  # issue 18: the default level stays within 1.5x its wall time without the depth suites
COMPILE_MANIFEST = """manifest = {
    "manifest_version": 1, "device_name": "cpu", "semantic_level": 6,
    "supported_dtypes": {"float32": True},
    "capabilities": {"inference": True, "compile": True, "training": False, "rng": False,
                     "device_api": False, "multi_device": False},
}
"""


def load() -> list[float]:
    return [round(x, 1) for x in os.getloadavg()]


def timed_run(args: list[str], work: Path, env: dict[str, str]) -> dict[str, object]:
    """One `torchcts` run: wall and CPU time, the load around it, and what its records say."""
    from torchcts.results.records.rundir import final_records

    before, load_before = resource.getrusage(resource.RUSAGE_CHILDREN), load()
    wall, code = torchcts(args, work, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    recs = final_records(latest(work))
    statuses: dict[str, int] = {}
    for r in recs:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    return {"command": "torchcts " + " ".join(args), "exit": code, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "cases": len(recs), "statuses": statuses, "case_s": round(sum((r.duration_s or 0.0) for r in recs), 1),
            "load_before": load_before, "load_after": load()}


def levels(suite: str) -> dict[int, int]:
    """Cases of the suite per level, as registered (before any claim or selection)."""
    from torchcts.cases.registry import suite_cases

    counts: dict[int, int] = {}
    for case in suite_cases(suite):
        counts[case.level] = counts.get(case.level, 0) + 1
    return dict(sorted(counts.items()))


def measure(suite: str, work: Path, env: dict[str, str]) -> dict[str, object]:
    args = ["run", "--validation", "--suite", suite, "--", "-q"]
    if suite == "compiler_ops":
        (work / "compile_manifest.py").write_text(COMPILE_MANIFEST)
        args = ["run", "--device", "cpu", "--manifest", "compile_manifest.py", "--suite", suite, "--", "-q"]
        env = {**env, "TORCHCTS_COMPILE_BACKEND": "aot_eager"}
    return {"class": CLASSES[suite], "cases_per_level": levels(suite), **timed_run(args, work, env)}


def default_level(work: Path, env: dict[str, str], extra: list[str]) -> dict[str, object]:
    """The default level before (no depth suite) and after (all suites), and the budget verdict."""
    from torchcts.cases.registry import SUITES

    others = [a for name in SUITES if name not in CLASSES for a in ("--suite", name)]
    before = timed_run(["run", "--validation", *others, *extra, "--", "-q"], work, env)
    after = timed_run(["run", "--validation", *extra, "--", "-q"], work, env)
    ratio = {k: round(after[k] / before[k], 3) for k in ("wall_s", "cpu_s") if before[k]}  # type: ignore[operator]
    return {"before": before, "after": after, "ratio": ratio, "budget": BUDGET,
            "within_budget": all(r <= BUDGET for r in ratio.values())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", action="append", choices=sorted(CLASSES), help="only these suites")
    ap.add_argument("--no-suites", action="store_true", help="skip the per-suite runs")
    ap.add_argument("--default-level", action="store_true", help="also time the default level before/after (long)")
    ap.add_argument("--default-args", default="", help="extra `run` flags for both default-level runs")
    ap.add_argument("--output", help="also write the JSON here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="torchcts-depth-"))
    env = {**os.environ, "CI": "true", "TORCHCTS_CACHE_DIR": str(work / "cache"), "PYTHONUNBUFFERED": "1"}
    out: dict[str, object] = {"cpus": os.cpu_count(), "load_average_before": load()}
    if not args.no_suites:
        out.update({suite: measure(suite, work, env) for suite in args.suite or CLASSES})
    if args.default_level:
        out["default_level"] = default_level(work, env, shlex.split(args.default_args))
    out["load_average_after"] = load()
    emit(out, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
