"""`--rerun-failures N`: rerun the failing cases of a run in fresh pytest processes.

Each attempt is a new pytest process (`python -m torchcts.engine.session`: fresh workers, nothing
left over from the failing session) on just the failing case ids, appending to the same cases.jsonl
through a Recorder of its own. `--torchcts-attempt N` tells that Recorder which attempt it records:
a case that passes on a rerun is `flaky` (see results/ledger/annotate.py); one that fails again keeps
failing. run.json gets the `reruns` summary once, at the end. cases.jsonl stays append-only: the
last record of an id supersedes (results/rundir.final_records).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from torchcts.results.records import rundir

MAX_IDS_PER_PROCESS = 2000  # keeps the command line short


def failing_ids(run_dir: Path) -> list[str]:
    """Cases whose latest record is a failure the ledger does not expect (xfailed is not rerun)."""
    return [r.id for r in rundir.final_records(run_dir) if r.status is not None and r.status.forgivable]


def _write_reruns(run_dir: Path, reruns: list[dict[str, int]]) -> None:
    run = rundir.read_run(run_dir)
    run.reruns = reruns
    rundir.write_run(run_dir, run)


def rerun_failures(run_dir: Path, attempts: int, argv: list[str]) -> list[dict[str, int]]:
    """Rerun failing cases up to `attempts` times; `argv` is the run's pytest argv (collect path first)."""
    collect, rest = argv[0], argv[1:]
    reruns: list[dict[str, int]] = []
    try:
        for attempt in range(2, attempts + 2):
            ids = failing_ids(run_dir)
            if not ids:
                break
            print(f"torchcts: rerunning {len(ids)} failing case(s), attempt {attempt} of {attempts + 1}", flush=True)
            for i in range(0, len(ids), MAX_IDS_PER_PROCESS):
                nodes = [f"{collect}::{case_id}" for case_id in ids[i:i + MAX_IDS_PER_PROCESS]]
                # engine/session.py: pytest with this attempt's Recorder, in a fresh process
                subprocess.run([sys.executable, "-m", "torchcts.engine.session", *nodes, *rest,
                                f"--torchcts-attempt={attempt}"], check=False)
            still = set(failing_ids(run_dir))
            reruns.append({"attempt": attempt, "cases": len(ids), "passed": len(set(ids) - still)})
    finally:
        _write_reruns(run_dir, reruns)
    return reruns
