"""The one way TorchCTS writes a file: inside the folder given, never through a link, all or nothing.

Run folders, repro bundles and evidence stores travel between people (issue 31): a planted symlink
(`summary.md -> ~/.bashrc`, `repro -> /etc`) must never turn one of our writes into a write
outside the folder. So every write names a folder and a bare file name, refuses a link (or a
non-file) at the name and a linked folder on the way from the root, and goes through a temporary
file in the same folder (created exclusively, so a planted temp name is never followed), fsynced
when durability matters, then `os.replace`d over the name (which replaces a link, never follows it).
Appends open with O_NOFOLLOW. A refusal is a `UsageError` (exit 2): the folder is the user's data.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from torchcts.errors import UsageError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# A lone surrogate (Python makes one of a non-UTF-8 file name, `os.fsdecode`; a backend's message can
# carry it) is written as its escape `\udcff`: UTF-8 cannot hold it, and a report must not end on it.
_LONE_SURROGATES = "backslashreplace"
_UMASK = os.umask(0o022)  # read once (umask has no getter); files get the mode open() would give them
os.umask(_UMASK)


def _bare(name: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise UsageError(f"refusing to write {name!r}: not a plain file name")
    return name


def check_inside(root: Path, folder: Path) -> None:
    """`folder` is `root` or below it, and no folder from root down to it is a symlink (a planted
    `repro -> /elsewhere` would carry our writes out of the run folder)."""
    root, folder = Path(os.path.abspath(root)), Path(os.path.abspath(folder))
    if folder != root and root not in folder.parents:
        raise UsageError(f"refusing to write into {folder.name}: it is outside {root.name}")
    for path in [folder, *folder.parents]:
        if path == root:  # the root itself may be a link (a results folder on a bigger disk): the user's choice
            break
        if path.is_symlink():
            raise UsageError(f"refusing to write into {folder.name}: {path.name} is a symbolic link "
                             "(a run folder or store must hold plain folders and files)")


def refuse_link(path: Path) -> None:
    """A link or a non-file at `path` is refused: writing there would land somewhere else."""
    if path.is_symlink():
        raise UsageError(f"refusing to write {path.parent.name}/{path.name}: it is a symbolic link "
                         "(remove it; TorchCTS writes only plain files)")
    if path.exists() and not path.is_file():
        raise UsageError(f"refusing to write {path.parent.name}/{path.name}: it is not a plain file")


def write_atomic(folder: Path, name: str, data: bytes | str | Iterable[bytes | str], *, root: Path | None = None,
                 fsync: bool = True, mode: int = 0o666) -> Path:
    """Write `data` to `folder/name` atomically; `root` (default `folder`) bounds where it may go.
    `data` may be an iterable of pieces (a report of 10^6 records), written as they come: the
    whole text is never held.

    Readers see the old file or the new one, never half of either; a crash leaves at most a
    hidden `.name.*.tmp` beside it."""
    check_inside(root if root is not None else folder, folder)
    path = folder / _bare(name)
    refuse_link(path)
    pieces = [data] if isinstance(data, (str, bytes, bytearray)) else data
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            for piece in pieces:
                fh.write(piece.encode("utf-8", _LONE_SURROGATES) if isinstance(piece, str) else piece)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode & ~_UMASK)  # mkstemp made it 0600
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def open_append(folder: Path, name: str, *, root: Path | None = None, binary: bool = False):  # noqa: ANN201
    """`folder/name` opened for appending (created if absent), refusing a link at the name."""
    check_inside(root if root is not None else folder, folder)
    path = folder / _bare(name)
    refuse_link(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o644)
    except OSError as exc:
        if path.is_symlink():  # planted between the check and the open
            raise UsageError(f"refusing to append to {folder.name}/{name}: it is a symbolic link") from None
        raise exc
    return os.fdopen(fd, "ab" if binary else "a", **({} if binary else {"encoding": "utf-8", "errors": _LONE_SURROGATES}))


def make_folder(root: Path, folder: Path) -> Path:
    """`folder` (created with its parents) inside `root`, no part of it a link."""
    check_inside(root, folder)
    folder.mkdir(parents=True, exist_ok=True)
    check_inside(root, folder)
    return folder
