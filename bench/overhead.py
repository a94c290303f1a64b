#!/usr/bin/env python3
"""Per-case harness overhead of `torchcts run`, with and without isolation (a script, not a test).

Runs a suite of trivial cases at two sizes in each mode and reports the fixed start-up cost and
the marginal cost per case, (T(large) - T(small)) / (large - small), which cancels start-up.

    PYTHONPATH=. python3 bench/overhead.py [--small 20] [--large 400]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


MODES = {
    "in-process (--no-isolation)": ["--no-isolation"],
    "isolated, 1 worker (-n 1)": ["--", "-n", "1"],
    "isolated, default workers": [],
}


def children_cpu() -> float:
    """CPU time (user + sys) of finished child processes: less sensitive to machine load than wall time."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed_run(n: int, extra: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process tree) of one run of n trivial cases."""
    env = {**os.environ, "CI": "true", "TORCHCTS_EXTRA_SUITES": "trivial=trivial_suite",
           "TORCHCTS_BENCH_CASES": str(n),
           "PYTHONPATH": os.pathsep.join([str(HERE.parent), str(HERE), os.environ.get("PYTHONPATH", "")])}
    pytest_args = ["-q", "-p", "no:benchmark"]
    args = [sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--suite", "trivial"]
    args += extra + pytest_args if "--" in extra else [*extra, "--", *pytest_args]
    with tempfile.TemporaryDirectory() as cwd:
        cpu0 = children_cpu()
        start = time.perf_counter()
        r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        cpu = children_cpu() - cpu0
    if r.returncode != 0:
        raise SystemExit(f"run failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return elapsed, cpu


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", type=int, default=20)
    p.add_argument("--large", type=int, default=400)
    args = p.parse_args()
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    t_small, t_large = f"T({args.small})", f"T({args.large})"
    print(f"{'mode':30} {'wall ' + t_small:>12} {'wall ' + t_large:>12} {'wall/case':>10} "
          f"{'cpu ' + t_small:>11} {'cpu ' + t_large:>11} {'cpu/case':>9}")
    for name, extra in MODES.items():
        (ws, cs), (wl, cl) = timed_run(args.small, extra), timed_run(args.large, extra)
        n = args.large - args.small
        print(f"{name:30} {ws:11.2f}s {wl:11.2f}s {(wl - ws) / n * 1000:8.2f}ms "
              f"{cs:10.2f}s {cl:10.2f}s {(cl - cs) / n * 1000:7.2f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
