"""`torchcts repro CASE [--run RUN]`: write a standalone script that reproduces one case."""

from __future__ import annotations

import argparse
import shlex
import sys

from torchcts.cli.common import add_results_dir_arg
from torchcts.errors import ExitCode

HELP = "write a standalone script (torch + the backend only) that reproduces one case"


def configure(p: argparse.ArgumentParser) -> None:
    from torchcts.cli.common import add_manifest_arg

    p.add_argument("case", metavar="CASE", help="exact case id, e.g. operators/elementwise/add/float32")
    p.add_argument("--run", metavar="RUN", help="run folder or name, or a results folder (its latest run), "
                   "whose device, claims and failure to use (default: the latest run, if any)")
    p.add_argument("--sample", type=int, metavar="N", help="sample index to reproduce (default: the run's failing one)")
    add_results_dir_arg(p)
    p.add_argument("--output", "-o", metavar="DIR", help="folder to write repro.py and inputs.pt "
                   "(default: <run>/repro/<case>/, or repro/<case>/ without a run)")
    p.add_argument("--device", help="device, when there is no run to take it from")
    p.add_argument("--import", dest="import_module", metavar="MODULE",
                   help="backend module the script imports (default: your manifest's backend_import for the device, "
                   "else the run's when it is the catalog's module for its device (torchcts backends); never another "
                   "module a run folder names)")
    add_manifest_arg(p)


def main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from torchcts.errors import UsageError
    from torchcts.results.records import rundir
    from torchcts.results.records.scrub import scrub
    from torchcts.results.reports.quoting import TerminalOut
    from torchcts.results.repro.script import SCRIPT, target_from_registry, target_from_run, write_repro

    try:
        run_dir = rundir.resolve_run(args.run, Path(args.results_dir))
    except UsageError:
        if args.run:
            raise
        run_dir = None
    if run_dir is not None:
        target = target_from_run(args.case, run_dir)
        target.backend_import = args.import_module or run_backend(target.manifest.backend_import, target.device,
                                                                  args.manifest)
    else:
        if not args.device:
            raise UsageError("no run to take the device from: pass --run RUN or --device D")
        from torchcts.engine.setup import load_claims

        target = target_from_registry(args.case, args.device, load_claims(args.device, args.manifest))
        target.backend_import = args.import_module or target.manifest.backend_import
    if args.sample is not None and args.sample < 0:
        raise UsageError("--sample must be a sample index >= 0")
    folder = write_repro(target, Path(args.output) if args.output else None, args.sample)
    script = shlex.quote(str(folder / SCRIPT))  # a crafted run folder's name is quoted for the shell
    # the case id and the device come from a file anyone can craft; the script's path, which the user
    # chose (or the run folder they named), is printed as given so the line runs as printed
    out = TerminalOut(sys.stdout, restore={scrub(script): script})
    imports = f"imports torch and {target.backend_import!r}" if target.backend_import else "imports only torch"
    print(f"wrote {SCRIPT} and its inputs for case {args.case} on device '{target.device}' ({imports}); "
          f"run it with: python {script}", file=out)
    return ExitCode.OK


def run_backend(recorded: str | None, device: str, manifest: str | None) -> str | None:
    """The backend module to import for a run folder's device: the reader's own manifest's (--manifest,
    else the one found here) for that device, else the run's own when the catalog vouches for it
    (`repro` and `coverage report RUN` alike)."""
    return _reader_backend(manifest, device) or _catalog_backend(recorded, device)


def _catalog_backend(module: str | None, device: str) -> str | None:
    """The run's backend module when the catalog knows it as the module of the run's device
    (torchcts.sim for sim, torch_npu for npu): a name a run folder holds is imported only when it is
    one the reader would have chosen anyway, so a crafted run.json cannot pick what the script imports."""
    from torchcts.backends.catalog import find_backend

    entry = find_backend(module) if module else None
    return module if entry is not None and entry.import_name == module and entry.device == device else None


def _reader_backend(manifest: str | None, device: str) -> str | None:
    """The backend module of the reader's own manifest (--manifest, else the one found here) when it is
    for the run's device: a repro bundle never chooses what its reader imports."""
    from torchcts.manifest.load import display_path, find_manifest, load_manifest
    from torchcts.results.reports.quoting import one_line

    found = find_manifest() if manifest is None else None
    if manifest is None and found is None:
        return None
    if found is not None:  # said before it is read: a manifest.py is Python, run by loading it
        kind = "Python, executed to read it" if found.suffix == ".py" else "read as data"
        print(f"torchcts: note: using the manifest {one_line(display_path(found))} of the working folder ({kind}) for "
              "the backend module; pass --manifest PATH to choose another", file=sys.stderr, flush=True)
    claims = load_manifest(manifest)
    return claims.backend_import if claims.device_name == device else None
