"""`torchcts run`: run the suite on a device; exit 0 pass, 1 backend failure, 2 usage, 3 internal."""

from __future__ import annotations

import argparse
from pathlib import Path

from torchcts.cli.common import add_selection_args, command_intent

HELP = "run the conformance suite on a device (anything after -- goes to pytest)"


def configure(p: argparse.ArgumentParser) -> None:
    add_selection_args(p)
    p.add_argument("--strict-expectations", action="store_true",
                   help="also fail on expired or unmatched ledger entries, xpassed and flaky cases")
    p.add_argument("--rerun-failures", type=int, default=0, metavar="N",
                   help="rerun failing cases up to N times in fresh processes; a pass on rerun is flaky")


def main(args: argparse.Namespace) -> int:
    from torchcts.engine.execute import execute
    from torchcts.engine.setup import prepare

    if args.rerun_failures < 0:
        from torchcts.errors import UsageError

        raise UsageError("--rerun-failures must be 0 or a positive number of reruns")
    setup = prepare(args)
    intent = command_intent("run", args.argv)
    return execute(setup, Path(args.results_dir), intent, args.pytest_args)
