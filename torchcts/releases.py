"""The PyTorch releases TorchCTS knows: the one table behind the validated range and `install`'s plans.

Taking in a new release is a row here (and its snapshot, torchcts/release_data/VERSION.json.gz,
from scripts/release-snapshot): the validated range, the wheel families `install` offers and the
release `coverage release-diff` compares against all follow from this table (docs/versions.md).
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts.errors import UsageError

Version = tuple[int, int, int]


@dataclass(frozen=True)
class ReleaseLine:
    """One minor release line: the release validated, and the wheel families published for it.

    `cuda`: the CUDA families on download.pytorch.org (PyTorch's RELEASE.md, "Release Compatibility
    Matrix", stable and experimental CUDA); `rocm`: the newest ROCm family there, None where
    TorchCTS has no record of one (install then says so); `pypi`: the toolkit of PyPI's Linux wheel.
    """

    validated: Version
    cuda: tuple[str, ...]
    rocm: str | None
    pypi: str


RELEASES: dict[tuple[int, int], ReleaseLine] = {
    (2, 7): ReleaseLine((2, 7, 0), ("cu118", "cu126", "cu128"), "rocm6.3", "cu126"),
    (2, 8): ReleaseLine((2, 8, 0), ("cu126", "cu128"), "rocm6.4", "cu128"),
    (2, 9): ReleaseLine((2, 9, 1), ("cu126", "cu128", "cu130"), "rocm6.4", "cu128"),
    (2, 10): ReleaseLine((2, 10, 0), ("cu126", "cu128", "cu130"), "rocm7.1", "cu128"),
    (2, 11): ReleaseLine((2, 11, 0), ("cu126", "cu128", "cu130"), "rocm7.2", "cu130"),
    (2, 12): ReleaseLine((2, 12, 1), ("cu126", "cu130", "cu132"), "rocm7.2", "cu130"),
    (2, 13): ReleaseLine((2, 13, 0), ("cu126", "cu130", "cu132"), "rocm7.2", "cu130"),
    (2, 14): ReleaseLine((2, 14, 1), ("cu126", "cu130", "cu132"), None, "cu130"),
    (2, 15): ReleaseLine((2, 15, 0), ("cu130", "cu132"), None, "cu132"),
}
MIN_TORCH: Version = RELEASES[min(RELEASES)].validated
# The newest release this suite was validated against: the one `install` plans by default and the
# one whose snapshot `coverage release-diff` compares the installed torch with.
MAX_VALIDATED_TORCH: Version = RELEASES[max(RELEASES)].validated


def parse_version(text: str) -> Version:
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        raise ValueError(f"not a version: {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def fmt(v: Version) -> str:
    return ".".join(map(str, v))


def validated_range() -> str:
    return f"{fmt(MIN_TORCH)}-{fmt(MAX_VALIDATED_TORCH)}"


def drift(version: str) -> str | None:
    """The sentence a run records when its torch is newer than the validated range, else None.

    A patch release of a validated line (2.15.1) is inside it; a newer minor or major is not. It is
    data (run.json, summary.md, report.html), never a line on stderr: it would break every one-line
    error (issue 49)."""
    v = parse_version(version)
    if v[:2] <= MAX_VALIDATED_TORCH[:2]:
        return None
    return (f"PyTorch {version} is newer than the validated range {validated_range()}: results are "
            "TorchCTS's on a release it was not validated on (docs/versions.md: taking in a new release)")


def cuda_families() -> tuple[str, ...]:
    """Every CUDA family of the table, oldest toolkit first."""
    names = {f for line in RELEASES.values() for f in line.cuda}
    return tuple(sorted(names, key=lambda f: (len(f), f)))


def family_range(family: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """(first, last) release line publishing `family`; None at an end the table's range leaves open."""
    lines = [k for k, line in RELEASES.items() if family in line.cuda]
    if not lines:
        return None, None
    first, last = min(lines), max(lines)
    return (None if first == min(RELEASES) else first), (None if last == max(RELEASES) else last)


# --- the stored snapshot of the newest validated release (coverage release-diff, manifest dtypes) ---

SNAPSHOT_FOLDER = Path(__file__).with_name("release_data")
SNAPSHOT_FORMAT = 1


@dataclass(frozen=True)
class ReleaseSnapshot:
    """A release's names: its aten overloads, OpInfo full names (name.variant) and dtypes."""

    torch: str
    aten: tuple[str, ...]
    opinfos: tuple[str, ...]
    dtypes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"format": SNAPSHOT_FORMAT, "torch": self.torch, "aten": list(self.aten),
                "opinfos": list(self.opinfos), "dtypes": list(self.dtypes)}

    @classmethod
    def from_json(cls, data: Any, where: str) -> ReleaseSnapshot:
        ok = (isinstance(data, dict) and data.get("format") == SNAPSHOT_FORMAT and isinstance(data.get("torch"), str)
              and all(isinstance(data.get(k), list) and all(isinstance(v, str) for v in data[k])
                      for k in ("aten", "opinfos", "dtypes")))
        if not ok:
            raise UsageError(f"{where} is not a release snapshot of format {SNAPSHOT_FORMAT}: "
                             "rewrite it with scripts/release-snapshot")
        return cls(data["torch"], tuple(data["aten"]), tuple(data["opinfos"]), tuple(data["dtypes"]))


def snapshot_path(version: str = fmt(MAX_VALIDATED_TORCH)) -> Path:
    return SNAPSHOT_FOLDER / f"{version}.json.gz"


def write_snapshot(snap: ReleaseSnapshot, folder: Path = SNAPSHOT_FOLDER) -> Path:
    """Gzipped, sorted, no timestamp: the same release writes the same bytes."""
    path = folder / f"{snap.torch.split('+')[0]}.json.gz"
    text = json.dumps(snap.to_json(), indent=0, sort_keys=True).encode()
    path.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
    return path


def load_snapshot(path: Path | None = None) -> ReleaseSnapshot:
    path = path or snapshot_path()
    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError) as exc:
        raise UsageError(f"cannot read the release snapshot {path} ({type(exc).__name__}): "
                         "reinstall TorchCTS or rewrite it with scripts/release-snapshot") from None
    return ReleaseSnapshot.from_json(data, str(path))
