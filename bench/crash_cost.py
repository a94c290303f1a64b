#!/usr/bin/env python3
"""What one crash costs on a backend not known to survive a fork (issue 48 item 5; a script, not a test).

A planted suite of `--cases` cases, `--crashes` of which kill their process (SIGSEGV) when the
crashing run asks, runs twice on the sim loaded as OpenReg is (a backend PyTorch autoloads and not
known fork-safe, bench/crash.py's `--autoload`: cases never fork, each crash costs a replacement
worker): clean, then crashing, `--pairs` times alternating. The cost of one crash is the wall
difference over the crashes (the run's critical path: the other worker goes on meanwhile), and a
replacement's latency is the time from the crashed case's start to its replacement's
first case (`replacement_s`, from cases.jsonl: the k-th crash's worker is replaced by the k-th new
worker id; what issue 48 measured on OpenReg as 17 s a dead worker). `--crashing-only` skips the
clean runs. `--opinfo` makes every case import PyTorch's OpInfo database first, as
an OpInfo case does (a replacement worker pays that import again). `--path` picks how a
replacement starts: `server` (the run's fork server, workers/crash_server.py; the default) or `fresh`
(TORCHCTS_CRASH_SERVER=0: a new python each time).

`--ocl` measures a real backend instead: pytorch_ocl on PoCL (../shared/backends on PYTHONPATH),
OpInfo cases in uint8 at level 8 whose kernels kill the process (bilinear interpolation, tanh)
among ops that pass (OCL_SELECTION), crashing runs only: the replacement latencies. `--openreg`:
PyTorch's OpenReg (a build on PYTHONPATH), whose growing out= resize segfaults: the out= cases of
the OpInfo ops starting with a-c at level 8 among their forward cases (OPENREG_SELECTION).

    PYTHONPATH=. python3 bench/crash_cost.py [--crashes 6] [--cases 30] [--case-s 1] [--opinfo] [--path server|fresh]
                                             [--pairs 2] [--ocl | --openreg] [--out bench/results-crash-cost.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from crash import autoload_site, children_cpu, statuses  # noqa: E402

SUITE = '''
import os, signal, time, torch
from torchcts.cases.api import CaseSet

SUITE = CaseSet("crashcost")
cases = SUITE.cases
N, CRASHES, OPINFO, CASE_S = {cases}, {crashes}, {opinfo}, {case_s}
CRASHING = set(range(0, N, max(1, N // CRASHES))[:CRASHES])


@SUITE.case("k", level=1, dtypes=("float32",), ops=("aten::add.Tensor",), params={{str(i): {{"i": i}} for i in range(N)}})
def k(ctx, dtype, **params):
    if OPINFO:
        import torch.testing._internal.common_methods_invocations  # noqa: F401 - as an OpInfo case does
    if os.environ.get("CRASHCOST_CRASH") and int(ctx.case.id.split("/")[2]) in CRASHING:
        os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(CASE_S)  # a real case's time: crashes come apart, as in a run
    x = torch.arange(6, dtype=dtype)
    ctx.assert_close((x.to(ctx.device) + 1).cpu(), x + 1)
'''


def replacements(results: Path) -> list[float]:
    """Seconds from each crashed case's start (its record's `started_at`, the dead worker's start
    marker) to its replacement's first case: the k-th crash's worker is replaced by the k-th new
    worker id (xdist names them in order)."""
    sys.path.insert(0, str(HERE.parent))
    from torchcts.results.records import rundir

    run = rundir.latest_run(results)
    assert run is not None, f"no run under {results}"
    recs = [r for r in rundir.read_records(run) if r.started_at is not None and r.worker]
    first: dict[str, float] = {}
    for r in sorted(recs, key=lambda r: r.started_at):
        first.setdefault(r.worker, r.started_at)
    crashes = sorted(r.started_at for r in recs if r.status == "crashed")
    originals = sorted(first, key=first.get)[:2]
    new = sorted(t for w, t in first.items() if w not in originals)
    return [round(b - a, 2) for a, b in zip(crashes, new, strict=False) if b > a]


OCL_MANIFEST = HERE.parent / "tests" / "helpers" / "ocl_crash_manifest.py"
# pytorch_ocl's uint8 kernels that kill the process (SIGSEGV/SIGABRT), among ops whose cases pass or fail
OCL_SELECTION = ["--level", "8", "--suite", "opinfo", "--dtype", "uint8",
                 *[a for op in ("nn.functional.interpolate.bilinear", "nn.functional.upsample_bilinear", "tanh",
                                "add", "mul", "sub", "neg", "abs", "bitwise_and", "maximum", "minimum",
                                "bitwise_or", "clamp", "where")
                   for a in ("--op", op)]]


OPENREG_SELECTION = ["--level", "8", "--dtype", "float32",
                     *[a for glob in ("opinfo/[a-c]*/float32/out", "opinfo/[a-c]*/float32/forward") for a in ("--case", glob)]]


def run_args(cwd: str, env: dict[str, str], backend: str) -> list[str]:
    """The command of one run: the planted suite on the autoloaded sim, or a real backend's selection."""
    if backend == "ocl":
        return ["--device", "ocl:0", "--manifest", str(OCL_MANIFEST), *OCL_SELECTION]
    if backend == "openreg":
        return ["--device", "openreg", "--manifest", str(HERE / "openreg_manifest.py"), *OPENREG_SELECTION]
    extra, manifest = autoload_site(Path(cwd))
    env.update(extra, PYTHONPATH=os.pathsep.join([extra["PYTHONPATH"], env["PYTHONPATH"]]))
    return ["--device", "sim", *manifest, "--suite", "crashcost"]


def one_run(root: Path, crash: bool, path: str, workers: str, backend: str = "sim") -> dict[str, object]:
    env = {**os.environ, "CI": "true", "TORCHCTS_EXTRA_SUITES": "crashcost=crashcost_suite",
           "PYTHONPATH": os.pathsep.join([str(root), str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    if crash:
        env["CRASHCOST_CRASH"] = "1"
    if path == "fresh":
        env["TORCHCTS_CRASH_SERVER"] = "0"
    with tempfile.TemporaryDirectory() as cwd:
        args = [sys.executable, "-m", "torchcts", "run", *run_args(cwd, env, backend), "--no-crash-budget",
                "--results-dir", f"{cwd}/results", "--", "-q", "-n", workers]
        load0, cpu0, start = os.getloadavg()[0], children_cpu(), time.perf_counter()
        r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        wall, cpu = time.perf_counter() - start, children_cpu() - cpu0
        counts = statuses(Path(cwd) / "results")
        latency = replacements(Path(cwd) / "results") if crash else []
    if r.returncode not in (0, 1):
        raise SystemExit(f"run failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return {"crash": crash, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "statuses": counts,
            "replacement_s": latency,
            "crashed": counts.get("crashed", 0), "load_before": round(load0, 2),
            "load_after": round(os.getloadavg()[0], 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--crashes", type=int, default=6)
    p.add_argument("--cases", type=int, default=30)
    p.add_argument("--case-s", type=float, default=1.0, help="seconds each case takes (crashes come apart)")
    p.add_argument("--opinfo", action="store_true", help="every case imports the OpInfo database first")
    p.add_argument("--path", choices=("server", "fresh"), default="server")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--crashing-only", action="store_true", help="no clean runs (replacement latency only)")
    p.add_argument("--workers", default="2")
    p.add_argument("--ocl", action="store_true", help="pytorch_ocl's crashing uint8 kernels (crashing runs only)")
    p.add_argument("--openreg", action="store_true", help="OpenReg's out= resize crash (crashing runs only)")
    p.add_argument("--out", type=Path, default=HERE / "results-crash-cost.json")
    a = p.parse_args()
    backend = "ocl" if a.ocl else "openreg" if a.openreg else "sim"
    if backend != "sim":
        a.crashing_only = True
    pairs = []
    with tempfile.TemporaryDirectory() as root:
        suite = SUITE.format(cases=a.cases, crashes=a.crashes, opinfo=a.opinfo, case_s=a.case_s)
        (Path(root) / "crashcost_suite.py").write_text(suite)
        for i in range(a.pairs):
            clean = None if a.crashing_only else one_run(Path(root), False, a.path, a.workers)
            crashing = one_run(Path(root), True, a.path, a.workers, backend)
            n = int(crashing["crashed"])  # type: ignore[call-overload]
            per = round((float(crashing["wall_s"]) - float(clean["wall_s"])) / max(1, n), 2) if clean else None  # type: ignore[arg-type]
            pairs.append({"clean": clean, "crashing": crashing, "per_crash_s": per})
            print(f"pair {i + 1}: clean {clean['wall_s'] if clean else '-'} s, {n} crashes {crashing['wall_s']} s: "
                  f"{per} s a crash; replacements {crashing['replacement_s']} s "
                  f"(load {crashing['load_before']} -> {crashing['load_after']})", flush=True)
    a.out.write_text(json.dumps({"path": a.path, "backend": backend, "opinfo": a.opinfo,
                                 "cases": a.cases, "crashes": a.crashes,
                                 "case_s": a.case_s,
                                 "workers": a.workers, "pairs": pairs}, indent=1) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
