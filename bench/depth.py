#!/usr/bin/env python3
"""Cost of the detection-depth suites (docs/depth.md), one bug class at a time (a script, not a test).

Runs each class's suite alone, as a user would (`torchcts run --validation --suite NAME`), and
prints one JSON object: wall time, case counts, `case_s`, the sum of the cases' own durations
(what the suite adds to a full run's work, which the run's workers share), and `cpu_s`, the CPU
time of the run's processes (start-up included; steadier than wall time on a loaded machine). compiler_ops runs
only where `compile` is claimed, so it is measured on CPU with a manifest claiming it and the
aot_eager backend. The whole default level is not rerun (too long for a shared machine): its
added wall time is about the sum of `case_s` divided by the number of workers.

    python bench/depth.py [--output FILE] [--suite NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
COMPILE_MANIFEST = """manifest = {
    "manifest_version": 1, "device_name": "cpu", "semantic_level": 6,
    "supported_dtypes": {"float32": True},
    "capabilities": {"inference": True, "compile": True, "training": False, "rng": False,
                     "device_api": False, "multi_device": False},
}
"""


def measure(suite: str, work: Path, env: dict[str, str]) -> dict[str, object]:
    args = ["run", "--validation", "--suite", suite, "--", "-q"]
    if suite == "compiler_ops":
        (work / "compile_manifest.py").write_text(COMPILE_MANIFEST)
        args = ["run", "--device", "cpu", "--manifest", "compile_manifest.py", "--suite", suite, "--", "-q"]
        env = {**env, "TORCHCTS_COMPILE_BACKEND": "aot_eager"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, code = torchcts(args, work, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    recs = [json.loads(line) for line in (latest(work) / "cases.jsonl").read_text().splitlines() if line.strip()]
    statuses: dict[str, int] = {}
    for r in recs:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return {"class": CLASSES[suite], "command": "torchcts " + " ".join(args), "exit": code, "wall_s": round(wall, 1),
            "cases": len(recs), "statuses": statuses,
            "case_s": round(sum(r.get("duration_s", 0.0) for r in recs), 1), "cpu_s": round(cpu, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--suite", action="append", choices=sorted(CLASSES), help="only these suites")
    ap.add_argument("--output", help="also write the JSON here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="torchcts-depth-"))
    env = {**os.environ, "CI": "true", "TORCHCTS_CACHE_DIR": str(work / "cache"), "PYTHONUNBUFFERED": "1"}
    out: dict[str, object] = {"cpus": os.cpu_count(), "load_average_before": [round(x, 1) for x in os.getloadavg()]}
    out.update({suite: measure(suite, work, env) for suite in args.suite or CLASSES})
    out["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    emit(out, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
