"""`torchcts backends`: in-tree devices and the PrivateUse1 catalog, with presets and caveats."""

from __future__ import annotations

import argparse

from torchcts.errors import ExitCode

HELP = "list in-tree devices and the PrivateUse1 backend catalog with manifest presets"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the catalog as JSON")


def _in_tree_status(name: str) -> str:
    """Whether this torch build can run an in-tree device now."""
    from torchcts.compat import device_available, hip_version

    if name == "rocm":
        if not hip_version():
            return "not this build"
        return "available" if device_available("cuda") else "built, no device"
    if name == "cuda" and hip_version():
        return "ROCm build (see rocm)"
    try:
        return "available" if device_available(name) else "not available"
    except Exception as exc:  # noqa: BLE001 - a broken device module is reported, not raised
        return f"error: {type(exc).__name__}"


def rows() -> dict[str, list[dict[str, object]]]:
    from dataclasses import asdict

    from torchcts.backends.catalog import IN_TREE, PRIVATEUSE1, importable

    return {
        "in_tree": [{**asdict(d), "here": _in_tree_status(d.name)} for d in IN_TREE],
        "privateuse1": [{**asdict(b), "importable": importable(b.import_name)} for b in PRIVATEUSE1],
    }


def main(args: argparse.Namespace) -> int:
    data = rows()
    if args.json:
        import json

        print(json.dumps(data, indent=2))
        return ExitCode.OK
    print("In-tree devices (run with --device DEVICE):")
    for d in data["in_tree"]:
        print(f"  {d['name']:5} device {d['device']:5} gate {d['gate']:5} build: {d['build']}; here: {d['here']}")
        print(f"        {d['note']}")
    print()
    print("PrivateUse1 catalog (an engineering reference, not a certification list):")
    for b in data["privateuse1"]:
        tag = " [ecosystem example]" if b["ecosystem_example"] else ""
        tag += " [TorchCTS's own, for harness checks]" if b["harness"] else ""
        here = "importable here" if b["importable"] else "not installed here"
        print(f"  {b['key']}: {b['project']}{tag} - import {b['import_name']}, device {b['device']}; {here}")
        print(f"        {b['description']}")
        print(f"        caveat: {b['caveat']}")
        print(f"        preset: torchcts init --backend {b['key']}   ({b['url']})")
    return ExitCode.OK
