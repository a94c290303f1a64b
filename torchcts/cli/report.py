"""`torchcts report [RUN]`: rebuild every artifact of a run from its records (also a killed run).

It states the run's verdict, so it exits by it as `run` does: 0 clean, 1 failures, crashes, not-run
cases or a missing plan, 2 unreadable records (or a run folder it cannot read)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchcts.cli.common import add_results_dir_arg

HELP = "rebuild reports from a run's records (default: the latest run)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", nargs="?", help="run folder or name (default: latest)")
    add_results_dir_arg(p)
    p.add_argument("--triage", action="store_true",
                   help="print only the failures grouped into root-cause clusters, each with the "
                   "arguments its failures share (no scorecard)")


def main(args: argparse.Namespace) -> int:
    from torchcts.results.records import rundir
    from torchcts.results.records.finalize import finalize
    from torchcts.results.reports.scorecard import print_scorecard

    run_dir = rundir.resolve_run(args.run, Path(args.results_dir))
    status = rundir.read_run(run_dir).status
    run, records = finalize(run_dir, "interrupted" if status in ("running", "interrupted") else status)
    if status == "running":  # what happened, before the scorecard that says "interrupted"
        print(f"torchcts: {run_dir.name} was never closed (run.json said `running`, no end time): the torchcts "
              "process that ran it stopped before it could write its reports (killed, or the machine went "
              "down); closed now as interrupted from the records it left, each planned case without one "
              "listed not_run", file=sys.stderr)
    if args.triage:  # only the clusters: the scorecard is one `torchcts report` away
        from torchcts.results.reports.quoting import TerminalOut
        from torchcts.results.triage.clusters import render_text

        print(render_text(records), file=TerminalOut(sys.stdout))
    else:
        print_scorecard(run_dir, run, sys.stdout, records=records)
    if run.unreadable_records:
        from torchcts.errors import UsageError

        raise UsageError(f"{run_dir.name}/cases.jsonl has {run.unreadable_records} unreadable records "
                         f"({'; '.join(run.record_problems or [])[:200]}): the reports leave them out; "
                         "restore the file or rerun those cases")
    from torchcts.results.ledger.apply import verdict_exit

    return verdict_exit(run, restated=True)  # the verdict it states (recorded internal errors: exit 1)
