"""Resolving `--device` to a usable torch.device, importing PrivateUse1 backends first."""

from __future__ import annotations

import importlib
import sys

from torchcts.backends.gates import IN_TREE_DEVICES, derive_gate
from torchcts.compat import privateuse1_name
from torchcts.errors import UsageError, first_line
from torchcts.model.device import DeviceInfo


def import_backend(module: str | None) -> None:
    """Import the manifest's backend_import, torch first; any failure is one clear usage error.

    Torch first, always: a backend that PyTorch autoloads (the `torch.backends` entry point) imports
    torch at its top, and torch's import calls back into the half-imported backend (a circular
    import) when the backend is the one imported first. A module that is not installed is said
    before torch is imported (seconds under load)."""
    if not module:
        return
    if _not_installed(module):
        raise UsageError(
            f"backend_import '{module}' failed to import: ModuleNotFoundError: No module named "
            f"'{module.split('.')[0]}'; install the backend package in this environment or fix backend_import in the manifest"
        )
    try:
        import torch  # noqa: F401 - before the backend: see above
    except BaseException as exc:  # noqa: BLE001 - an autoloaded backend may raise anything
        raise UsageError(
            f"importing torch failed: {type(exc).__name__}: {first_line(exc)}; a backend PyTorch autoloads "
            "(the torch.backends entry point) runs inside that import: fix or uninstall it, or set "
            "TORCH_DEVICE_BACKEND_AUTOLOAD=0 and name it in backend_import"
        ) from None
    try:
        importlib.import_module(module)
    except UsageError:  # the sim's own (a TORCHCTS_SIM_FAULT typo): already the problem and its fix
        raise
    except BaseException as exc:  # noqa: BLE001 - a backend may raise anything, SystemExit included
        raise UsageError(
            f"backend_import '{module}' failed to import: {type(exc).__name__}: {first_line(exc)}; "
            "install the backend package in this environment or fix backend_import in the manifest"
        ) from None


def _not_installed(module: str) -> bool:
    """True when the top-level package of `module` is not on sys.path (known without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module.split(".")[0]) is None
    except (ImportError, ValueError):  # a malformed name: let the import say why
        return False


ROCM_NAMES = ("rocm", "hip")
ROCM_FIX = "ROCm runs as --device cuda (the rocm backend gate): PyTorch's ROCm builds expose HIP devices as 'cuda'"


def reject_rocm_name(name: str | None) -> None:
    """'rocm' and 'hip' name no device (a ROCm build's HIP devices are 'cuda'): UsageError naming the fix."""
    if name in ROCM_NAMES:
        raise UsageError(f"'{name}' is not a device: {ROCM_FIX}")


def misspelt_device(name: str) -> str | None:
    """The in-tree or catalog device name `name` is a typo of (cdua: cuda, cpux: cpu), known without
    importing torch; None for a known name or one close to none (a backend may register any name)."""
    import difflib

    from torchcts.backends.catalog import PRIVATEUSE1, find_backend

    if name in IN_TREE_DEVICES or find_backend(name) is not None:
        return None
    known = [*IN_TREE_DEVICES, *(entry.device for entry in PRIVATEUSE1)]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


def spelling_hint(name: str) -> str | None:
    """`did you mean 'cuda'? (...)` for a misspelt device name (misspelt_device), else None."""
    close = misspelt_device(name)
    if close is None:
        return None
    return (f"did you mean '{close}'? (in-tree devices: {', '.join(IN_TREE_DEVICES)}; "
            "'torchcts backends' lists the PrivateUse1 backends)")


def check_device_spelling(name: str) -> None:
    """A --device that is a typo of a known device name: UsageError naming the closest one, before
    anything is imported (a misspelt device is a configuration error, not a backend to write)."""
    hint = spelling_hint(name)
    if hint is not None:
        raise UsageError(f"unknown device '{name}': {hint}")


def missing_import_problem(device: str, backend_import: str | None) -> str | None:
    """Why a manifest's device cannot work, known without importing anything: not shipped by
    PyTorch and nothing to import registers it; the text after "device_name 'X': "."""
    if device in IN_TREE_DEVICES or backend_import:
        return None
    if device in ROCM_NAMES:
        return f"{ROCM_FIX}; set device_name to 'cuda'"
    hint = spelling_hint(device)
    if hint is not None:
        return f"no such device: {hint}"
    from torchcts.backends.catalog import find_backend

    entry = find_backend(device)
    module = entry.import_name if entry else "MODULE"
    known = f" ({entry.import_name} for {entry.project})" if entry else ""
    return (f"not an in-tree device ({', '.join(IN_TREE_DEVICES)}) and no backend_import registers it: set "
            f"backend_import to the module that registers '{device}'{known} (`torchcts init --backend {device} "
            f"--import {module}` writes it)")


def registration_problem(device: str, backend_import: str | None) -> str | None:
    """After importing torch and `backend_import`: why this process has no device `device`, naming
    the device name the backend did register as the fix; None when the name is registered (also
    by PyTorch's own autoloading of installed backends)."""
    if device in IN_TREE_DEVICES:
        return None
    registered = privateuse1_name()
    if device == registered:
        return None
    if not backend_import or device in ROCM_NAMES:
        return missing_import_problem(device, None)
    if registered == "privateuseone":
        return (f"backend_import '{backend_import}' registers no device name (PrivateUse1 is still "
                f"'privateuseone'): use device_name 'privateuseone', or import the module that registers '{device}'")
    return (f"backend_import '{backend_import}' registers the device '{registered}', not '{device}': "
            f"set device_name to '{registered}' and run with --device {registered}")


def available_devices() -> list[str]:
    """Device types usable in this process, for error messages."""
    from torchcts.compat import device_available

    found = ["cpu"]
    for name in (*IN_TREE_DEVICES[1:], privateuse1_name()):
        try:
            if device_available(name):
                found.append(name)
        except Exception:  # noqa: BLE001 - a broken backend module is just not available
            continue
    return found


def resolve_device(name: str, backend_import: str | None = None) -> DeviceInfo:
    """Import the backend, check the device type exists and is available, derive its gate.

    The CPU with no backend to import needs no torch here: collection-only commands stay fast.
    """
    reject_rocm_name(name)
    if name == "cpu" and not backend_import:
        return DeviceInfo("cpu", "cpu", 1, _cpu_model())

    from torchcts.compat import device_count, device_model, module_gaps_note

    import_backend(backend_import)
    if name == "cpu":
        return DeviceInfo("cpu", "cpu", 1, _cpu_model())
    problem = registration_problem(name, backend_import)
    if problem is not None:
        raise UsageError(f"unknown device '{name}': {problem}; available here: {', '.join(available_devices())}")
    problem = availability_problem(name)
    if problem is not None:
        raise UsageError(problem)
    note = module_gaps_note(name)
    if note:
        print(f"torchcts: note: {note}", file=sys.stderr)
    return DeviceInfo(name, derive_gate(name), device_count(name), device_model(name), note)


def availability_problem(name: str) -> str | None:
    """Why a registered device cannot be run here (the refusal `run` gives), None where it can.

    One wording for `run`, which refuses with it, and `check-manifest`, which reports it.
    """
    import torch

    from torchcts.compat import device_available

    try:
        ok = device_available(name)
    except Exception as exc:  # noqa: BLE001 - a broken device module is the backend's problem, said in one line
        return f"torch.{name}.is_available() raised {type(exc).__name__}: {exc}"
    if ok:
        return None
    return (f"device '{name}' is not available in this build ({torch.__version__}); "
            f"available here: {', '.join(available_devices())}; see 'torchcts backends' and 'torchcts install'")


def split_device_index(spelling: str) -> str:
    """The device type of a --device spelling: `ocl:0` names the manifest's device `ocl` (index 0,
    the device the cases run on). Another index is refused: cases run on the current device, and
    TorchCTS has no way to make another index current on every backend."""
    name, sep, index = spelling.partition(":")
    if not sep:
        return spelling
    if not index.isdigit() or not name:
        raise UsageError(f"--device '{spelling}' is not a device: write TYPE or TYPE:INDEX, e.g. --device {name or 'cuda'}:0")
    if int(index) != 0:
        raise UsageError(f"--device '{spelling}': cases run on index 0 of a device type (the multi_device suite "
                         f"uses the others): pass --device {name}")
    return name


def _cpu_model() -> str:
    import platform

    return platform.machine() or "cpu"
