"""`torchcts show-skips`: what would not run and why, without running anything."""

from __future__ import annotations

import argparse
from collections import Counter

HELP = "list what would not run (not claimed, not applicable) and why, without running"


def configure(p: argparse.ArgumentParser) -> None:
    from torchcts.cli.common import add_selection_args

    add_selection_args(p)
    p.add_argument("--all", action="store_true", help="list every case, not only a summary per reason")


def main(args: argparse.Namespace) -> int:
    from torchcts.cli.common import run_request
    from torchcts.engine.setup import prepare

    setup = prepare(run_request(args))
    skipped = setup.result.skipped
    print(f"{len(setup.result.to_run)} cases would run; {len(skipped)} would not; {setup.result.filtered} filtered")
    reasons = Counter((d.status, d.reason) for d in skipped)
    for (status, reason), n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {status:15} {n:6}  {reason}")
    if args.all:
        for d in skipped:
            print(f"{d.status:15} {d.case.id}  ({d.reason})")
    return 0
