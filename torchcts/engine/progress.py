"""The run's progress: cases done of total, rate, ETA, failures so far, and cases running long.

Why a ticker thread: a result arrives only when a case ends, so a case running for minutes would
otherwise say nothing; the controller learns when each case starts (`pytest_runtest_logstart`,
forwarded by xdist from the workers, or called in-process with `--no-isolation`) and a daemon thread
redraws the status every second. On a terminal it is one line rewritten in place (pytest's own
dots are turned off, engine/plugin.py); elsewhere (CI logs) a line every PERIOD_S seconds, and one
when a case first passes SLOW_S, each written when pytest's line of dots has ended (never cutting
one in two) unless that line stood still for PERIOD_S (a stuck run is named, not kept silent).
The thread writes to a duplicate of the terminal's file descriptor, taken before any case runs,
so pytest's output capture of a running case (which redirects fd 1 with `--no-isolation`) never
swallows it. `Progress` itself takes its clock and
writer as arguments, so its formatting and slow-case detection are tested without waiting.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from torchcts.model.record import CaseRecord

PERIOD_S = 15.0  # a status line this often when the output is not a terminal
REDRAW_S = 1.0  # the terminal line's refresh
SLOW_S = 30.0  # a case running longer than this is named
SHOW_SLOW = 2  # at most this many slow cases named on the line


def duration(seconds: float) -> str:
    """`48s`, `3m05s`, `2h07m`: short enough for a status line."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Counts and in-flight cases; `status_line(now)` is the text, `tick(now)` decides what to write."""

    def __init__(self, total: int, *, tty: bool, write: Callable[[str], Any],
                 clock: Callable[[], float] = time.monotonic, width: int = 120,
                 column: Callable[[], int] = lambda: 0) -> None:
        self.total = total
        self.tty = tty
        self.write = write
        self.clock = clock
        # Off a terminal: where pytest's current line of dots stands (0: at a line's start). A status
        # line waits for pytest to end its line, so the log's dot lines are never cut in two.
        self.column = column
        self._column_seen = (0, 0.0)  # pytest's column when last seen moving, and when
        self._ours_at = 0  # pytest's column when our last line ended (the log is at a line's start there)
        self.width = max(40, width)
        # Ids, not counts: a crash after a case's result replaces that result (engine/plugin.py,
        # "last record per id wins") and must not count the case twice.
        self._done: set[str] = set()
        self._failing: set[str] = set()
        self.t0 = self._last = clock()
        self.running: dict[str, float] = {}  # case id -> when it started
        self._named_slow: set[str] = set()
        self._drawn = False  # a terminal line is on screen (to clear before other output)
        self.lock = threading.RLock()

    @property
    def done(self) -> int:
        return len(self._done)

    @property
    def failed(self) -> int:
        return len(self._failing)

    def started(self, case_id: str) -> None:
        with self.lock:
            self.running[case_id] = self.clock()

    def finished(self, case_id: str, failure: bool) -> None:
        with self.lock:
            self.running.pop(case_id, None)
            self._done.add(case_id)
            if failure:
                self._failing.add(case_id)
            else:
                self._failing.discard(case_id)

    def forget(self, case_id: str) -> None:
        """The case ended without a result here (its worker died and xdist reschedules it)."""
        with self.lock:
            self.running.pop(case_id, None)

    def slow(self, now: float) -> list[tuple[str, float]]:
        """Cases running longer than SLOW_S, longest first."""
        return sorted(((c, now - t) for c, t in self.running.items() if now - t > SLOW_S), key=lambda x: -x[1])

    def status_line(self, now: float) -> str:
        """`[torchcts] 120/4000 cases (3%), 2.5/s, ETA 25m52s, 1 failing, 48s in; running > 30 s: ID (41s)`."""
        elapsed = max(now - self.t0, 1e-9)
        if not (self.done or self.running):  # no case has started: "0/746 cases" would read as stuck
            return (f"[torchcts] starting the workers ({self.total} cases planned, none started yet), "
                    f"{duration(elapsed)} in")
        rate = self.done / elapsed
        parts = [f"{self.done}/{self.total} cases" + (f" ({100 * self.done // self.total}%)" if self.total else "")]
        parts.append(f"{rate:.1f}/s")
        left = self.total - self.done
        if left > 0:
            parts.append(f"ETA {duration(left / rate)}" if self.done else "ETA --")
        parts += [f"{self.failed} failing", f"{duration(elapsed)} in"]
        text = "[torchcts] " + ", ".join(parts)
        slow = self.slow(now)
        if slow:
            named = ", ".join(f"{c} ({duration(t)})" for c, t in slow[:SHOW_SLOW])
            more = f" and {len(slow) - SHOW_SLOW} more" if len(slow) > SHOW_SLOW else ""
            text += f"; running > {SLOW_S:g} s: {named}{more}"
        return text

    def fit(self, line: str, now: float) -> str:
        """The terminal line within the width: the slow cases' names are what matter, so the
        counts are shortened first (elapsed, ` cases`, the rate, the threshold), then put after the
        names, then the end is cut."""
        room = self.width - 1
        rate = f", {self.done / max(now - self.t0, 1e-9):.1f}/s"
        for drop, short in ((f", {duration(now - self.t0)} in", ""), (" cases", ""), (rate, ""),
                            (f"running > {SLOW_S:g} s:", "running:")):
            if len(line) > room:
                line = line.replace(drop, short, 1)
        if len(line) > room and "; running" in line:  # the slow cases first, then the counts
            counts, _, slow = line[len("[torchcts] "):].partition("; ")
            line = f"[torchcts] {slow} | {counts}"
        return line if len(line) <= room else line[: room - 3] + "..."

    def tick(self, now: float | None = None) -> None:
        """Called every REDRAW_S: redraw the terminal line, or write a line when one is due."""
        with self.lock:
            now = self.clock() if now is None else now
            if self.tty:
                if not (self.running or self.done):
                    return  # nothing started yet: xdist is still printing its workers' start-up
                self.write("\r\x1b[K" + self.fit(self.status_line(now), now))
                self._drawn = True
                return
            if not self._due(now):
                return
            column = self.column()
            if column != self._column_seen[0]:
                self._column_seen = (column, now)
            if column and now - self._column_seen[1] < PERIOD_S:
                return  # pytest is mid-line and still writing dots: its line's end writes it (line_ended)
            # mid-line only when pytest's line stood still for PERIOD_S (every running case is slow):
            # a stuck run is named rather than kept silent until its timeout
            self._emit(now, column)

    def line_ended(self, now: float | None = None) -> None:
        """pytest has just written a result (main thread): where that ended its line of dots
        (`[ 12%]`), a due status line goes right there. The ticker, sampling once a second, would
        almost never find pytest between two lines while results keep coming."""
        with self.lock:
            now = self.clock() if now is None else now
            if not self.tty and self._due(now) and self.column() == 0:
                self._emit(now, 0)

    def _due(self, now: float) -> bool:
        return now - self._last >= PERIOD_S or bool({c for c, _ in self.slow(now)} - self._named_slow)

    def _emit(self, now: float, column: int) -> None:
        self._last = now
        self._named_slow |= {c for c, _ in self.slow(now)}
        self.write(("\n" if column != self._ours_at else "") + self.status_line(now) + "\n")
        self._ours_at = column

    def clear(self) -> None:
        """Take the terminal line away before other output (a failure line, pytest's summary)."""
        with self.lock:
            if self._drawn:
                self.write("\r\x1b[K")
                self._drawn = False

    def note(self, text: str) -> None:
        """A line above the status line (on a terminal) or among the periodic lines."""
        with self.lock:
            self.clear()
            self.write(text + "\n")


class Ticker:
    """The daemon thread calling `progress.tick()` every REDRAW_S until stopped."""

    def __init__(self, progress: Progress, every_s: float = REDRAW_S) -> None:
        self.progress = progress
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="torchcts-progress", daemon=True)

    def start(self) -> Ticker:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.progress.tick()
            except Exception:  # noqa: BLE001 - a closed terminal never ends the run
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2 * self.every_s)
        self.progress.clear()


class TerminalOut:
    """Writes to a duplicate of `stream`'s file descriptor (see the module docstring), or to the
    stream itself where it has none; `tty` says whether it is a terminal."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        try:
            self.fd: int | None = os.dup(stream.fileno())
        except (AttributeError, OSError, ValueError):
            self.fd = None
        self.tty = self.fd is not None and os.isatty(self.fd)

    def write(self, text: str) -> None:
        if self.fd is None:
            self.stream.write(text)
            self.stream.flush()
            return
        data = text.encode("utf-8", "replace")
        while data:
            data = data[os.write(self.fd, data):]

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class ProgressPlugin:
    """The pytest side, in the controller (or the one process with `--no-isolation`): learns starts
    and the item count from pytest and xdist; the Recorder reports each recorded result."""

    def __init__(self, planned: int) -> None:
        self.planned = planned
        self.progress: Progress | None = None
        self._out: TerminalOut | None = None
        self._ticker: Ticker | None = None

    def pytest_sessionstart(self, session: Any) -> None:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        tw = getattr(tr, "_tw", None)
        if tw is None or session.config.getoption("collectonly", False):
            return
        self._out = TerminalOut(getattr(tw, "_file", None) or sys.stdout)
        verbose = session.config.get_verbosity() > 0
        tty = self._out.tty and not verbose

        def write(text: str) -> None:
            if self._out is not None:
                self._out.write(text)

        self.progress = Progress(self.planned, tty=tty, write=write, width=getattr(tw, "fullwidth", 80),
                                 column=lambda: int(getattr(tw, "width_of_current_line", 0) or 0))
        if tty and hasattr(tr, "_show_progress_info"):  # the status line replaces pytest's dots and percentages
            tr._show_progress_info = False
        self._ticker = Ticker(self.progress).start()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_report_teststatus(self, report: Any, config: Any):  # noqa: ANN201
        outcome = yield
        if self.progress is not None and self.progress.tty:  # on a terminal the status line replaces the letters
            category, _, word = outcome.get_result()
            outcome.force_result((category, "", word))

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: Any) -> None:
        """After the terminal reporter wrote its letter (and maybe ended its line): off a terminal,
        a due status line goes between two lines of dots."""
        if self.progress is not None and not self.progress.tty:
            self.progress.line_ended()

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if self.progress is not None:
            self.progress.started(nodeid.split("::", 1)[-1])

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """What the workers collected, after pytest's -k/-m/--lf (each worker collects the same)."""
        if self.progress is not None:
            self.progress.total = len(ids)

    def pytest_collection_finish(self, session: Any) -> None:
        if self.progress is not None and session.items:
            self.progress.total = len(session.items)

    def recorded(self, record: CaseRecord, failure: bool) -> None:
        """A result was written (Recorder); a failure is named as it happens on a terminal."""
        if self.progress is None:
            return
        self.progress.finished(record.id, failure)
        if failure and self.progress.tty:
            from torchcts.results.reports.quoting import one_line

            self.progress.note(one_line(f"{record.status} {record.id}")[: self.progress.width - 1])

    def forget(self, case_id: str) -> None:
        if self.progress is not None:
            self.progress.forget(case_id)

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist reports a dead worker on the terminal next: not on the status line."""
        if self.progress is not None:
            self.progress.clear()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: Any) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        if self._out is not None:
            self._out.close()
            self._out = None
