#!/usr/bin/env python3
"""Memory and time of `report` on a run folder of many records (issue 51 item 9; a script, never a unit test).

Builds a run folder of N records (one in 50 failed, with a message and a traceback, the rest passed,
each a distinct case id in the plan) and runs `python -m torchcts report RUN` in a child process,
reporting its wall time and peak resident memory (ru_maxrss of the child). Optionally also a
newline-free sparse cases.jsonl of --long-line-mb MB (item 8: one unreadable line, memory bounded).

    PYTHONPATH=. python3 bench/big_runs.py --records 1000000 [--long-line-mb 1024] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(root: Path, records: int) -> Path:
    sys.path.insert(0, str(ROOT))
    from torchcts.manifest.templates import validation_manifest

    run_dir = root / "results" / "big"
    run_dir.mkdir(parents=True)
    manifest = validation_manifest().to_json()
    spec = {"name": "big", "torchcts": "0", "torch": {"torch": "2.x"}, "device": {"type": "cpu", "gate": "cpu"},
            "gate": "cpu", "validation": False, "manifest": manifest, "manifest_hash": "h", "selection": {},
            "started": "2026-01-01T00:00:00Z", "ended": None, "status": "complete", "filtered": 0, "planned": records}
    (run_dir / "run.json").write_text(json.dumps(spec))
    with open(run_dir / "cases.jsonl", "w") as cases, open(run_dir / "plan.jsonl", "w") as plan:
        for i in range(records):
            case_id = f"operators/elementwise/add_{i}/float32"
            plan.write(json.dumps({"id": case_id, "suite": "operators", "level": 1,
                                   "runner": "torchcts.cases.suites.operators:elementwise_add", "params": {},
                                   "ops": ["aten::add.Tensor"], "dtype": "float32", "dtypes": [], "requires": [],
                                   "oracle": "cpu", "kind": "", "not_applicable": None}) + "\n")
            record = {"id": case_id, "suite": "operators", "level": 1, "dtype": "float32", "status": "passed",
                      "duration_s": 0.01, "ops": ["aten::add.Tensor"]}
            if i % 50 == 0:
                record.update(status="failed", message=f"values differ at index {i}: 1.0 vs 2.0",
                              traceback="Traceback (most recent call last):\n  File x, line 1\nAssertionError\n")
            cases.write(json.dumps(record) + "\n")
    return run_dir


def measure(argv: list[str], cwd: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TORCHCTS_WARM": "0", "CI": "true"}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "torchcts", *argv], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KB on Linux: the largest child so far
    return {"argv": argv, "exit": proc.returncode, "wall_s": round(wall, 1), "peak_children_mb": round(peak / 1024),
            "stderr_tail": proc.stderr[-300:]}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--long-line-mb", type=int, default=0)
    p.add_argument("--out")
    args = p.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.long_line_mb:  # first: ru_maxrss of children is a running maximum
            long_dir = build(root / "long", 1)
            with open(long_dir / "cases.jsonl", "r+b") as fh:
                fh.truncate(args.long_line_mb << 20)
            results.append({"what": f"newline-free {args.long_line_mb} MB cases.jsonl",
                            **measure(["report", str(long_dir)], root / "long")})
        t0 = time.monotonic()
        run_dir = build(root / "big", args.records)
        results.append({"what": f"{args.records} records", "build_s": round(time.monotonic() - t0, 1),
                        **measure(["report", str(run_dir)], root / "big")})
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
