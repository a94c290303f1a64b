"""`torchcts warm`: the warm worker servers of `torchcts run --warm` (engine/warm.py): list or stop them."""

from __future__ import annotations

import argparse

HELP = "list or stop (--stop) the background servers that warm `torchcts run`'s workers"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stop", action="store_true", help="stop them now (each ends once its workers have)")


def main(args: argparse.Namespace) -> int:
    from torchcts.engine import warm

    if args.stop:
        stopped = warm.stop_all()
        print(f"torchcts: stopped {len(stopped)} warm worker server(s)")
        return 0
    running = warm.running()
    for pid, name in running:
        print(f"warm worker server pid {pid} ({name})")
    if not running:
        print("torchcts: no warm worker server is running")
    return 0
