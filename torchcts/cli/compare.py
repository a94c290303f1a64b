"""`torchcts compare OLD NEW`: new failures, fixes and precision regressions; exit 1 on a new failure."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchcts.cli.common import add_results_dir_arg

HELP = "regressions, fixes and precision changes between two runs (exit 1 on a new failure)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("old", help="the earlier run: folder or name under --results-dir")
    p.add_argument("new", help="the later run: folder or name under --results-dir")
    add_results_dir_arg(p)


def main(args: argparse.Namespace) -> int:
    from torchcts.errors import ExitCode
    from torchcts.results.records import rundir
    from torchcts.results.reports.compare import compare_runs, render
    from torchcts.results.reports.quoting import TerminalOut

    root = Path(args.results_dir)
    old, new = rundir.resolve_run(args.old, root), rundir.resolve_run(args.new, root)
    for run_dir in (old, new):  # a comparison that silently skipped records would be a false statement
        unreadable = rundir.scan_records(run_dir)[1]
        if unreadable:
            from torchcts.errors import UsageError

            raise UsageError(f"{run_dir.name}/cases.jsonl has {len(unreadable)} unreadable records "
                             f"({'; '.join(unreadable)[:200]}): restore the file or rerun before comparing")
    comparison = compare_runs(old, new)
    out = TerminalOut(sys.stdout)  # record text from downloaded runs: no escape sequences, scrubbed
    print(f"compare {old.name} -> {new.name}", file=out)
    print(render(comparison), file=out)
    return ExitCode.FAILURES if comparison.new_failures else ExitCode.OK
