#!/usr/bin/env python3
"""A crash-heavy backend's wall time against a clean one's (issue 30 item 1; a script, not a test).

Runs the same selection on the sim clean and with a crashing fault planted (default
`reduce_float32_segv`: sum, mean and var on float32 kill the process), alternating the two `--pairs`
times, and writes per run: wall and CPU seconds, the cases run, how many crashed and how many the
crash budget stopped (`not_run`), the load average around it. The ratio fault / clean per pair is
the figure docs/speed.md quotes; alternating pairs show the noise.

    PYTHONPATH=. python3 bench/crash.py [--pairs 2] [--out bench/results-crash.json] [-- selection...]

The default selection is `--level 2 --dtype float32`. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAULT = "reduce_float32_segv"
SELECTION = ["--level", "2", "--dtype", "float32"]


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def statuses(results: Path) -> dict[str, int]:
    """Status counts of the one run under `results` (its cases.jsonl)."""
    sys.path.insert(0, str(HERE.parent))
    from torchcts.results import rundir

    run = rundir.latest_run(results)
    assert run is not None, f"no run under {results}"
    return dict(collections.Counter(str(rec.status) for rec in rundir.read_records(run)))


def one_run(fault: str, selection: list[str], workers: str) -> dict[str, object]:
    env = {**os.environ, "CI": "true", "TORCHCTS_SIM_FAULT": fault,
           "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as cwd:
        args = [sys.executable, "-m", "torchcts", "run", "--device", "sim", "--manifest", "torchcts:sim/manifest.py",
                *selection, "--results-dir", f"{cwd}/results", "--", "-q", "-n", workers]
        load0, cpu0, start = os.getloadavg()[0], children_cpu(), time.perf_counter()
        r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - start, children_cpu() - cpu0
        counts = statuses(Path(cwd) / "results")
    if r.returncode not in (0, 1):
        raise SystemExit(f"run failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    run = sum(n for s, n in counts.items() if s not in ("filtered", "not_claimed", "not_applicable"))
    return {"fault": fault or None, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "cases_run": run,
            "crashed": counts.get("crashed", 0), "not_run": counts.get("not_run", 0), "statuses": counts,
            "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--fault", default=FAULT)
    p.add_argument("--workers", default="2")
    p.add_argument("--out", type=Path, default=HERE / "results-crash.json")
    p.add_argument("selection", nargs="*", help="run's selection flags (after --); default: " + " ".join(SELECTION))
    a = p.parse_args()
    selection = a.selection or SELECTION
    pairs = []
    for i in range(a.pairs):
        clean = one_run("", selection, a.workers)
        crashing = one_run(a.fault, selection, a.workers)
        ratio = round(crashing["wall_s"] / clean["wall_s"], 2)  # type: ignore[operator]
        pairs.append({"clean": clean, "fault": crashing, "wall_ratio": ratio})
        share = crashing["crashed"] / max(1, crashing["cases_run"])  # type: ignore[operator]
        print(f"pair {i + 1}: clean {clean['wall_s']} s, {a.fault} {crashing['wall_s']} s ({ratio}x); "
              f"{crashing['crashed']} crashed of {crashing['cases_run']} run ({share:.1%}), "
              f"{crashing['not_run']} not_run", flush=True)
    a.out.write_text(json.dumps({"selection": selection, "fault": a.fault, "pairs": pairs}, indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
