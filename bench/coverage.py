#!/usr/bin/env python3
"""Cost of observing dispatch (cases/observe.py), a script, not a test: the same selection with
observation on and off (`TORCHCTS_OBSERVE_DISPATCH=0`), alternated, best of N each.

The default selection is one shard of the default level (`run --validation --shard 1/40`): a
deterministic slice of every suite, dtype and OpInfo kind, so its overhead stands for the whole
level's. CPU seconds of the process tree are reported beside wall time (less sensitive to a busy
machine).

    PYTHONPATH=. python3 bench/coverage.py [--repeat 2] [--output FILE] [-- run args]
    PYTHONPATH=. python3 bench/coverage.py --in-process 100   # every 100th case of the default level,
                                                               # case bodies only, in this process

`--in-process N` times only the case bodies (`engine/runner.py: run_case`, CPU seconds of this
process) of every N-th runnable case of the default level, each run once to warm up and then with
observation off and on alternately: the harness's own per-case cost is left out, so the
percentage is an upper bound of the overhead on the run's wall time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from overhead import children_cpu  # noqa: E402

from bench import emit, latest  # noqa: E402

DEFAULT_ARGS = ["--validation", "--shard", "1/40"]


def timed(args: list[str], observe: bool) -> dict[str, float]:
    from torchcts.results.records.rundir import final_records

    env = {**os.environ, "CI": "true", "TORCHCTS_OBSERVE_DISPATCH": "1" if observe else "0",
           "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as cwd:
        cpu0, start = children_cpu(), time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "torchcts", "run", *args], cwd=cwd, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall, cpu = time.perf_counter() - start, children_cpu() - cpu0
        run = latest(Path(cwd))  # results/latest is a symlink (a one-line file where links fail)
        recs = final_records(run)
        size = (run / "cases.jsonl").stat().st_size
    observed = [r for r in recs if isinstance(r.dispatched, list)]
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "exit": proc.returncode, "records": len(recs),
            "observed": len(observed), "case_s": round(sum(r.duration_s or 0 for r in recs), 2),
            "cases_jsonl_bytes": size}


def in_process(step: int, repeat: int) -> dict[str, object]:
    import torch

    from torchcts.cases.context import CaseContext
    from torchcts.coverage.inventory import load_cases
    from torchcts.engine.runner import run_case
    from torchcts.engine.selection import claim_decision
    from torchcts.manifest.templates import validation_manifest
    from torchcts.settings import reload

    manifest = validation_manifest()
    runnable = [c for c in load_cases() if c.level <= manifest.semantic_level and claim_decision(c, manifest).status == "run"]
    chosen = runnable[::step]

    def body(case, observe: bool) -> float:
        os.environ["TORCHCTS_OBSERVE_DISPATCH"] = "1" if observe else "0"
        reload()  # torchcts reads its settings once per process: read the new value
        ctx = CaseContext(device=torch.device("cpu"), manifest=manifest, validation=True)
        t0 = time.process_time()
        try:
            run_case(case, ctx)
        except Exception:  # noqa: BLE001 - not_applicable and failures cost time too
            pass
        return time.process_time() - t0

    for case in chosen:
        body(case, False)  # warm-up: lazy imports, op_db, first-call costs
    totals = {"off": 0.0, "on": 0.0}
    for _ in range(repeat):
        for case in chosen:
            for mode in ("off", "on"):
                totals[mode] += body(case, mode == "on")
    return {"cases": len(chosen), "of_runnable": len(runnable), "repeat": repeat,
            "cpu_s": {k: round(v, 2) for k, v in totals.items()},
            "overhead_case_body_percent": round(100 * (totals["on"] / totals["off"] - 1), 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--output", metavar="FILE")
    ap.add_argument("--in-process", type=int, metavar="N", help="time case bodies of every N-th default-level case")
    ap.add_argument("run_args", nargs="*", help="torchcts run arguments (after --)")
    a = ap.parse_args()
    if a.in_process:
        emit(in_process(a.in_process, a.repeat), a.output)
        return 0
    args = a.run_args or DEFAULT_ARGS
    rows: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    for _ in range(a.repeat):
        for mode in ("off", "on"):
            rows[mode].append(timed(args, mode == "on"))
            print(mode, rows[mode][-1], file=sys.stderr)
    best = {m: min(r, key=lambda x: x["cpu_s"]) for m, r in rows.items()}
    result = {
        "args": args, "load_average": os.getloadavg()[0], "runs": rows, "best": best,
        "overhead_cpu_percent": round(100 * (best["on"]["cpu_s"] / best["off"]["cpu_s"] - 1), 1),
        "overhead_wall_percent": round(100 * (min(r["wall_s"] for r in rows["on"]) /
                                               min(r["wall_s"] for r in rows["off"]) - 1), 1),
        "overhead_case_time_percent": round(100 * (best["on"]["case_s"] / best["off"]["case_s"] - 1), 1),
    }
    emit(result, a.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
