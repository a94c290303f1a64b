#!/usr/bin/env python3
"""TorchCTS benchmark (a script, not a test): the numbers issue 21 asks for, as one JSON object.

Runs `torchcts` as a user would (subprocesses, a scratch folder, the complete template's manifest
for device cpu) and prints: the one-op inner loop (`run --op add --dtype float32`, shell to exit,
median of 5, with CPU seconds and the load average, since wall time on a shared machine is noisy);
cases/s and worker idle time with 1 and 2 workers; with --full the whole default level (level 8):
wall, CPU, seconds per suite and per case kind, slowest cases, cases over 30 s, peak RSS of the
whole process tree and the case at the workers' peak, and the 4-shard balance by estimated cost.

    python bench/bench.py                 # one-op (cold and warm workers), scaling (a few minutes)
    python bench/bench.py --one-op        # only the one-op numbers
    python bench/bench.py --full          # also the complete template at level 8 (10+ minutes)
    python bench/bench.py --analyse RUN   # only what an existing run folder's records say
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from overhead import children_cpu  # noqa: E402  (the lower module: overhead never imports bench)


def torchcts(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 7200) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "torchcts", *args], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    return time.perf_counter() - start, proc.returncode


def latest(cwd: Path) -> Path:
    from torchcts.results.records.rundir import latest_run

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


def tree_memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of `pid` and all its descendants (Linux /proc), in MB; zeros elsewhere. Summed
    RSS counts the pages processes share (torch's libraries, a warm server's heap) once per
    process; PSS divides each shared page among its sharers, so it adds up to the memory used."""
    try:
        parents = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
        tree, frontier = {pid}, [pid]
        while frontier:
            kids = [p for p, pp in parents.items() if pp in frontier and p not in tree]
            tree.update(kids)
            frontier = kids
        pages, pss_kb = 0, 0
        for p in tree:
            try:
                pages += int(Path(f"/proc/{p}/statm").read_text().split()[1])
                for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        pss_kb += int(line.split()[1])
            except (OSError, ValueError, IndexError):
                continue
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20, pss_kb / 1024
    except OSError:
        return 0.0, 0.0


def warm_server_cpu(env: dict[str, str]) -> float:
    """CPU seconds of the finished workers of the warm worker servers under env's TORCHCTS_WARM_DIR:
    forked workers are the server's children, not the command's (workers/warm.py)."""
    from torchcts.workers.warm import running_in

    total = 0.0
    folder = env.get("TORCHCTS_WARM_DIR")
    for pid, _ in running_in(Path(folder)) if folder else []:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime
        except (OSError, ValueError, IndexError):
            continue
    return total


def measured_run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 7200) -> dict[str, float]:
    """Wall, CPU (user + sys of the whole process tree, forked warm workers included) and peak summed
    RSS of one `torchcts` command."""
    cpu0 = children_cpu() + warm_server_cpu(env)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "torchcts", *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = peak_pss = 0.0
    while proc.poll() is None and time.perf_counter() - start < timeout:
        rss, pss = tree_memory_mb(proc.pid)
        peak, peak_pss = max(peak, rss), max(peak_pss, pss)
        time.sleep(0.25)
    code = proc.wait()
    wall = time.perf_counter() - start
    time.sleep(0.2)  # the server reaps the last worker after the launcher's exit status is relayed
    return {"wall_s": round(wall, 2), "cpu_s": round(children_cpu() + warm_server_cpu(env) - cpu0, 2),
            "exit": code, "peak_rss_tree_mb": round(peak, 1), "peak_pss_tree_mb": round(peak_pss, 1),
            "load_avg_1m": round(os.getloadavg()[0], 2)}


def one_op(cwd: Path, env: dict[str, str], manifest: Path, repeat: int, warm: bool) -> dict[str, object]:
    """Shell-to-exit of the inner-loop command, median of `repeat` (after one warm-up run), with fresh
    workers (cold) or workers forked from a warm worker server that the warm-up run started."""
    args = ["run", "--device", "cpu", "--manifest", str(manifest), "--op", "add", "--dtype", "float32",
            "--warm" if warm else "--no-warm"]
    measured_run(args, cwd, env)  # warm-up: the case cache and inductor's cache are written once
    if warm:
        wait_for_warm_server(env)
        measured_run(args, cwd, env)  # the first run on forked workers writes what the first compile does
    runs = [measured_run(args, cwd, env) for _ in range(repeat)]
    recs = records(latest(cwd))
    return {"command": "torchcts " + " ".join(args).replace(str(manifest), "complete.py"),
            "wall_s_median": statistics.median(r["wall_s"] for r in runs),
            "cpu_s_median": statistics.median(r["cpu_s"] for r in runs),
            "walls": [r["wall_s"] for r in runs], "load_avg_1m": [r["load_avg_1m"] for r in runs],
            "cases": len(executed(recs)), "slowest": slowest(recs, 5)}


def wait_for_warm_server(env: dict[str, str], seconds: float = 600) -> None:
    """Until a warm worker server that a `--warm` run started (in env's TORCHCTS_WARM_DIR) listens.
    Found by its lock, not by recomputing its key: the run exports thread variables of its own
    (engine/threads.py) before it starts the server, so the key is the run's, not this env's."""
    from torchcts.workers.warm import listening, running_in

    folder = Path(env["TORCHCTS_WARM_DIR"])
    deadline = time.monotonic() + seconds
    while not any(listening(str(folder / name)) for _, name in running_in(folder)):
        if time.monotonic() > deadline:
            raise SystemExit(f"no warm worker server listened in {folder} after {seconds:g} s (see its *.log)")
        time.sleep(0.2)


class RunRecords(list):
    """The run's final records (CaseRecord), and the ids of the cases its workers were given."""

    planned: set[str]


def records(run: Path) -> RunRecords:
    """The run's final record per case (rundir.final_records), with the planned case ids."""
    from torchcts.results.records.plan import read_plan
    from torchcts.results.records.rundir import final_records

    out = RunRecords(final_records(run))
    out.planned = {case.id for case in read_plan(run)}  # the one reader: a damaged line is an error, never skipped
    return out


def executed(recs: RunRecords) -> list:
    """Cases a worker ran (whatever their status), not the skip records written before the run."""
    return [r for r in recs if r.id in recs.planned]


def with_duration(recs: RunRecords) -> list:
    """Executed cases with a duration (a worker that died before logging the case's start gives none)."""
    return [r for r in executed(recs) if r.duration_s is not None]


def slowest(recs: list, n: int) -> list[str]:
    top = sorted((r for r in recs if r.duration_s), key=lambda r: -r.duration_s)[:n]
    return [f"{r.id} {r.duration_s:.2f}s" for r in top]


def analyse(run: Path) -> dict[str, object]:
    """What a run's records say: time per suite and per case kind, slow cases, worker idle time,
    the memory peak's case, and how a 4-shard split by estimated cost would balance."""
    recs = records(run)
    done = with_duration(recs)
    from torchcts.results.records.rundir import read_run

    outcome = read_run(run)
    out: dict[str, object] = {
        "cases_executed": len(done),
        "statuses": dict(sorted(Counter(str(r.status) for r in recs).items())),
        "threads": dict(sorted(Counter(str(r.threads) for r in done).items())),  # engine/threads.py
        "case_seconds_total": round(sum(r.duration_s for r in done), 1),
        "case_cpu_s_total": round(sum(r.cpu_s or 0.0 for r in done), 1),
    }
    for field, name in (("duration_s", "seconds"), ("cpu_s", "cpu_s")):  # CPU: what load inflates least
        by_suite = totals(done, field, lambda r: r.suite)
        by_kind = totals(done, field, lambda r: f"{r.suite}/{r.kind or '-'}")
        out[f"{name}_per_suite"] = by_suite
        out[f"{name}_per_kind_top20"] = dict(list(by_kind.items())[:20])
    out["slowest"] = slowest(done, 10)
    out["slowest_cpu"] = [f"{r.id} {r.cpu_s:.2f} CPU-s" for r in
                          sorted((r for r in done if r.cpu_s), key=lambda r: -r.cpu_s)[:10]]
    from torchcts.cases.opinfo.slow import SLOW_CASES  # each case over 30 s needs a reason there

    def why(r: dict) -> str:
        return SLOW_CASES.get(r.id, "NO REASON RECORDED (torchcts/cases/opinfo/slow.py)")

    out["over_30s"] = {r.id: why(r) for r in done if r.duration_s > 30}
    out["over_30_cpu_s"] = {r.id: why(r) for r in done if (r.cpu_s or 0) > 30}
    timed = [r for r in done if r.started_at and r.worker]
    if timed:
        t0 = min(r.started_at for r in timed)
        t1 = max(r.started_at + r.duration_s for r in timed)
        workers = sorted({r.worker for r in timed})
        begin = _epoch(outcome.started) or t0
        end = _epoch(outcome.ended) or t1
        busy = sum(r.duration_s for r in timed)
        out["workers"] = len(workers)
        out["run_wall_s"] = round(end - begin, 1)
        out["cases_per_s"] = round(len(done) / max(end - begin, 1e-9), 1)
        # Idle: worker-seconds of the run not inside a case (start-up, harness overhead, waiting).
        out["worker_idle_fraction"] = round(1 - busy / (len(workers) * max(end - begin, 1e-9)), 3)
        out["worker_idle_fraction_first_to_last_case"] = round(1 - busy / (len(workers) * max(t1 - t0, 1e-9)), 3)
        out["startup_s_before_first_case"] = round(t0 - begin, 1)
    mem = [r for r in done if r.maxrss_mb is not None]
    if mem:
        top = max(mem, key=lambda r: r.maxrss_mb)
        grew = max(mem, key=lambda r: r.rss_grew_mb or 0)
        out["worker_peak_rss_mb"] = top.maxrss_mb
        out["peak_rss_case"] = top.id
        out["largest_rss_jump"] = f"{grew.id} +{grew.rss_grew_mb} MB"
    held = [r for r in done if r.rss_mb is not None]  # after each case, freed heap returned
    if held:
        top = max(held, key=lambda r: r.rss_mb)
        out["worker_rss_after_case_max_mb"] = f"{top.rss_mb} ({top.id})"
        out["worker_rss_at_end_mb"] = {w: max((r for r in held if r.worker == w), key=lambda r: r.started_at).rss_mb
                                       for w in sorted({r.worker for r in held if r.started_at})}
    out["shard_balance_4"] = shard_balance(done, 4)
    out["shard_balance_4_by_cpu"] = shard_balance([r for r in done if r.cpu_s is not None], 4, "cpu_s")
    return out


def totals(done: list, field: str, key) -> dict[str, str]:  # noqa: ANN001
    """"total s / cases = mean ms per case" of `field` per key (suite, or suite/kind), largest total first."""
    acc: dict[str, list[float]] = {}
    for r in done:
        entry = acc.setdefault(key(r), [0.0, 0])
        entry[0] += getattr(r, field) or 0.0
        entry[1] += 1
    ranked = sorted(acc.items(), key=lambda kv: -kv[1][0])
    return {k: f"{t:.1f} s / {n} = {1000 * t / n:.1f} ms" for k, (t, n) in ranked}


def shard_balance(done: list, count: int, field: str = "duration_s") -> dict[str, object]:
    """Split the executed cases as `--shard I/4` would without durations (estimated cost per case
    kind), then weigh each shard by what its cases really took (`field`: wall seconds, or CPU
    seconds, which a loaded machine inflates less): max/mean - 1 is the imbalance."""
    from torchcts.engine.selection import Decision
    from torchcts.engine.shard import shard_decisions
    from torchcts.model.case import Case

    decisions = [Decision(Case(id=r.id, suite=r.suite, level=r.level or 1, runner="m:f",
                               kind=r.kind or "", params={"op": r.op} if r.op else {}), "run")
                 for r in done]
    took = {r.id: getattr(r, field) for r in done}
    loads = []
    for i in range(1, count + 1):
        kept, _ = shard_decisions(decisions, i, count)
        loads.append(sum(took[d.case.id] for d in kept))
    mean = sum(loads) / count
    return {"shard_seconds": [round(x, 1) for x in loads], "imbalance": round(max(loads) / mean - 1, 3) if mean else 0.0}


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def scaling(cwd: Path, env: dict[str, str], selection: list[str]) -> dict[str, object]:
    """cases/s and worker idle time with 1 and with 2 workers on the same selection."""
    out: dict[str, object] = {"selection": " ".join(selection)}
    for n in (1, 2):
        m = measured_run(["run", "--validation", *selection, "--", "-q", "-n", str(n)], cwd, env)
        a = analyse(latest(cwd))
        out[f"{n}_worker"] = {**m, **{k: a.get(k) for k in ("cases_executed", "cases_per_s", "worker_idle_fraction",
                                                               "worker_idle_fraction_first_to_last_case",
                                                               "startup_s_before_first_case")}}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="also run the complete template at the default level (level 8)")
    ap.add_argument("--repeat", type=int, default=5, help="one-op runs for the median (default 5)")
    ap.add_argument("--scaling", default="--level 2 --dtype float32",
                    help="selection for the 1- vs 2-worker comparison (default: %(default)s)")
    ap.add_argument("--one-op", action="store_true", help="only the one-op numbers (cold and warm) and first result")
    ap.add_argument("--analyse", metavar="RUN", help="only print what an existing run folder's records say")
    ap.add_argument("--overhead", action="store_true", help="also the per-case harness overhead (bench/overhead.py)")
    ap.add_argument("--write-costs", metavar="RUN",
                    help="write torchcts/engine/case_costs.json (--shard's cost estimates) from a full run's records")
    ap.add_argument("--output", help="also write the JSON here")
    args = ap.parse_args()
    from torchcts.results.records.rundir import resolve_run  # RUN: a run folder, a results folder or `latest`

    if args.write_costs:
        from torchcts.engine.shard import COSTS_FILE, cost_table_from

        table = cost_table_from(with_duration(records(resolve_run(args.write_costs))))
        COSTS_FILE.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {COSTS_FILE} ({sum(len(v) for v in table.values())} entries)")
        return 0
    if args.analyse:
        run = resolve_run(args.analyse)
        emit({"run": run.name, **analyse(run)}, args.output)
        return 0

    # Byte-compiled as `pip install` leaves a package (an editable install never writes .pyc files
    # where PYTHONDONTWRITEBYTECODE is set, as on the development machine: every process would
    # compile TorchCTS's sources again, ~0.15 s each).
    import compileall

    compileall.compile_dir(str(HERE.parent / "torchcts"), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="torchcts-bench-"))
    env = {**os.environ, "CI": "true", "TORCHCTS_CACHE_DIR": str(work / "cache"), "PYTHONUNBUFFERED": "1",
           "TORCHCTS_WARM_DIR": str(work / "warm"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(HERE.parent), os.environ.get("PYTHONPATH", "")) if p)}
    out: dict[str, object] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                              "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "load_avg_at_start": [round(x, 2) for x in os.getloadavg()]}
    import torch

    out["torch"] = torch.__version__
    manifest = work / "complete.py"
    subprocess.run([sys.executable, "-m", "torchcts", "init", "--template", "complete", "--backend", "cpu",
                    "--output", str(manifest)], cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)

    out["collect_level8_s"] = measured_run(["show-skips", "--device", "cpu", "--manifest", str(manifest)], work, env)
    out["one_op_cold"] = one_op(work, env, manifest, args.repeat, warm=False)  # fresh workers (CI's default)
    out["one_op_warm"] = one_op(work, env, manifest, args.repeat, warm=True)  # a terminal's default
    one = ["run", "--device", "cpu", "--manifest", str(manifest), "--op", "add", "--dtype", "float32"]
    out["first_result_one_op_s"] = {"cold": first_result_seconds(work, env, [*one, "--no-warm"]),
                                    "warm": first_result_seconds(work, env, [*one, "--warm"])}
    from torchcts.workers.warm import stop_all

    stop_all(Path(env["TORCHCTS_WARM_DIR"]))
    if args.one_op:
        out["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        emit(out, args.output)
        return 0
    out["scaling"] = scaling(work, env, args.scaling.split())
    if args.overhead:
        from overhead import MODES, timed_run  # the marginal-cost method: (T(large) - T(small)) / delta

        for name, extra in MODES.items():
            (ws, cs), (wl, cl) = timed_run(20, extra), timed_run(400, extra)
            out[f"overhead {name}"] = {"wall_ms_per_case": round((wl - ws) / 380 * 1000, 2),
                                       "cpu_ms_per_case": round((cl - cs) / 380 * 1000, 2)}
    if args.full:
        full = measured_run(["run", "--device", "cpu", "--manifest", str(manifest), "--", "-q"], work, env)
        out["full_complete_level8"] = {**full, **analyse(latest(work))}
    out["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
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
