"""`torchcts run`: run the suite on a device; exit 0 pass, 1 backend failure, 2 usage, 3 internal."""

from __future__ import annotations

import argparse
from pathlib import Path

from torchcts.cli.common import add_selection_args, command_intent

HELP = "run the conformance suite on a device (anything after -- goes to pytest)"


def configure(p: argparse.ArgumentParser) -> None:
    add_selection_args(p)


def main(args: argparse.Namespace) -> int:
    from torchcts.engine.execute import execute
    from torchcts.engine.setup import prepare

    setup = prepare(args)
    intent = command_intent("run", args.argv)
    return execute(setup, Path(args.results_dir), intent, args.pytest_args)
