"""The run's progress line (engine/progress.py): counts, rate, ETA, failures and slow cases, with an
injected clock instead of real waits."""

from __future__ import annotations

import contextlib
import os
from types import SimpleNamespace

from torchcts.engine import progress as P
from torchcts.model.record import CaseRecord


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _progress(tty: bool, total: int = 100, width: int = 200):
    clock, out = Clock(), []
    return P.Progress(total, tty=tty, write=out.append, clock=clock, width=width), clock, out


def test_duration_format() -> None:
    assert [P.duration(s) for s in (0, 48.4, 185, 7620)] == ["0s", "48s", "3m05s", "2h07m"]


def test_counts_rate_eta_and_failures() -> None:
    p, clock, _ = _progress(tty=False)
    clock.t += 15
    # issue 53: nothing started yet is the workers starting, not "0/100 cases" (read as a stuck run)
    assert p.status_line(clock()) == "[torchcts] starting the workers (100 cases planned, none started yet), 15s in"
    p.started("c0")
    assert "0/100 cases (0%)" in p.status_line(clock()) and "ETA --" in p.status_line(clock())
    clock.t -= 15
    for i in range(20):
        p.started(f"c{i}")
        p.finished(f"c{i}", failure=i < 3)
    clock.t += 10
    line = p.status_line(clock())
    assert line.startswith("[torchcts] 20/100 cases (20%), 2.0/s, ETA 40s, 3 failing, 10s in"), line
    assert "running" not in line
    p.finished("c5", failure=True)  # its worker crashed after its result: the crash replaces it
    assert (p.done, p.failed) == (20, 4) and p.status_line(clock()).startswith("[torchcts] 20/100 cases (20%)")


def test_a_case_past_30_s_is_named_longest_first() -> None:
    p, clock, _ = _progress(tty=False)
    p.started("opinfo/slow/float32/forward")
    clock.t += 20
    p.started("opinfo/slower/float32/forward")  # started later: runs for less time
    p.started("a/b")
    clock.t += 10.5
    assert [c for c, _ in p.slow(clock())] == ["opinfo/slow/float32/forward"]
    clock.t += 25
    assert [c for c, _ in p.slow(clock())] == ["opinfo/slow/float32/forward", "opinfo/slower/float32/forward", "a/b"]
    assert p.status_line(clock()).endswith(
        "; running > 30 s: opinfo/slow/float32/forward (56s), opinfo/slower/float32/forward (36s) and 1 more")
    p.finished("a/b", failure=False)
    p.forget("opinfo/slower/float32/forward")  # its worker died; xdist reschedules it
    assert [c for c, _ in p.slow(clock())] == ["opinfo/slow/float32/forward"]


def test_lines_every_period_and_at_once_when_a_case_turns_slow() -> None:
    p, clock, out = _progress(tty=False)
    p.started("x/y")
    clock.t += P.PERIOD_S - 1
    p.tick()
    assert out == []
    clock.t += 1
    p.tick()
    assert len(out) == 1 and out[0].endswith("\n") and "\r" not in out[0]
    clock.t += P.SLOW_S - P.PERIOD_S + 1  # x/y passes 30 s before the next period: named now
    p.tick()
    assert len(out) == 2 and "running > 30 s: x/y (31s)" in out[1]
    clock.t += 1
    p.tick()  # named once, then with the period
    assert len(out) == 2


def test_terminal_line_is_rewritten_in_place_and_fits() -> None:
    p, clock, out = _progress(tty=True, width=80)
    p.tick()
    assert out == []  # nothing started: xdist may still be printing its workers' start-up
    p.started("opinfo/nn.functional.conv2d/float32/backward")
    clock.t += 40
    p.tick()
    line = out[-1]
    assert line.startswith("\r\x1b[K[torchcts] ") and "\n" not in line
    text = line[len("\r\x1b[K"):]
    # 80 columns: the slow case's name first, whole; the counts after it, shortened or cut
    assert text.startswith("[torchcts] running: opinfo/nn.functional.conv2d/float32/backward (40s) | ")
    assert len(text) <= 79, text
    p.note("failed opinfo/add/float32/forward")
    assert out[-2:] == ["\r\x1b[K", "failed opinfo/add/float32/forward\n"]
    p.clear()  # nothing drawn since the note: nothing to clear
    assert out[-1] == "failed opinfo/add/float32/forward\n"


class _Outcome:
    def __init__(self, result):
        self.result = result

    def get_result(self):
        return self.result

    def force_result(self, result):
        self.result = result


def _session(stream, verbosity: int = 0):
    tw = SimpleNamespace(_file=stream, fullwidth=100, width_of_current_line=0)
    tr = SimpleNamespace(_tw=tw, _show_progress_info=True)
    config = SimpleNamespace(pluginmanager=SimpleNamespace(get_plugin=lambda name: tr),
                             getoption=lambda name, default=None: default,
                             get_verbosity=lambda: verbosity)
    return SimpleNamespace(config=config), tr


def _letter(plugin, status=("failed", "F", "FAILED")):
    gen = plugin.pytest_report_teststatus(report=None, config=None)
    next(gen)
    outcome = _Outcome(status)
    try:
        gen.send(outcome)
    except StopIteration:
        pass
    return outcome.result[1]


@contextlib.contextmanager
def _started(tty: bool):
    """A ProgressPlugin started on a pseudo-terminal or a pipe; yields it, pytest's fake reporter
    and the descriptor to read what it wrote."""
    reader, writer = os.openpty() if tty else os.pipe()
    with os.fdopen(writer, "w") as stream:
        session, tr = _session(stream)
        plugin = P.ProgressPlugin(planned=5)
        plugin.pytest_sessionstart(session)
        try:
            yield plugin, tr, reader
        finally:
            plugin.pytest_sessionfinish(session)
    os.close(reader)


def test_plugin_on_a_terminal_replaces_pytests_dots_and_names_failures() -> None:
    with _started(tty=True) as (plugin, tr, reader):
        assert plugin.progress is not None and plugin.progress.tty
        assert _letter(plugin) == "" and tr._show_progress_info is False
        plugin.pytest_runtest_logstart("torchcts::opinfo/add/float32/forward", None)
        assert "opinfo/add/float32/forward" in plugin.progress.running
        plugin.recorded(CaseRecord(id="opinfo/add/float32/forward", status="failed"), failure=True)
        assert plugin.progress.done == 1 and plugin.progress.failed == 1
        assert b"failed opinfo/add/float32/forward" in os.read(reader, 4096)


def test_plugin_off_a_terminal_keeps_pytests_output_and_counts_what_was_collected() -> None:
    with _started(tty=False) as (plugin, tr, _):
        assert plugin.progress is not None and not plugin.progress.tty
        assert _letter(plugin) == "F" and tr._show_progress_info is True
        plugin.pytest_xdist_node_collection_finished(None, ["a", "b", "c"])  # -k kept 3 of 5
        assert plugin.progress.total == 3
