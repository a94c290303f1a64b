"""`torchcts init`: write a commented manifest to start from."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torchcts.errors import ExitCode

HELP = "write a manifest to start from (smoke, minimal, inference, training, complete)"


def configure(p: argparse.ArgumentParser) -> None:
    from torchcts.manifest.templates import TEMPLATES

    p.add_argument("--template", choices=list(TEMPLATES), default="minimal", help="claim set to start from")
    p.add_argument("--backend", metavar="NAME",
                   help="device name or catalog preset (npu, ocl, openreg, webgpu, ...; default cpu, see 'torchcts backends')")
    p.add_argument("--import", dest="backend_import", metavar="MODULE",
                   help="the module that registers the device (backend_import); needed for a --backend outside the catalog")
    p.add_argument("--output", "-o", default="manifest.py", metavar="PATH", help="file to write (default manifest.py)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")


def _warn(text: str) -> None:
    print(f"torchcts: warning: {text}", file=sys.stderr)


def _ask_module(backend: str) -> str:
    """On a terminal: the module that registers an uncatalogued device ("" when none is typed)."""
    print(f"'{backend}' is not in the catalog (torchcts backends). The Python module that registers the device "
          f"'{backend}' (backend_import): ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip()


def preset(backend: str | None, module: str | None = None) -> tuple[str, str | None]:
    """(device_name, backend_import) for --backend and --import; catalog presets come from
    backends.catalog. A name outside the catalog needs its module (--import, or asked on a terminal):
    a manifest with backend_import None for it would pass nothing but fail every run.

    Without --backend the manifest is for cpu, so init, check-manifest and `run --device cpu` work
    as a first try on any machine; the comment in the file says where to put the real device.
    """
    from torchcts.backends.catalog import importable, preset_for, support_warning
    from torchcts.backends.devices import ROCM_FIX, ROCM_NAMES
    from torchcts.cli.common import non_interactive
    from torchcts.errors import UsageError

    if module is not None and not all(part.isidentifier() for part in module.split(".")):
        raise UsageError(f"--import '{module}' is not a module name: pass the import name, e.g. torch_npu")
    if not backend:
        if module:
            raise UsageError("--import needs --backend NAME, the device name the module registers")
        return "cpu", None
    known = preset_for(backend)
    if known is not None:
        if backend.lower() in ROCM_NAMES:
            print(f"torchcts: note: {ROCM_FIX}; the manifest names device 'cuda'", file=sys.stderr)
        warning = support_warning(backend)
        if warning:
            _warn(warning)
        return known[0], module or known[1]
    if not backend.isidentifier():
        raise UsageError(f"--backend '{backend}' is not a device name: use the name the backend registers, e.g. npu")
    if module is None:
        if non_interactive():
            raise UsageError(f"--backend '{backend}' is not in the catalog (torchcts backends): pass --import MODULE, "
                             f"the Python module that registers the device '{backend}'")
        module = _ask_module(backend)
        if not module:
            raise UsageError(f"no module given for '{backend}': pass --import MODULE, the Python module that "
                             f"registers the device '{backend}'")
        return preset(backend, module)
    _warn(f"'{backend}' is not in the catalog: the manifest imports '{module}' to register it; "
          f"'torchcts check-manifest' imports it and checks that it registers '{backend}'"
          + ("" if importable(module) else f" ('{module}' is not installed here yet)"))
    return backend, module


def main(args: argparse.Namespace) -> int:
    from torchcts.errors import UsageError
    from torchcts.manifest.templates import render_python

    out = Path(args.output)
    if out.exists() and not args.force:
        raise UsageError(f"{out.name} already exists: pass --force to overwrite it or -o PATH for another file")
    device, backend_import = preset(args.backend, args.backend_import)
    out.write_text(render_python(args.template, device, backend_import), encoding="utf-8")
    print(f"wrote {out.name} ({args.template} template, device '{device}'); next: torchcts check-manifest {out.name}")
    return ExitCode.OK
