"""`torchcts install`: choose a PyTorch wheel family from hardware signals, explain it, install it."""

from __future__ import annotations

import argparse
import subprocess
import sys

from torchcts.errors import ExitCode

HELP = "choose and install a PyTorch wheel family (cpu, cuXXX, rocmX.Y, xpu, default)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--family", default="auto", metavar="F",
                   help="auto (from hardware signals), cpu, cu118, cu126, cu128, cu130, cuda (the newest for --torch and the "
                        "driver), cudaX.Y, rocm (the newest for --torch), rocmX.Y, xpu, mps or default (PyPI)")
    p.add_argument("--torch", metavar="VERSION", help="torch release to install (default: newest validated)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and the pip command; install nothing")
    p.add_argument("--yes", "-y", action="store_true", help="install without asking (needed in CI)")


def run_command(cmd: list[str]) -> int:
    """Run pip in this environment; tests replace this function so nothing is downloaded."""
    return subprocess.call(cmd)


def _confirmed(args: argparse.Namespace) -> bool:
    from torchcts.cli.common import non_interactive
    from torchcts.errors import UsageError

    if args.yes:
        return True
    if non_interactive():
        raise UsageError("refusing to install without confirmation in a non-interactive session: "
                         "pass --yes to install, or --dry-run to only print the plan")
    return input("Run this command? [y/N] ").strip().lower() in ("y", "yes")


def main(args: argparse.Namespace) -> int:
    from torchcts.backends.install_plan import check_family, plan_install
    from torchcts.backends.signals import detect, installed_torch

    check_family(args.family)
    signals = detect()
    installed = installed_torch()
    plan = plan_install(signals, args.family, args.torch, installed, python=sys.executable)
    print(f"detected: {signals.describe()}")
    print(f"installed: {installed.describe() if installed else 'no torch in this environment'}")
    print(f"plan: wheel family {plan.family} (confidence {plan.confidence}), torch {plan.torch_version}")
    for reason in plan.reasons:
        print(f"  - {reason}")
    for note in plan.notes:
        print(f"  ! {note}")
    print(f"command: {plan.command_line}")
    if plan.action == "none":
        print("nothing to do: this build is already installed")
        return ExitCode.OK
    if plan.action == "keep":
        print("kept the installed torch; nothing installed")
        return ExitCode.OK
    if args.dry_run:
        print("dry run: nothing installed")
        return ExitCode.OK
    if not _confirmed(args):
        print("not installed")
        return ExitCode.OK
    code = run_command(plan.command)
    if code != 0:
        print(f"torchcts: error: pip exited with status {code}; nothing else was changed", file=sys.stderr)
        return ExitCode.FAILURES
    print("installed; 'torchcts backends' shows what this build can run")
    return ExitCode.OK
