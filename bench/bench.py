#!/usr/bin/env python3
"""TorchCTS benchmark (a script, not a test): collection, first result, throughput, overhead.

Runs `torchcts` as a user would (subprocesses, `--validation` on CPU) in a scratch folder and
prints one JSON object; `--output FILE` also writes it so runs can be compared over time.

    python bench/bench.py                 # everything except the full default level
    python bench/bench.py --full          # also the full default level (long)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def torchcts(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 7200) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "torchcts", *args], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    return time.perf_counter() - start, proc.returncode


def latest(cwd: Path) -> Path:
    from torchcts.results.rundir import latest_run

    run = latest_run(cwd / "results")
    if run is None:
        raise SystemExit(f"no run under {cwd / 'results'}")
    return run


def first_result_seconds(cwd: Path, env: dict[str, str], args: list[str]) -> float | None:
    """Seconds from the shell command to the first executed case's record on disk."""
    root = cwd / "results"
    before = set(root.glob("2*")) if root.exists() else set()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "torchcts", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    found = None
    while found is None:
        for run in (set(root.glob("2*")) - before) if root.exists() else ():
            cases = run / "cases.jsonl"
            lines = cases.read_text().splitlines() if cases.exists() else []
            if any('"status": "passed"' in line or '"status": "failed"' in line for line in lines):
                found = time.perf_counter() - start
        if found is None and proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.wait()
    return round(found, 2) if found is not None else None


def throughput(cwd: Path, env: dict[str, str], args: list[str]) -> dict[str, float]:
    wall, code = torchcts(args, cwd, env)
    run = latest(cwd)
    recs = [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines() if line.strip()]
    executed = [r for r in recs if r.get("status") not in ("not_claimed", "not_applicable", "filtered")]
    return {
        "wall_s": round(wall, 2),
        "exit": code,
        "cases_executed": len(executed),
        "records": len(recs),
        "cases_per_s": round(len(executed) / wall, 1) if wall else 0.0,
        "results_bytes": sum(p.stat().st_size for p in run.rglob("*") if p.is_file()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--full", action="store_true", help="also run the full default level (level 8)")
    ap.add_argument("--workers", default="auto", help="pytest-xdist workers for throughput runs")
    ap.add_argument("--dtype", action="append", default=[], help="restrict the level-2/full runs to these dtypes")
    ap.add_argument("--max-samples", type=int, help="cap OpInfo samples per case in the level-2/full runs")
    ap.add_argument("--output", help="also write the JSON here")
    ap.add_argument("--small", type=int, default=20, help="trivial cases in the small overhead run")
    ap.add_argument("--large", type=int, default=400, help="trivial cases in the large overhead run")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="torchcts-bench-"))
    cache = work / "cache"
    env = {**os.environ, "CI": "true", "TORCHCTS_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"}
    out: dict[str, object] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    import torch

    out["torch"] = torch.__version__

    collect = ["show-skips", "--validation", "--level", "8"]
    out["collect_level8_cold_s"] = round(torchcts(collect, work, env)[0], 2)
    out["collect_level8_warm_s"] = round(torchcts(collect, work, env)[0], 2)
    out["help_s"] = round(torchcts(["--help"], work, env)[0], 2)
    one_op = ["run", "--validation", "--op", "add", "--dtype", "float32", "--", "-q"]
    out["first_result_one_op_s"] = first_result_seconds(work, env, one_op)
    out["one_op_wall_s"] = round(torchcts(one_op, work, env)[0], 2)

    from overhead import MODES, timed_run  # the marginal-cost method: (T(large) - T(small)) / delta

    for name, extra in MODES.items():
        (ws, cs), (wl, cl) = timed_run(args.small, extra), timed_run(args.large, extra)
        n = args.large - args.small
        out[f"overhead {name}"] = {"wall_ms_per_case": round((wl - ws) / n * 1000, 2),
                                   "cpu_ms_per_case": round((cl - cs) / n * 1000, 2),
                                   "startup_wall_s": round(ws, 2)}

    narrow = [a for d in args.dtype for a in ("--dtype", d)]
    narrow += ["--max-samples", str(args.max_samples)] if args.max_samples else []
    out["throughput_selection"] = narrow or "all dtypes, all samples"
    out["level2"] = throughput(work, env, ["run", "--validation", "--level", "2", *narrow, "--", "-q", "-n", args.workers])
    if args.full:
        out["default_level"] = throughput(work, env, ["run", "--validation", *narrow, "--", "-q", "-n", args.workers])
    out["peak_rss_mb_children"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)

    emit(out, args.output)
    return 0


def emit(out: dict[str, object], output: str | None) -> None:
    """Print the results as JSON, and write them to `output` when given."""
    text = json.dumps(out, indent=2)
    print(text)
    if output:
        Path(output).write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
