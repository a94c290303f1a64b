"""Turning a validated run request into a run: manifest, device, version check, selected cases.

The request is built and checked by cli/ (flags, device given, selection); nothing here sees argparse.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from torchcts.backends.devices import DeviceInfo, resolve_device
from torchcts.cases.registry import iter_cases
from torchcts.compat import check_torch_version
from torchcts.engine import selection_memo
from torchcts.engine.selection import Selection, SelectionResult, select
from torchcts.errors import UsageError
from torchcts.manifest.load import find_manifest, load_manifest
from torchcts.manifest.schema import Manifest
from torchcts.manifest.templates import cpu_manifest, validation_manifest


@dataclass
class RunRequest:
    """What `torchcts run` and `show-skips` ask for, already checked by cli/."""

    device: str | None
    manifest: str | None = None  # path given with --manifest; None: found here, or built-in claims
    selection: Selection = field(default_factory=Selection)
    validation: bool = False
    strict_expectations: bool = False
    rerun_failures: int = 0


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


def load_claims(device: str | None, manifest_path: str | None, validation: bool = False) -> Manifest:
    """The manifest a run uses: validation claims, the given/found manifest, or built-in CPU claims."""
    if validation:
        if device and device != "cpu":
            print(f"torchcts: note: --validation forces cpu; --device {device} is ignored and "
                  "these results are never backend evidence", file=sys.stderr)
        return validation_manifest()
    if manifest_path or find_manifest() is not None:
        manifest = load_manifest(manifest_path)
        if manifest.device_name != device:
            raise UsageError(
                f"the manifest ({manifest.source}) is for device '{manifest.device_name}' but --device is "
                f"'{device}': pass --device {manifest.device_name} or use that device's manifest"
            )
        return manifest
    if device == "cpu":
        print("torchcts: note: no manifest found; using the built-in CPU claims", file=sys.stderr)
        return cpu_manifest()
    resolve_device(device)  # an unknown or unavailable device says so first, with what is here
    raise UsageError(
        f"no manifest found for device '{device}': run 'torchcts init --backend {device}' "
        "or pass --manifest PATH"
    )


def prepare(request: RunRequest) -> RunSetup:
    check_torch_version()
    selection = request.selection
    manifest = load_claims(request.device, request.manifest, request.validation)
    if selection.max_samples is None:
        selection.max_samples = manifest.max_samples
    device = resolve_device("cpu" if request.validation else request.device, manifest.backend_import)
    key = selection_memo.memo_key(manifest, selection)
    result = selection_memo.load(key) if key else None
    if result is None:
        result = select(iter_cases(selection.suites or None), manifest, selection)
        if key:
            selection_memo.store(key, result)
    return RunSetup(manifest, device, selection, result, request.validation,
                    request.strict_expectations, request.rerun_failures,
                    None if request.validation else request.manifest)
