"""`torchcts merge RUN...`: combine shard result folders into one run with one report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchcts.cli.common import folder_arg

HELP = "combine shard runs (--shard I/N) into one run with one report"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="shard run folders")
    p.add_argument("--results-dir", default="results", metavar="DIR", type=folder_arg, help="where the merged run goes")


def main(args: argparse.Namespace) -> int:
    from torchcts.errors import EXIT_FAILURES, EXIT_OK
    from torchcts.results import rundir
    from torchcts.results.ledger import gate_failures
    from torchcts.results.merge import merge_runs
    from torchcts.results.scorecard import print_scorecard

    root = Path(args.results_dir)
    runs = {rundir.resolve_run(r, root).resolve(): None for r in args.runs}  # `results/*` names latest's run twice
    out = merge_runs(list(runs), root)
    run = rundir.read_run(out)
    from torchcts.results.step_summary import append_step_summary

    append_step_summary(out)  # a GitHub Actions fan-in job shows the merged summary
    print_scorecard(out, run, sys.stdout)
    return EXIT_FAILURES if gate_failures(run) or run.get("missing_shards") else EXIT_OK
