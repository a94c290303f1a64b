#!/usr/bin/env python3
"""A crash-heavy (or hang-heavy) backend's wall time against a clean one's (issues 30 and 40; a script, not a test).

Runs the same selection on the sim clean and with a fault planted, alternating the two `--pairs`
times, and writes per run: wall and CPU seconds, the cases run, how many crashed, timed out and how
many the crash budget stopped (`not_run`), the load average around it. The ratio fault / clean per
pair is the figure docs/speed.md quotes; alternating pairs show the noise.

    PYTHONPATH=. python3 bench/crash.py [--scenario crash|storm|hang] [--autoload] [--pairs 2]
                                        [--out bench/results-crash.json] [-- selection...]

Scenarios (each a fault and a default selection):
  crash  `reduce_float32_segv` (sum, mean and var on float32 kill the process), `--level 2 --dtype float32`
  storm  `out_resize_segv` (every op's out= resize kills the process: OpenReg's bug),
         `--suite out_variants --suite opinfo --level 3 --dtype float32`
  hang   `sub_int16_hang` (int16 sub never returns), `--op sub --dtype int16 --timeout 20`
`--autoload`: the sim as OpenReg is, a backend PyTorch autoloads (a `torch.backends` entry point in a
temporary site folder) and not known to survive a fork, so cases never fork and each crash or hang
costs a replacement worker. Run it on a quiet machine.
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
SCENARIOS = {
    "crash": ("reduce_float32_segv", ["--level", "2", "--dtype", "float32"]),
    "storm": ("out_resize_segv", ["--suite", "out_variants", "--suite", "opinfo", "--level", "3", "--dtype", "float32"]),
    "hang": ("sub_int16_hang", ["--op", "sub", "--dtype", "int16", "--timeout", "20"]),
}
AUTOLOAD_MODULE = """import torch  # a real backend package imports torch at its top


def autoload() -> None:
    import torchcts.sim  # registers the device 'sim'
"""
AUTOLOAD_MANIFEST = """import os, runpy, torchcts

_sim = runpy.run_path(os.path.join(os.path.dirname(torchcts.__file__), "sim", "manifest.py"))["manifest"]
manifest = {**_sim, "backend_import": "simauto_backend"}
"""


def autoload_site(root: Path) -> tuple[dict[str, str], list[str]]:
    """The sim as an autoloaded backend (tests/helpers/autoload_site.py) and a manifest naming it:
    (the environment to add, the run's manifest flags)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from helpers.autoload_site import autoload_site as site

    (root / "manifest.py").write_text(AUTOLOAD_MANIFEST)
    return site(root, "simauto_backend", AUTOLOAD_MODULE), ["--manifest", str(root / "manifest.py")]


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def statuses(results: Path) -> dict[str, int]:
    """Status counts of the one run under `results` (its cases.jsonl)."""
    sys.path.insert(0, str(HERE.parent))
    from torchcts.results.records import rundir

    run = rundir.latest_run(results)
    assert run is not None, f"no run under {results}"
    return dict(collections.Counter(str(rec.status) for rec in rundir.read_records(run)))


def one_run(fault: str, selection: list[str], workers: str, autoload: bool) -> dict[str, object]:
    env = {**os.environ, "CI": "true", "TORCHCTS_SIM_FAULT": fault,
           "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as cwd:
        manifest = ["--manifest", "torchcts:sim/manifest.py"]
        if autoload:
            extra, manifest = autoload_site(Path(cwd))
            env.update(extra, PYTHONPATH=os.pathsep.join([extra["PYTHONPATH"], env["PYTHONPATH"]]))
        args = [sys.executable, "-m", "torchcts", "run", "--device", "sim", *manifest,
                *selection, "--results-dir", f"{cwd}/results", "--", "-q", "-n", workers]
        load0, cpu0, start = os.getloadavg()[0], children_cpu(), time.perf_counter()
        r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - start, children_cpu() - cpu0
        counts = statuses(Path(cwd) / "results")
    if r.returncode not in (0, 1):
        raise SystemExit(f"run failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    run = sum(n for s, n in counts.items() if s not in ("filtered", "not_claimed", "not_applicable"))
    return {"fault": fault or None, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "cases_run": run,
            "crashed": counts.get("crashed", 0), "timeout": counts.get("timeout", 0),
            "not_run": counts.get("not_run", 0), "statuses": counts,
            "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", choices=sorted(SCENARIOS), default="crash")
    p.add_argument("--autoload", action="store_true", help="the sim as an autoloaded backend not known fork-safe")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--fault", help="the planted fault (default: the scenario's)")
    p.add_argument("--no-clean", action="store_true", help="only the faulted runs (no clean baseline)")
    p.add_argument("--workers", default="2")
    p.add_argument("--out", type=Path, default=HERE / "results-crash.json")
    p.add_argument("selection", nargs="*", help="run's selection flags (after --); default: the scenario's")
    a = p.parse_args()
    fault = a.fault or SCENARIOS[a.scenario][0]
    selection = a.selection or SCENARIOS[a.scenario][1]
    pairs = []
    for i in range(a.pairs):
        clean = None if a.no_clean else one_run("", selection, a.workers, a.autoload)
        faulted = one_run(fault, selection, a.workers, a.autoload)
        ratio = round(faulted["wall_s"] / clean["wall_s"], 2) if clean else None  # type: ignore[operator]
        pairs.append({"clean": clean, "fault": faulted, "wall_ratio": ratio})
        share = (faulted["crashed"] + faulted["timeout"]) / max(1, faulted["cases_run"])  # type: ignore[operator]
        print(f"pair {i + 1}: clean {clean['wall_s'] if clean else '-'} s, {fault} {faulted['wall_s']} s "
              f"({ratio}x); {faulted['crashed']} crashed, {faulted['timeout']} timed out of {faulted['cases_run']} "
              f"run ({share:.1%}), {faulted['not_run']} not_run", flush=True)
    a.out.write_text(json.dumps({"scenario": a.scenario, "autoload": a.autoload, "selection": selection,
                                 "fault": fault, "pairs": pairs}, indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
