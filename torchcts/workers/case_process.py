"""Cases in a forked child of the worker once the run has crashed (issue 30 item 1).

Why: a case that kills its worker costs a replacement: xdist starts a process (even a fork of the
crash server, workers/crash_server.py), connects execnet, configures pytest and collects the plan
again, 0.3-0.5 s of a core against ~0.05 s for a case. A backend in bring-up that crashes on one
case in ten paid that for every crash (a level-2 run took 2x the clean run's time). Once the run
has crashed (the controller says so in the crash-budget file, workers/crash_budget.py), a worker
stops running cases itself: it forks a child that runs them one after another (`run_one`, the
function the worker would run) and sends back each case's outcome. A crash or a hang then ends
the child, not the worker: the worker records the case `crashed` or `timeout` from its log (the
child's faulthandler writes there, workers/isolation.py) and forks the next child, ~20 ms. A clean
run never forks.

What makes the fork safe: the backend is CPU or known fork-safe (crash_server.case_fork_refusal and its
FORK_SAFE_BACKENDS: never a device runtime, which a forked child cannot use), no accelerator runtime
is initialised, and the worker itself never ran a case: a case leaves state a fork breaks (a
backward on a device starts autograd's device threads, after which no forked child can run any
backward, so every backward check would skip as "CPU raises" and pass having checked nothing; an
OpenMP parallel region with several threads, after which a child's first one waits forever). So
only a worker whose first case comes after the run's first crash forks (a replacement, or one
that had not started); one that ran cases goes on running them itself until it crashes, and its
replacement forks. Each child first runs one CPU backward and refuses if it cannot (`_fork_probe`):
the worker then runs its cases itself. The worker imports what its children imported (their
modules, reported with each outcome) before the next fork, so a child after a crash does not
import the OpInfo database again. `TORCHCTS_CASE_PROCESSES=0` switches it off.
"""

from __future__ import annotations

import atexit
import functools
import gc
import importlib
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import replace
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from types import FrameType
from typing import Any

from torchcts.errors import first_line
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.process import Channel, ChannelTimeout, PeerGone, ProtocolError, die_with_parent, exit_fields
from torchcts.workers.canary import Canary
from torchcts.workers.case_messages import CASE_PROTOCOL, CaseDone, CaseRaised, Ready, Refused, RunCase, Stop
from torchcts.workers.crash_server import case_fork_refusal
from torchcts.workers.isolation import (
    TIMEOUT_EXIT,
    child_death_record,
    log_path,
    mark_fresh_process,
    running_child,
    signal_quietly,
)
from torchcts.workers.outcome import FAILED, CaseOutcome, CaseState
from torchcts.workers.zygote.preload import accelerator_hazard

# A timed-out child is asked for its stack (SIGUSR1: Python's own stack with source lines, written
# by the child's handler), then, stuck in native code, made to abort (SIGABRT: faulthandler writes
# its Python frames), then killed.
STACK_GRACE_S = 1.0
ABORT_GRACE_S = 3.0
REAP_WAIT_S = 5.0  # a child whose pipe closed is reaped within this, else killed
HELLO_WAIT_S = 60.0  # a new child's probe (one CPU backward) answers within this, else it is refused


def fork_refusal(state: CaseState, ran_here: bool) -> str | None:
    """Why this worker cannot run cases in forked children, or None when it can."""
    spec = state.spec
    backend = spec.manifest.backend_import if spec.manifest is not None else None
    refusal = case_fork_refusal(spec.device_type, backend)
    if refusal is not None:
        return refusal
    if ran_here:  # a parent that ran nothing is the same in every child; see the module's docstring
        return "this worker ran cases itself before the run's first crash (autograd's device threads, OpenMP's pool)"
    return accelerator_hazard()


class ForkRefused(Exception):
    """A forked child found itself unable to run cases as its worker would (`_fork_probe`)."""


RunOne = Callable[[Case, CaseState, "str | None"], CaseOutcome]  # engine/one_case.py: run_one


class CaseRunner:
    """Worker side: runs each case here, or in a forked child once the run has crashed."""

    def __init__(self, state: CaseState, corpus: str | None, run_one: RunOne) -> None:
        self.state = state
        self.corpus = corpus
        self.run_one = run_one  # running a case is the engine's; where it runs is this module's
        self.ran_here = False  # a case ran in this process (OpenMP may have started its threads)
        self.refusal: str | None = None  # why cases stay here for this worker's life, once decided
        self.child: CaseProcess | None = None
        self.canary = Canary()  # workers/canary.py: a poisoned device ends the process that runs cases

    def run(self, case: Case, nodeid: str) -> CaseOutcome:
        if self._forking():
            work_dir = self.state.work_dir
            assert work_dir is not None  # a worker's budget reader lives there
            if self.child is None:
                self.child = CaseProcess(self._run_planned, log_path(work_dir, self.state.worker),
                                         lambda: self.canary.poisoned is not None)
            try:
                return self.child.run(case, nodeid, work_dir, self.state.worker)
            except ForkRefused as exc:  # the case runs here, and every later one
                self.refusal = str(exc)
        self.ran_here = True
        return self._watched(case)

    def _run_planned(self, case_id: str) -> CaseOutcome:
        """In the child: the planned case of that id, as the worker would run it."""
        return self._watched(self.state.plan()[case_id])

    def _watched(self, case: Case) -> CaseOutcome:
        """run_one (each of its --repeat runs: the engine hands in engine/repeat.py's runner) between the
        canary's baseline and its check after a failure (workers/canary.py)."""
        device = None
        try:
            device = self.state.context_parts()[0]
            self.canary.before(device)
        except Exception:  # noqa: BLE001, S110 - the case reports the backend's import error itself
            pass
        outcome = self.run_one(case, self.state, self.corpus)
        if device is not None:
            self.canary.after(outcome.record, outcome.kind == FAILED, device)
        return outcome

    @property
    def retiring(self) -> bool:
        """The device of this process (the worker, running cases itself) was found poisoned."""
        return self.canary.poisoned is not None and self.ran_here

    def _forking(self) -> bool:
        budget = self.state.budget  # a worker with a scratch folder has one, read before each case (stops)
        if budget is None or not budget.fork_cases or self.refusal is not None:
            return False
        if self.child is None:
            self.refusal = fork_refusal(self.state, self.ran_here)
        return self.refusal is None

    def close(self) -> None:
        if self.child is not None:
            self.child.stop()


class CaseProcess:
    """One forked child at a time; a new one after the last died."""

    def __init__(self, execute: Callable[[str], CaseOutcome], log: Path | None = None,
                 retire: Callable[[], bool] = lambda: False) -> None:
        self.execute = execute
        self.retire = retire  # in the child, after a case: leave (its device was found poisoned)
        self.log = log  # the worker's log (workers/isolation.py): where a timed-out child writes its stack
        self.pid: int | None = None
        self.channel: Channel | None = None  # workers/case_messages.py: CASE_PROTOCOL
        self.imports: list[str] = []  # modules the children imported, imported here before a fork

    def run(self, case: Case, nodeid: str, work_dir: Path | None, worker: str) -> CaseOutcome:
        if self.pid is not None and os.waitpid(self.pid, os.WNOHANG)[0]:
            # It died between cases (the watchdog's signal raced the last case's end, the OOM
            # killer): this case did not kill it.
            self.pid = None
            self._close()
            self._fresh()
        if self.pid is None:
            self._start()
        assert self.channel is not None
        running_child(self.abort)  # the timeout watchdog ends this child, not the worker (isolation.py)
        try:
            self.channel.send(RunCase(case.id))
            reply = self.channel.recv(CaseDone, CaseRaised)  # unbounded here: the watchdog ends a hung child
        except (PeerGone, ProtocolError):  # dead, or past saving (the worker reaps it, killed if need be)
            running_child(None)
            return self._died(case, nodeid, work_dir, worker)
        running_child(None)
        self.imports.extend(reply.imported)
        if isinstance(reply, CaseRaised):  # raised around run_one (the case not in the plan, ...): the case's error
            record = CaseRecord.from_case(case, status=Status.ERROR, message=reply.error,
                                          traceback=reply.traceback, worker=worker)
            return CaseOutcome(record, FAILED, record.message or "")
        outcome = CaseOutcome.from_json(reply.outcome)
        if (outcome.record.attribution or {}).get("process_replaced"):  # its device is poisoned: the child
            self._reap()  # leaves after this reply (workers/canary.py); the next case forks a fresh one
            self._fresh()
        return outcome

    def _died(self, case: Case, nodeid: str, work_dir: Path | None, worker: str) -> CaseOutcome:
        exit_fields = self._reap()
        record = child_death_record(case, work_dir, worker, nodeid, exit_fields)
        self._fresh()
        return CaseOutcome(record, FAILED, record.message or "")

    def _fresh(self) -> None:
        """The log's next cases run in the next child, not with the dead one's (workers/attribution.py)."""
        if self.log is not None:
            try:
                mark_fresh_process(self.log)
            except OSError:
                pass

    def _start(self) -> None:
        for name in self.imports:  # what the last child imported: the next one inherits it
            if name not in sys.modules:
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001 - a module only its case could import: the child will
                    continue
        self.imports = []
        gc.freeze()  # the child's collections leave the worker's objects alone: fewer pages copied
        mine, theirs = Pipe()
        with warnings.catch_warnings():  # Python 3.12+ warns of any fork beside a thread (execnet's reader
            warnings.simplefilter("ignore", DeprecationWarning)  # here): the child never touches its objects
            pid = os.fork()
        if pid == 0:
            mine.close()
            _serve(theirs, self.execute, self.log, self.retire)  # never returns
        theirs.close()
        self.pid, self.channel = pid, Channel(mine, CASE_PROTOCOL)
        try:
            hello = self.channel.recv(Ready, Refused, timeout=HELLO_WAIT_S)
        except (PeerGone, ProtocolError):
            hello = Refused("the forked child died before its first case")
        except ChannelTimeout:
            hello = Refused(f"the forked child did not answer within {HELLO_WAIT_S:g} s")
        if isinstance(hello, Refused):
            self._reap()
            raise ForkRefused(hello.why)

    def _reap(self) -> dict[str, Any]:
        """The child's signal or exit code (CaseRecord fields), killed if it has not left within
        REAP_WAIT_S of its pipe closing; it is gone after this."""
        pid, self.pid = self.pid, None
        self._close()
        if pid is None:
            return {}
        deadline = time.monotonic() + REAP_WAIT_S
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                signal_quietly(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                break
            time.sleep(0.005)
        return exit_fields(os.waitstatus_to_exitcode(status))

    def _close(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    def abort(self) -> None:
        """From the timeout watchdog: the child's stack into the log, then its end (STACK_GRACE_S)."""
        pid = self.pid
        if pid is None:
            return
        signal_quietly(pid, signal.SIGUSR1)
        steps = ((STACK_GRACE_S, signal.SIGABRT), (STACK_GRACE_S + ABORT_GRACE_S, signal.SIGKILL))
        for delay, sig in steps:
            timer = threading.Timer(delay, self._signal_if_alive, (pid, sig))
            timer.daemon = True
            timer.start()

    def _signal_if_alive(self, pid: int, sig: int) -> None:
        if self.pid == pid:  # not reaped yet: still this child
            signal_quietly(pid, sig)

    def stop(self) -> None:
        """At the worker's end: the idle child runs its exit handlers (rank processes) and leaves."""
        if self.pid is None or self.channel is None:
            return
        try:
            self.channel.send(Stop())
        except OSError:  # PeerGone: it died idle
            pass
        self._reap()


def _serve(conn: Connection, execute: Callable[[str], CaseOutcome], log: Path | None,
           retire: Callable[[], bool] = lambda: False) -> None:
    """The child: runs the cases the worker sends until it is told to stop or the worker is gone."""
    code = 0
    try:
        die_with_parent()
        atexit._clear()  # the worker's exit handlers are the worker's (its temporary folders, ...)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the worker's: it ends this child
        if log is not None:
            signal.signal(signal.SIGUSR1, functools.partial(_stack_and_exit, log))
        channel = Channel(conn, CASE_PROTOCOL)
        refused = _fork_probe()
        channel.send(Refused(refused) if refused else Ready())
        if refused:
            return
        known, count = set(sys.modules), len(sys.modules)
        while True:
            try:
                message = channel.recv(RunCase, Stop)  # unbounded: die_with_parent ends it with the worker
            except (PeerGone, ProtocolError):
                break
            if isinstance(message, Stop):
                break
            reply = _outcome(execute, message.case_id)
            if len(sys.modules) != count:  # most cases import nothing: no walk over sys.modules
                new = [name for name in sys.modules if name not in known]
                known.update(new)
                count = len(sys.modules)
                reply = replace(reply, imported=[name for name in new
                                                 if getattr(sys.modules[name], "__spec__", None) is not None])
            for stream in (sys.stdout, sys.stderr):  # the worker's captured output is read after this
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001, S110 - a closed stream: nothing to flush
                    pass
            channel.send(reply)
            if retire():  # a poisoned device (workers/canary.py): the worker forks a fresh child
                break
        atexit._run_exitfuncs()  # the ones its cases registered
    except BaseException:  # noqa: BLE001 - the child never returns into the worker's pytest
        code = 70
    finally:
        os._exit(code)


def _stack_and_exit(log: Path, signum: int, frame: FrameType | None) -> None:
    """SIGUSR1 in a timed-out child: where the case was, innermost call last, as the worker's
    watchdog writes it for a case it runs itself (workers/isolation.py)."""
    try:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write("--- where the case was at the timeout ---\n")
            fh.write("".join(traceback.format_stack(frame)))
    finally:
        os._exit(TIMEOUT_EXIT)


def _fork_probe() -> str | None:
    """What the child cannot do that its worker could, or None. A worker whose autograd engine
    started its device threads (a backward on a device) leaves its forked children unable to run
    any backward ("Unable to handle autograd's threading in combination with fork-based
    multiprocessing"): a backward check would then see CPU fail and skip every sample, a pass that
    checked nothing. One CPU backward of two elements finds out."""
    import torch

    try:
        x = torch.ones(2, requires_grad=True)
        torch.autograd.grad((x * 2).sum(), x)
    except RuntimeError as exc:
        return f"autograd cannot run in a forked child of this worker: {first_line(exc, 200)}"
    return None


def _outcome(execute: Callable[[str], CaseOutcome], case_id: str) -> CaseDone | CaseRaised:
    try:
        return CaseDone(execute(case_id).to_json(), [])
    except BaseException as exc:  # noqa: BLE001 - the worker records it as the case's error
        return CaseRaised(f"{type(exc).__name__}: {first_line(exc, 500)}",
                          "\n".join(traceback.format_exc().splitlines()[-30:]), [])
