"""Turning command-line intent into a run: manifest, device, version check, selected cases."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from torchcts.backends.devices import DeviceInfo, resolve_device
from torchcts.cases.registry import iter_cases
from torchcts.cli.common import require_device, selection_from_args
from torchcts.compat import check_torch_version
from torchcts.engine.selection import Selection, SelectionResult, select
from torchcts.errors import UsageError
from torchcts.manifest.load import find_manifest, load_manifest
from torchcts.manifest.schema import Manifest
from torchcts.manifest.templates import cpu_manifest, validation_manifest


@dataclass
class RunSetup:
    manifest: Manifest
    device: DeviceInfo
    selection: Selection
    result: SelectionResult
    validation: bool
    strict_expectations: bool = False  # expired/unmatched ledger entries, xpassed, flaky fail the run
    rerun_failures: int = 0  # rerun failing cases up to N times in fresh pytest sessions
    manifest_arg: str | None = None  # `--manifest` as given: repro lines repeat it


def load_claims(args: argparse.Namespace) -> Manifest:
    """The manifest a run uses: validation claims, the given/found manifest, or built-in CPU claims."""
    if args.validation:
        if args.device and args.device != "cpu":
            print(f"torchcts: note: --validation forces cpu; --device {args.device} is ignored and "
                  "these results are never backend evidence", file=sys.stderr)
        return validation_manifest()
    if args.manifest or find_manifest() is not None:
        manifest = load_manifest(args.manifest)
        if manifest.device_name != args.device:
            raise UsageError(
                f"the manifest ({manifest.source}) is for device '{manifest.device_name}' but --device is "
                f"'{args.device}': pass --device {manifest.device_name} or use that device's manifest"
            )
        return manifest
    if args.device == "cpu":
        print("torchcts: note: no manifest found; using the built-in CPU claims", file=sys.stderr)
        return cpu_manifest()
    resolve_device(args.device)  # an unknown or unavailable device says so first, with what is here
    raise UsageError(
        f"no manifest found for device '{args.device}': run 'torchcts init --backend {args.device}' "
        "or pass --manifest PATH"
    )


def prepare(args: argparse.Namespace) -> RunSetup:
    require_device(args)
    check_torch_version()
    selection = selection_from_args(args)
    manifest = load_claims(args)
    if selection.max_samples is None:
        selection.max_samples = manifest.max_samples
    device = resolve_device("cpu" if args.validation else args.device, manifest.backend_import)
    result = select(iter_cases(selection.suites or None), manifest, selection)
    return RunSetup(manifest, device, selection, result, bool(args.validation),
                    bool(getattr(args, "strict_expectations", False)), int(getattr(args, "rerun_failures", 0) or 0),
                    None if args.validation else getattr(args, "manifest", None))
