"""Shared fixtures: run the CLI in a fresh folder, in-process or as a subprocess."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torchcts import settings
from torchcts.cli.main import main as cli_main

# No run of the test suite forks from (or starts) a warm worker server unless it passes --warm
# (workers/warm.py: on by default in a terminal): tests/speed/test_speed_warm.py does, in private folders.
os.environ["TORCHCTS_WARM"] = "0"


def pytest_configure(config: pytest.Config) -> None:
    """A line per test file as it completes, with how far the run is (tests/helpers/file_progress.py);
    the session's command servers (tests/helpers/command_server.py), opened by its controller."""
    from helpers import command_server
    from helpers.file_progress import register

    register(config)
    if not hasattr(config, "workerinput"):
        command_server.open_folder()


def pytest_unconfigure(config: pytest.Config) -> None:
    from helpers import command_server

    if not hasattr(config, "workerinput"):
        command_server.close_folder()


QUICK = Path(__file__).with_name("quick.txt")  # the `-m quick` tier, chosen by scripts/quick-tier


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the inner loop's tier `quick` (`pytest -m quick`): the ids tests/quick.txt lists, measured
    cheap in a whole run; a listed id that no longer exists is simply not marked."""
    if not QUICK.is_file():
        return
    quick = {line.strip() for line in QUICK.read_text().splitlines() if line.strip() and not line.startswith("#")}
    for item in items:
        if item.nodeid in quick:
            item.add_marker(pytest.mark.quick)


@pytest.fixture(autouse=True)
def fresh_settings(monkeypatch: pytest.MonkeyPatch):
    """A process reads torchcts.settings once; a test that changes a variable with monkeypatch
    re-reads them, as code that sets one later must (settings.reload), and so does the next test."""
    setenv, delenv = monkeypatch.setenv, monkeypatch.delenv

    def set_and_reload(name: str, value: str, prepend: str | None = None) -> None:
        setenv(name, value, prepend)
        settings.reload()

    def del_and_reload(name: str, raising: bool = True) -> None:
        delenv(name, raising)
        settings.reload()

    monkeypatch.setenv, monkeypatch.delenv = set_and_reload, del_and_reload  # type: ignore[method-assign]
    settings.reload()
    yield
    monkeypatch.undo()  # before the next test's read, not after it
    settings.reload()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def cli():
    """In-process CLI call returning the exit code."""
    return cli_main


