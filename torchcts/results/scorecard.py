"""The end-of-run scorecard printed on the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from torchcts.results import rundir
from torchcts.results.summary import by, failures


def print_scorecard(run_dir: Path, run: dict[str, Any], out: TextIO, first: int = 10) -> None:
    records = rundir.final_records(run_dir)
    t = run.get("totals", {})
    print("", file=out)
    print("=" * 20 + " TorchCTS scorecard " + "=" * 20, file=out)
    label = " (validation: not backend evidence)" if run.get("validation") else ""
    print(f"device {run['device']['type']} gate {run['gate']}{label}; {run.get('status')}", file=out)
    print("totals: " + ", ".join(f"{k} {v}" for k, v in t.items()) + f"; filtered {run.get('filtered', 0)}", file=out)
    for key in ("level", "suite", "dtype"):
        groups = by(records, key)
        row = "; ".join(f"{k}: " + " ".join(f"{s}={n}" for s, n in g.items()) for k, g in groups.items())
        print(f"by {key}: {row}", file=out)
    fails = failures(records)
    for r in fails[:first]:
        print(f"  {r['status'].upper():8} {r['id']}: {r.get('message', '')[:200]}", file=out)
        if r.get("repro"):
            print(f"           repro: {r['repro']}", file=out)
        if r.get("repro_script"):
            print(f"           script: {r['repro_script']}", file=out)
    if len(fails) > first:
        print(f"  ... and {len(fails) - first} more failures (see summary.md)", file=out)
    from torchcts.results.ledger import gate_failures, ledger_lines

    for line in ledger_lines(run):
        print(line, file=out)
    if run.get("strict_expectations") and gate_failures(run):
        print("strict expectations: the run fails on " + "; ".join(gate_failures(run)), file=out)
    print(f"results: {run_dir}", file=out)
