"""A run made once per test session and read by every test that needs it, whichever xdist worker runs them.

Why: a module-level cache is per process, so under `pytest -n 2` two workers that draw tests of one
batch each paid the same run (seconds: torch, the backend and OpInfo's database imported). The
folder and the run's stdout are kept in the session's shared temporary folder (xdist's workers share
its parent), and a lock file makes the second worker wait for the first's run instead of repeating it.
A run that fails its caller's check keeps nothing: the next test runs it again, and fails as visibly.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def session_root(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """`name` in the folder every worker of this session sees (the worker's own base folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def run_once(root: Path, key: str, make: Callable[[Path], str]) -> tuple[Path, str]:
    """`make(folder)` -> stdout, run once per session for `key`; returns the folder and that stdout."""
    folder, saved = root / key, root / f"{key}.stdout"
    with _locked(root / f"{key}.lock"):
        if saved.is_file():
            return folder, saved.read_text()
        if folder.exists():  # an earlier attempt failed its check: start clean
            shutil.rmtree(folder)
        folder.mkdir()
        stdout = make(folder)
        saved.write_text(stdout)
    return folder, stdout
