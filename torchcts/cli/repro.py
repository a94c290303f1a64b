"""`torchcts repro CASE [--run RUN]`: write a standalone script that reproduces one case."""

from __future__ import annotations

import argparse

HELP = "write a standalone script (torch + the backend only) that reproduces one case"


def configure(p: argparse.ArgumentParser) -> None:
    from torchcts.cli.common import add_manifest_arg

    p.add_argument("case", metavar="CASE", help="exact case id, e.g. operators/elementwise/add/float32")
    p.add_argument("--run", metavar="RUN", help="run folder or name whose device, claims and failure to use "
                   "(default: the latest run, if any)")
    p.add_argument("--results-dir", default="results", metavar="DIR")
    p.add_argument("--output", "-o", metavar="DIR", help="folder to write repro.py and inputs.pt "
                   "(default: <run>/repro/<case>/, or repro/<case>/ without a run)")
    p.add_argument("--device", help="device, when there is no run to take it from")
    add_manifest_arg(p)


def main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from torchcts.errors import UsageError
    from torchcts.results import rundir
    from torchcts.results.repro import SCRIPT, target_from_registry, target_from_run, write_repro

    try:
        run_dir = rundir.resolve_run(args.run, Path(args.results_dir))
    except UsageError:
        if args.run:
            raise
        run_dir = None
    if run_dir is not None:
        target = target_from_run(args.case, run_dir)
    else:
        if not args.device:
            raise UsageError("no run to take the device from: pass --run RUN or --device D")
        from torchcts.engine.setup import load_claims

        target = target_from_registry(args.case, args.device, load_claims(args.device, args.manifest))
    folder = write_repro(target, Path(args.output) if args.output else None)
    print(f"wrote {folder / SCRIPT} and its inputs for case {args.case} on device '{target.device}'; "
          f"run it with: python {folder / SCRIPT}")
    return 0
