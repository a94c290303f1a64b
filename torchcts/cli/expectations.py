"""`torchcts expectations update RUN`: propose ledger entries for a run's failures, for review."""

from __future__ import annotations

import argparse

from torchcts.cli.common import add_results_dir_arg
from torchcts.errors import ExitCode

HELP = "propose expectations ledger entries for a run's failures (written to a file, never applied)"


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = sub.add_parser("update", help="write proposed entries for the current failures of RUN",
                        description="write proposed entries for the current failures of RUN")
    up.add_argument("run", nargs="?", help="run folder or name (default: latest)")
    add_results_dir_arg(up)
    up.add_argument("--output", "-o", metavar="FILE",
                    help="file to write (default expectations.proposed.py; .toml writes TOML)")
    up.add_argument("--format", choices=("py", "toml"), help="default: from the --output suffix, else py")
    up.add_argument("--group", choices=("cluster", "case", "selector"), default="cluster",
                    help="one entry per root-cause cluster of triage: a case-id glob plus its signature (default); "
                         "per failing case; or a {suite, kind, op, dtype} selector per cluster and op")
    up.add_argument("--expires-days", type=int, default=90, metavar="N", help="expiry N days after the run (default 90)")
    up.add_argument("--force", action="store_true", help="overwrite an existing output file")


def main(args: argparse.Namespace) -> int:
    import datetime as _dt
    from pathlib import Path

    from torchcts.errors import UsageError
    from torchcts.results.ledger.apply import run_date
    from torchcts.results.ledger.proposals import propose, render_python, render_toml
    from torchcts.results.records import rundir
    from torchcts.results.reports.quoting import one_line
    from torchcts.results.reports.wording import plural

    run_dir = rundir.resolve_run(args.run, Path(args.results_dir))
    run = rundir.read_run(run_dir)
    fmt = args.format or ("toml" if args.output and args.output.endswith(".toml") else "py")
    out = Path(args.output or f"expectations.proposed.{fmt}")
    if out.exists() and not args.force:
        raise UsageError(f"{out} already exists: pass --force to overwrite it or --output FILE for another file")
    if args.expires_days < 1:
        raise UsageError("--expires-days must be a positive number of days")
    expires = run_date(run) + _dt.timedelta(days=args.expires_days)
    entries = propose(rundir.final_records(run_dir), expires, args.group)
    render = render_toml if fmt == "toml" else render_python
    from torchcts.safe_io import write_atomic

    write_atomic(out.parent, out.name, render(entries, run_dir.name), fsync=False)  # never through a planted link

    print(f"wrote {plural(len(entries), 'proposed entry', 'proposed entries')} for run {one_line(run_dir.name)} "
          f"to {out} (nothing applied): "
          "review them, then add them to your manifest's expectations and check with 'torchcts check-manifest'")
    return ExitCode.OK
