"""Choosing a PyTorch wheel family: a pure function from signals to a plan and its pip command.

The build (which wheel family is installed) is separate from the runtime device under test: this
module only decides the build. It never runs anything; `cli/install.py` does, after consent.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from torchcts.backends.signals import InstalledTorch, Signals
from torchcts.errors import UsageError
from torchcts.releases import MAX_VALIDATED_TORCH, MIN_TORCH, RELEASES, cuda_families, family_range, fmt, parse_version

INDEX = "https://download.pytorch.org/whl"


def _cuda_of(family: str) -> tuple[int, int]:
    """cu130 -> (13, 0): the CUDA version the NVIDIA driver must support for a family."""
    digits = family.removeprefix("cu")
    return int(digits[:-1]), int(digits[-1])


# CUDA wheel families and the CUDA version the NVIDIA driver must support for each (the release
# table, torchcts/releases.py, names which torch releases publish each one).
CUDA_FAMILIES: dict[str, tuple[int, int]] = {f: _cuda_of(f) for f in cuda_families()}
FIXED_FAMILIES = ("cpu", *CUDA_FAMILIES, "xpu", "default")
ROCM_PATTERN = re.compile(r"rocm\d+\.\d+(\.\d+)?")
DEFAULT_ROCM = "rocm6.4"
# The newest ROCm wheel family published for each torch release line: what `--family rocm` installs.
NEWEST_ROCM: dict[tuple[int, int], str] = {k: line.rocm for k, line in RELEASES.items() if line.rocm}
# Families published only for part of the supported range: (first, last) torch (major, minor).
FAMILY_TORCH_RANGE: dict[str, tuple[tuple[int, int] | None, tuple[int, int] | None]] = {
    f: family_range(f) for f in CUDA_FAMILIES if family_range(f) != (None, None)
}


@dataclass
class Plan:
    """What `torchcts install` would do, and why."""

    family: str
    confidence: str            # high | medium | low
    reasons: list[str]
    torch_version: str
    command: list[str]
    action: str                # install | keep | none
    notes: list[str] = field(default_factory=list)

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)


def index_url(family: str) -> str | None:
    """The official package index of a family; None for 'default' (PyPI)."""
    return None if family == "default" else f"{INDEX}/{family}"


# Names users type for a family by its device or toolkit: `cuda` (the newest CUDA family for the
# torch version and driver), `cudaX.Y` (cuXY), `mps` (PyPI's wheel, which carries MPS on macOS).
CUDA_PATTERN = re.compile(r"cuda(\d+)\.(\d+)")
DEVICE_NAMES = ("cuda", "mps")


def check_family(family: str) -> None:
    if family in ("auto", "rocm", *DEVICE_NAMES) or family in FIXED_FAMILIES or ROCM_PATTERN.fullmatch(family):
        return
    if (m := CUDA_PATTERN.fullmatch(family)) and f"cu{m[1]}{m[2]}" in CUDA_FAMILIES:
        return
    hint = " (HIP is ROCm's runtime: the wheel family is rocm, the device --device cuda)" if family == "hip" else ""
    raise UsageError(
        f"unknown wheel family '{family}' for --family{hint}; use auto, {', '.join(FIXED_FAMILIES)}, cuda (the newest "
        "CUDA family for the torch version), mps (default), rocm (the newest for the torch version) or rocmX.Y (e.g. rocm6.4)"
    )


def published(family: str, version: str) -> bool:
    """Whether the family has wheels of this torch release (FAMILY_TORCH_RANGE)."""
    first, last = FAMILY_TORCH_RANGE.get(family, (None, None))
    v2 = parse_version(version)[:2]
    return not ((first and v2 < first) or (last and v2 > last))


def unpublished_problem(family: str, version: str) -> str:
    """Why pip would find no wheel of `family` for `version`, and the two fixes (UsageError text)."""
    first, last = FAMILY_TORCH_RANGE[family]
    span = f"torch {first[0]}.{first[1]} and newer" if first else f"torch up to {last[0]}.{last[1]}"  # type: ignore[index]
    nearest = first or last
    assert nearest is not None
    fixes = [f"pass --torch {nearest[0]}.{nearest[1]}.0"]
    if family in CUDA_FAMILIES:
        others = [f for f in CUDA_FAMILIES if published(f, version)]
        if others:
            fixes.append(f"--family {others[-1]} for torch {version}")
    return f"{family} wheels are not published for torch {version} (only for {span}): {' or '.join(fixes)}"


def _named_family(family: str, version: str, signals: Signals, notes: list[str]) -> tuple[str, list[str]]:
    """A family typed by its device or toolkit name (DEVICE_NAMES, cudaX.Y): the family, and the
    reason that says what was chosen."""
    if family == "mps":
        if not (signals.system == "Darwin" and signals.machine in ("arm64", "aarch64")):
            notes.append(f"MPS runs only on macOS with Apple silicon; this machine is {signals.system} {signals.machine}")
        return "default", ["--family mps: the default (PyPI) wheel, which carries MPS on macOS (--device mps)"]
    if (m := CUDA_PATTERN.fullmatch(family)) is not None:
        chosen = f"cu{m[1]}{m[2]}"
        return chosen, [f"--family {family}: the wheel family {chosen} (CUDA {m[1]}.{m[2]})"]
    candidates = [f for f in CUDA_FAMILIES if published(f, version)]
    why = f"the newest CUDA family published for torch {version}"
    if signals.nvidia_cuda is not None:
        driver = parse_version(signals.nvidia_cuda)[:2]
        fitting = [f for f in candidates if CUDA_FAMILIES[f] <= driver]
        if fitting:
            candidates, why = fitting, f"{why} that the driver (CUDA {signals.nvidia_cuda}) runs"
        else:
            notes.append(f"the driver supports CUDA {signals.nvidia_cuda}, older than every CUDA family for torch "
                         f"{version}: update the driver")
    return candidates[-1], [f"--family cuda: {candidates[-1]}, {why}"]


def newest_rocm(version: str, notes: list[str]) -> str:
    """The newest ROCm family published for this torch release (NEWEST_ROCM)."""
    v2 = parse_version(version)[:2]
    if v2 in NEWEST_ROCM:
        return NEWEST_ROCM[v2]
    newest = max(NEWEST_ROCM)
    notes.append(f"no ROCm family is known for torch {version}; {NEWEST_ROCM[newest]} is the newest known (torch "
                 f"{newest[0]}.{newest[1]}): check {INDEX} and pass --family rocmX.Y")
    return NEWEST_ROCM[newest if v2 > newest else min(NEWEST_ROCM)]


def choose_family(s: Signals, version: str | None = None) -> tuple[str, str, list[str]]:
    """(family, confidence, reasons) from hardware signals, among the CUDA families published for
    `version` (every known one when None)."""
    amd = s.amd_kfd or s.rocminfo
    intel = s.xpu_smi or s.sycl_ls
    if s.system == "Darwin":
        if s.machine in ("arm64", "aarch64"):
            return "default", "high", ["macOS on Apple silicon: the PyPI wheel includes MPS (--device mps)"]
        return "default", "low", ["macOS on Intel: PyPI has no recent Intel-mac wheels and MPS needs Apple silicon"]
    if s.nvidia_smi:
        reasons = ["nvidia-smi found: an NVIDIA GPU and driver are present"]
        others = [name for name, seen in (("AMD", amd), ("Intel", intel)) if seen]
        if others:
            reasons.append(f"also found {' and '.join(others)} signals; pass --family to pick another")
        cudas = [f for f in CUDA_FAMILIES if version is None or published(f, version)] or list(CUDA_FAMILIES)
        if s.nvidia_cuda is None:
            oldest = cudas[0]
            reasons.append(f"the driver's CUDA version could not be read; {oldest} needs a driver for CUDA "
                           f"{'.'.join(map(str, CUDA_FAMILIES[oldest]))}+")
            return oldest, "medium", reasons
        driver = parse_version(s.nvidia_cuda)[:2]
        fitting = [f for f in cudas if CUDA_FAMILIES[f] <= driver]
        if not fitting:
            reasons.append(f"the driver supports CUDA {s.nvidia_cuda}, older than every CUDA wheel of the release "
                           f"({cudas[0]}+): "
                           "update the driver; falling back to cpu")
            return "cpu", "low", reasons
        family = fitting[-1]
        reasons.append(f"the driver supports CUDA {s.nvidia_cuda}: {family} is the newest family it can run")
        return family, "low" if others else "high", reasons
    if amd and s.system == "Linux":
        seen = [name for name, flag in (("/dev/kfd", s.amd_kfd), ("rocminfo", s.rocminfo)) if flag]
        reasons = [f"{' and '.join(seen)} found: an AMD GPU with the ROCm stack"]
        if intel:
            reasons.append("also found Intel GPU tools; pass --family xpu to pick them")
        if s.rocm_version:
            major, minor, _ = parse_version(s.rocm_version)
            reasons.append(f"ROCm {s.rocm_version} installed: using the matching wheel family")
            return f"rocm{major}.{minor}", "medium" if intel else "high", reasons
        reasons.append(f"the ROCm version is unknown: {DEFAULT_ROCM} is a common choice; pass --family rocmX.Y to match")
        return DEFAULT_ROCM, "medium", reasons
    if intel:
        tools = [name for name, flag in (("xpu-smi", s.xpu_smi), ("sycl-ls", s.sycl_ls)) if flag]
        reasons = [f"{' and '.join(tools)} found: an Intel GPU stack"]
        if s.sycl_gpus:
            return "xpu", "high", [*reasons, f"sycl-ls lists {len(s.sycl_gpus)} GPU device(s)"]
        return "xpu", "medium", [*reasons, "no GPU confirmed; the xpu wheel also needs Intel's GPU driver"]
    return "cpu", "high", ["no accelerator signals (nvidia-smi, /dev/kfd, rocminfo, xpu-smi, sycl-ls): the CPU wheel"]


def _torch_version(requested: str | None, notes: list[str], installed: InstalledTorch | None = None) -> str:
    """--torch, else the newest validated release, else (never planning a downgrade unasked) the
    installed release where it is newer than that."""
    if requested is None:
        newest = fmt(MAX_VALIDATED_TORCH)
        if installed is not None and _release(installed.version) > MAX_VALIDATED_TORCH:
            notes.append(f"the installed torch {installed.version} is newer than the newest validated release "
                         f"{newest}: its release is planned, not a downgrade (pass --torch {newest} to downgrade)")
            return installed.version.split("+")[0]
        return newest
    try:
        v = parse_version(requested)
    except ValueError:
        raise UsageError(f"bad --torch '{requested}': use a release such as {fmt(MAX_VALIDATED_TORCH)}") from None
    if v < MIN_TORCH:
        raise UsageError(f"--torch {requested} is older than the supported {fmt(MIN_TORCH)}: choose {fmt(MIN_TORCH)} or newer")
    if v[:2] > MAX_VALIDATED_TORCH[:2]:
        notes.append(f"torch {requested} is newer than the validated range {fmt(MIN_TORCH)}-{fmt(MAX_VALIDATED_TORCH)}")
    return requested.split("+")[0]


def _release(version: str) -> tuple[int, int, int]:
    try:
        return parse_version(version)
    except ValueError:
        return (0, 0, 0)


def pip_command(family: str, version: str, python: str) -> list[str]:
    """The exact pip command: the family's official index and the build's local version label."""
    url = index_url(family)
    if url is None:
        return [python, "-m", "pip", "install", f"torch=={version}"]
    return [python, "-m", "pip", "install", f"torch=={version}+{family}", "--index-url", url]


def plan_install(
    signals: Signals,
    family: str = "auto",
    torch_version: str | None = None,
    installed: InstalledTorch | None = None,
    python: str = "python3",
) -> Plan:
    """The plan for these signals and flags; an installed torch is kept unless a flag asks otherwise."""
    check_family(family)
    notes: list[str] = []
    version = _torch_version(torch_version, notes, installed)
    if family == "auto":
        chosen, confidence, reasons = choose_family(signals, version)
    elif family == "rocm":
        chosen = newest_rocm(version, notes)
        confidence, reasons = "high", [f"--family rocm: {chosen} is the newest ROCm family published for torch {version}"]
    elif family in DEVICE_NAMES or CUDA_PATTERN.fullmatch(family):
        chosen, reasons = _named_family(family, version, signals, notes)
        confidence = "high"
    else:
        chosen, confidence, reasons = family, "high", [f"--family {family} given"]
    if not published(chosen, version):
        if family != "auto":  # the user's own choice: pip would find nothing, so nothing is planned
            raise UsageError(unpublished_problem(chosen, version))
        notes.append(f"{chosen} wheels are not published for torch {version}: pip will find none; pick another family")
    if chosen == "default" and signals.system == "Linux":
        notes.append("on Linux the PyPI wheel is a CUDA build (a multi-GB download); cpu is the small one")
    command = pip_command(chosen, version, python)
    plan = Plan(chosen, confidence, reasons, version, command, "install", notes)
    if installed is None:
        plan.reasons.append("no torch installed in this environment")
        return plan
    same_build = installed.family == chosen and installed.version.split("+")[0] == version
    if same_build:
        plan.action = "none"
        plan.reasons.append(f"the installed torch {installed.version} is already this build")
    elif family == "auto" and torch_version is None:
        plan.action = "keep"
        plan.reasons.append(
            f"the installed torch {installed.version} ({installed.family}) is kept; pass --family {chosen} "
            "(or --torch VERSION) to replace it"
        )
    else:
        plan.reasons.append(f"replaces the installed torch {installed.version} ({installed.family})")
        if _release(version) < _release(installed.version):
            plan.notes.append(f"a downgrade: torch {installed.version} is replaced by the older {version}")
    return plan
