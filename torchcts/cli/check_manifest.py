"""`torchcts check-manifest [PATH]`: list every problem of a manifest; exit 0 or 2."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from torchcts.errors import ExitCode

if TYPE_CHECKING:
    from torchcts.model.manifest import Manifest

HELP = "validate a manifest and list every problem (exit 2 if any)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", help="manifest file (default: the one found here)")
    # `run`'s spelling, which users carry over (OpenReg's first check-manifest): the same file
    p.add_argument("--manifest", dest="manifest_flag", metavar="PATH", help="the same as PATH")
    p.add_argument("--no-import", action="store_true", help="do not import backend_import")


def main(args: argparse.Namespace) -> int:
    from torchcts.errors import UsageError
    from torchcts.manifest.load import load_manifest
    from torchcts.manifest.schema import claimed_dtypes

    flag = args.manifest_flag
    if flag is not None and args.path is not None and flag != args.path:
        raise UsageError(f"check-manifest got two manifests ({args.path} and --manifest {flag}); give one")
    manifest = load_manifest(args.path if args.path is not None else flag)
    notes = check_device(manifest, imports=not args.no_import)
    if manifest.expectations:  # only then is the case registry built
        from torchcts.errors import ManifestError
        from torchcts.results.ledger.match import registry_problems

        problems = registry_problems(manifest.expectations)
        if problems:
            raise ManifestError(problems, manifest.source)
    claimed = ", ".join(claimed_dtypes(manifest)) or "none"
    caps = ", ".join(c for c, v in manifest.capabilities.items() if v) or "none"
    print(f"{manifest.source}: OK — device '{manifest.device_name}', level {manifest.semantic_level}")
    print(f"  dtypes: {claimed}")
    print(f"  capabilities: {caps}")
    from torchcts.manifest.pytorch_capabilities import render_lines

    for line in render_lines(manifest):
        print(line)
    if manifest.expectations:
        print(f"  expectations: {len(manifest.expectations)} ledger entries")
    for note in notes:
        print(f"  note: {note}")
    for line in placeholder_warnings(manifest):
        print(line)
    return ExitCode.OK


def placeholder_warnings(manifest: Manifest) -> list[str]:
    """Entries whose reason is still `expectations update`'s placeholder: valid, so only a warning,
    but a ledger is where a reader learns why a failure is accepted."""
    from torchcts.results.ledger.proposals import PLACEHOLDER_REASON
    from torchcts.results.reports.quoting import one_line

    return [f"warning: expectations[{i}] ({one_line(str(e.get('match')))[:80]}): its reason is still the placeholder "
            f"'{PLACEHOLDER_REASON}' that `torchcts expectations update` wrote: say why it fails"
            for i, e in enumerate(manifest.expectations)
            if str(e.get("reason") or "").startswith(PLACEHOLDER_REASON)]


def check_device(manifest: Manifest, imports: bool) -> list[str]:
    """The device must be one a run can use: in-tree, or registered by backend_import. Importing
    the backend (the default) also catches a device_name the backend does not register (a typo),
    naming the registered one; with --no-import only a missing backend_import is caught.

    Returns notes a run would also give on an imported backend's device (what its device module
    lacks; that it is not available here), so check-manifest never says less than `run` will."""
    from torchcts.backends.devices import import_backend, missing_import_problem, registration_problem
    from torchcts.backends.gates import IN_TREE_DEVICES
    from torchcts.errors import ManifestError

    device = manifest.device_name
    problem = missing_import_problem(device, manifest.backend_import)
    notes: list[str] = []
    if imports and (device not in IN_TREE_DEVICES or manifest.backend_import):
        import_backend(manifest.backend_import)
        problem = registration_problem(device, manifest.backend_import)
        if not problem and device not in IN_TREE_DEVICES:
            notes = device_notes(device)
    if problem:
        raise ManifestError([f"device_name '{device}': {problem}"], manifest.source)
    return notes


def device_notes(device: str) -> list[str]:
    """What `run` would say about a registered PrivateUse1 device: its module's gaps, its availability."""
    from torchcts.backends.devices import availability_problem
    from torchcts.compat import module_gaps_note

    notes = [n for n in [module_gaps_note(device)] if n]
    problem = availability_problem(device)
    if problem is not None:
        notes.append(f"a run refuses it: {problem}")
    return notes
