"""`torchcts init`: write a commented manifest to start from."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "write a manifest to start from (smoke, minimal, inference, training, complete)"


def configure(p: argparse.ArgumentParser) -> None:
    from torchcts.manifest.templates import TEMPLATES

    p.add_argument("--template", choices=list(TEMPLATES), default="minimal", help="claim set to start from")
    p.add_argument("--backend", metavar="NAME",
                   help="device name or catalog preset (npu, ocl, openreg, webgpu, ...; default cpu, see 'torchcts backends')")
    p.add_argument("--output", "-o", default="manifest.py", metavar="PATH", help="file to write (default manifest.py)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")


def preset(backend: str | None) -> tuple[str, str | None]:
    """(device_name, backend_import) for --backend; catalog presets come from backends.catalog.

    Without --backend the manifest is for cpu, so init, check-manifest and `run --device cpu` work
    as a first try on any machine; the comment in the file says where to put the real device.
    """
    if not backend:
        return "cpu", None
    from torchcts.backends.catalog import preset_for

    return preset_for(backend) or (backend, None)


def main(args: argparse.Namespace) -> int:
    from torchcts.errors import UsageError
    from torchcts.manifest.templates import render_python

    out = Path(args.output)
    if out.exists() and not args.force:
        raise UsageError(f"{out.name} already exists: pass --force to overwrite it or -o PATH for another file")
    device, backend_import = preset(args.backend)
    out.write_text(render_python(args.template, device, backend_import), encoding="utf-8")
    print(f"wrote {out.name} ({args.template} template, device '{device}'); next: torchcts check-manifest {out.name}")
    return 0
