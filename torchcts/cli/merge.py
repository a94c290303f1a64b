"""`torchcts merge RUN...`: combine shard result folders into one run with one report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchcts.cli.common import add_results_dir_arg

HELP = "combine shard runs (--shard I/N) into one run with one report"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN", help="shard run folders")
    add_results_dir_arg(p, "where the merged run goes")


def main(args: argparse.Namespace) -> int:
    from torchcts.errors import ExitCode
    from torchcts.results.ledger.apply import verdict_exit
    from torchcts.results.records import rundir
    from torchcts.results.records.merge import merge_runs
    from torchcts.results.reports.scorecard import print_scorecard

    root = Path(args.results_dir)
    out = merge_runs(distinct_runs(args.runs, root), root)
    run = rundir.read_run(out)
    from torchcts.results.reports.step_summary import append_step_summary

    append_step_summary(out)  # a GitHub Actions fan-in job shows the merged summary
    print_scorecard(out, run, sys.stdout)
    return verdict_exit(run, restated=True) or (ExitCode.FAILURES if run.missing_shards else ExitCode.OK)


def distinct_runs(given: list[str], root: Path) -> list[Path]:
    """Each run once: `results/*` names the latest run twice (its folder and `latest`), which is
    fine; the same run folder given twice otherwise is a mistake, said as such (UsageError)."""
    from torchcts.errors import UsageError
    from torchcts.results.records import rundir

    seen: dict[Path, str] = {}
    for ref in given:
        run = rundir.resolve_run(ref, root).resolve()
        if run in seen and Path(ref).name != "latest" and Path(seen[run]).name != "latest":
            raise UsageError(f"the same run given twice: {run.name} (as '{seen[run]}' and '{ref}'); "
                             "give each shard's run folder once")
        seen.setdefault(run, ref)
    return list(seen)
