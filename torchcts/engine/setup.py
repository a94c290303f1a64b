"""Turning a checked run spec into a run: manifest, device, version check, selected cases.

The spec (engine/spec.py) is built and checked by cli/ (flags, device given, selection); nothing
here sees argparse.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

from torchcts.backends.devices import check_device_spelling, resolve_device
from torchcts.cases.explore.budget import default_depth
from torchcts.cases.registry import iter_cases
from torchcts.compat import check_torch_version
from torchcts.engine import selection_memo
from torchcts.engine.selection import SelectionResult, select
from torchcts.engine.spec import RunSpec
from torchcts.errors import UsageError
from torchcts.manifest.load import find_manifest, load_manifest, portable_manifest
from torchcts.manifest.templates import cpu_manifest, validation_manifest
from torchcts.model.manifest import Manifest

# The first line of a CPU run with no manifest (README.md, "Your backend in five minutes").
NO_MANIFEST_NOTE = ("torchcts: note: no manifest here (manifest.py, torchcts.toml or [tool.torchcts] in "
                    "pyproject.toml): using the built-in CPU claims; 'torchcts init' writes one to edit")


@dataclass
class RunSetup:
    """A prepared run: the spec with its claims and device resolved, and every case's decision."""

    spec: RunSpec
    result: SelectionResult


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
        print(NO_MANIFEST_NOTE, file=sys.stderr)
        return cpu_manifest()
    check_device_spelling(device)  # a typo of a known name: the closest one, before torch is imported
    resolve_device(device)  # an unknown or unavailable device says so first, with what is here
    raise UsageError(
        f"no manifest found for device '{device}': run 'torchcts init --backend {device}' "
        "or pass --manifest PATH"
    )


def prepare(spec: RunSpec, resolve: bool = True) -> RunSetup:
    """Resolve a checked spec (cli/common.py: run_spec): claims, device, the cases to run.
    `resolve=False` (show-skips) decides from the manifest alone: the backend is not imported and
    the device not checked (`device` stays None), since selection reads only the claims."""
    check_torch_version()
    selection = spec.selection
    manifest = load_claims(spec.device_arg, spec.manifest_arg, spec.validation)
    if selection.max_samples is None:
        selection.max_samples = manifest.max_samples
    device = resolve_device("cpu" if spec.validation else spec.device_arg, manifest.backend_import) if resolve else None
    key = selection_memo.memo_key(manifest, selection)
    result = selection_memo.load(key) if key else None
    if result is None:
        result = select(iter_cases(), manifest, selection)
        if key:
            selection_memo.store(key, result)
    explore = spec.explore
    if explore is None:  # the selection's top level's depth, deeper for a focused run (cases/explore/budget.py)
        explored = sum(1 for case in result.to_run if case.kind == "explore")
        explore = default_depth(selection.levels(manifest.semantic_level)[1], explored)
    # --validation ignores any --manifest: repro lines must not name it; a manifest inside the package
    # (the sim's) is named `torchcts:REL`, so the lines run wherever TorchCTS is installed
    resolved = replace(spec.resolved(manifest, device), explore=explore,
                       manifest_arg=None if spec.validation else portable_manifest(spec.manifest_arg))
    return RunSetup(resolved, result)
