"""Progress a person can read for the project's own tests: a line per test file as it completes.

pytest's `-q` shows dots (and `-n 2` interleaves both workers' dots), which say neither where the
run is nor what is slow. This plugin (registered by tests/conftest.py in the process that prints,
never in an xdist worker) prints, when the last test of a file reports, its counts and time and
how far the whole run is:

    tests/sim/test_sim_faults.py: 30 passed in 2m10s  [45/66 files, 512/759 tests, 8m03s]

It reads only pytest's reports, so exit status, junit XML and `-ra` are what they were.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterable

import pytest


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class FileProgress:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.start = time.monotonic()
        self.tests: dict[str, set[str]] = {}  # file -> node ids not yet done
        self.sizes: Counter[str] = Counter()
        self.outcomes: dict[str, Counter[str]] = defaultdict(Counter)
        self.first: dict[str, float] = {}
        self.files_done = self.tests_done = 0

    def _plan(self, node_ids: Iterable[str]) -> None:
        for node_id in node_ids:
            self.tests.setdefault(node_id.split("::")[0], set()).add(node_id)
        self.sizes = Counter({f: len(ids) for f, ids in self.tests.items()})

    def pytest_collection_finish(self, session: pytest.Session) -> None:  # in-process (-n 0)
        if session.items:
            self._plan(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:  # the controller
        if not self.tests:
            self._plan(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::")[0]
        self.first.setdefault(path, time.monotonic())
        if report.failed:
            self.outcomes[path]["failed" if report.when == "call" else "error"] += 1
        elif report.skipped and report.when != "teardown":
            self.outcomes[path]["xfailed" if hasattr(report, "wasxfail") else "skipped"] += 1
        elif report.passed and report.when == "call":
            self.outcomes[path]["passed"] += 1
        pending = self.tests.get(path)
        if report.when != "teardown" or pending is None or report.nodeid not in pending:
            return
        pending.discard(report.nodeid)
        self.tests_done += 1
        if not pending:
            self.files_done += 1
            self._line(path)

    def _line(self, path: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        now = time.monotonic()
        counts = ", ".join(f"{n} {what}" for what, n in sorted(self.outcomes[path].items())) or "no tests"
        if getattr(reporter._tw, "width_of_current_line", 0):  # after a row of dots: a line of its own
            reporter.write("\n")
        reporter.write_line(f"{path}: {counts} in {_clock(now - self.first[path])}  "
                            f"[{self.files_done}/{len(self.sizes)} files, {self.tests_done}/{sum(self.sizes.values())} "
                            f"tests, {_clock(now - self.start)}]")


def register(config: pytest.Config) -> None:
    """Add the plugin where output is printed: never in an xdist worker, whose output nobody sees."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(FileProgress(config), "torchcts-file-progress")


def pytest_configure(config: pytest.Config) -> None:
    """Loaded with `-p helpers.file_progress` (tests/engine/test_file_progress.py) rather than by conftest."""
    register(config)
