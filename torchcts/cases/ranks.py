"""Local rank processes for the distributed suite: start N ranks once, run checks on them, bound each.

A distributed case cannot run in its own worker: a collective needs N processes that joined one
process group. Importing torch costs each process seconds, so the ranks are started once per pytest
worker (`RankPool`, kept while the device and backend stay the same) and each case sends them one
check: a `module:function` run on every rank as `function(env, **params)` (env: `RankEnv`). Pool
and ranks talk in typed messages over a socket pair each (cases/rank_messages.py); a check's return
value (CPU tensors, plain data) comes back through a file per rank (torch.save), which the rank's
answer announces.

Every wait is bounded well below the case's timeout: a rank that does not answer in time is a hang
(`OracleMismatch`: the case fails, naming the check and the ranks still inside it), a rank that
dies is a crash (failed, naming the rank, its signal or exit status and its stderr's tail). Either
kills every rank's process group, and the next case starts fresh ranks. A check that raises on a
rank is an error of that rank (`RankError`; the ranks are kept only when every one raised, the
group then in step); `NotApplicable` raised on a rank makes the case not_applicable. The worker
side is `cases/rank_worker.py`.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch

from torchcts.cases.rank_messages import JOINED, RANK_PROTOCOL, RankAnswer, RankCall, payload_name
from torchcts.model.case import NotApplicable
from torchcts.oracle.mismatch import Mismatch, OracleMismatch
from torchcts.process import Channel, PeerGone, ProtocolError, ready, signal_name

WORLD_SIZE = 2  # two cores on the smallest machine this runs on: more ranks only queue
START_TIMEOUT_S = 120.0  # N fresh pythons import torch and the backend, then join the group
CALL_TIMEOUT_S = 30.0  # one check on every rank; a collective that takes longer is hung
ERROR_GRACE_S = 5.0  # after one rank raised or was not applicable, how long the others may take to answer
PG_TIMEOUT_S = 90.0  # the process group's own timeout: after ours, so ours names the hang
IDLE_EXIT_S = 120.0  # a rank without a command this long leaves (rank_worker.py) ...
REUSE_S = 90.0  # ... so ranks idle this long are replaced, never sent a command as they leave


class RankError(RuntimeError):
    """A check raised on a rank (the backend's exception, with the rank's traceback's last line)."""


@dataclass
class RankEnv:
    """What a check sees on its rank: who it is, the device, and the group's store (for re-joining)."""

    rank: int
    world_size: int
    device: torch.device
    backend: str
    store: Any  # torch.distributed.FileStore
    timeout_s: float = PG_TIMEOUT_S
    joins: int = 0

    def init(self) -> None:
        """Join the default process group (again, under a fresh store prefix, after a destroy)."""
        import torch.distributed as dist

        store = self.store if self.joins == 0 else dist.PrefixStore(f"rejoin{self.joins}", self.store)
        self.joins += 1
        dist.init_process_group(self.backend, rank=self.rank, world_size=self.world_size, store=store,
                                timeout=datetime.timedelta(seconds=self.timeout_s))

    def to(self, t: torch.Tensor) -> torch.Tensor:
        return t.to(self.device, copy=True)


def default_backend(device_type: str, named: str | None) -> str:
    """The c10d backend to join: the manifest's, else PyTorch's for the device type (gloo for cpu)."""
    if named:
        return named
    if device_type == "cpu":
        return "gloo"
    import torch.distributed as dist

    found = dist.Backend.default_device_backend_map.get(device_type)
    if not found:
        raise RankError(f"no c10d backend is registered for device type '{device_type}' (the backend calls "
                        "torch.distributed.Backend.register_backend(name, creator, devices=[...])); "
                        "name one with distributed_backend in the manifest")
    return found


@dataclass
class RankPool:
    """N rank processes that joined one process group, and the folder they answer in."""

    device: str
    backend: str | None
    backend_import: str | None
    world_size: int = WORLD_SIZE
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="torchcts-ranks-")))
    procs: list[subprocess.Popen] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)  # to each rank, by rank
    seq: int = 0
    last_used: float = field(default_factory=time.monotonic)
    joined: str = ""  # the backend name the ranks report

    @property
    def key(self) -> tuple:
        return (self.device, self.backend, self.backend_import, self.world_size)

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        config = {"world_size": self.world_size, "device": self.device, "backend": self.backend,
                  "backend_import": self.backend_import, "pg_timeout_s": PG_TIMEOUT_S,
                  "idle_exit_s": IDLE_EXIT_S}
        (self.folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the parent's imports, ours first
        for rank in range(self.world_size):
            mine, theirs = socket.socketpair()
            with theirs, (self.folder / f"rank{rank}.log").open("wb") as log:
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", "torchcts.cases.rank_worker", str(self.folder), str(rank), str(theirs.fileno())],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                    pass_fds=(theirs.fileno(),)))
            self.channels.append(Channel(Connection(mine.detach()), RANK_PROTOCOL))
        joined = self._await(JOINED, "joining the process group", timeout)
        self.joined = str(joined[0])

    def call(self, check: str, params: dict[str, Any], timeout: float = CALL_TIMEOUT_S) -> list[Any]:
        """Run `check` on every rank; each rank's return value, by rank."""
        self.seq += 1
        for rank, channel in enumerate(self.channels):
            try:
                channel.send(RankCall(self.seq, check, params))
            except OSError:  # PeerGone: the rank died between cases
                self._crashed(rank, check)
        self.last_used = time.monotonic()
        try:
            return self._await(self.seq, check.rpartition(":")[2].removeprefix("_rank_"), timeout)
        except (RankError, OracleMismatch, NotApplicable):
            raise
        except BaseException:  # the case's own timeout or an interrupt while ranks work: never reuse them
            self.kill()
            raise

    def _await(self, seq: int, what: str, timeout: float) -> list[Any]:
        """Every rank's value for call `seq`; a dead rank is a crash, the deadline a hang."""
        deadline = time.monotonic() + timeout
        answers: dict[int, RankAnswer] = {}
        while len(answers) < self.world_size:
            self._collect(seq, what, answers, max(0.0, min(0.05, deadline - time.monotonic())))
            errors = {r: a.error for r, a in answers.items() if a.error is not None}
            skipped = [a.not_applicable for a in answers.values() if a.not_applicable is not None]
            if errors or skipped:  # the others get a short grace, not the whole deadline, to answer too
                deadline = min(deadline, time.monotonic() + ERROR_GRACE_S)
            if len(answers) < self.world_size and time.monotonic() > deadline:
                waited = f"; ranks {_missing(answers, self.world_size)} then waited in {what} (killed)"
                if errors or skipped:
                    self.kill()
                if errors:  # one rank raised, the others wait for it inside the collective
                    raise RankError(_rank_errors(errors) + waited)
                if skipped:  # one rank's reference could not run: the case proves nothing either way
                    raise NotApplicable(skipped[0] + waited)
                stacks = self._stacks([r for r in range(self.world_size) if r not in answers])  # a hang's evidence
                self.kill()
                raise OracleMismatch(Mismatch(
                    f"ranks {_missing(answers, self.world_size)} did not finish {what} within {timeout:.0f} s: "
                    "a hang (every rank killed)", extra={"finished": sorted(answers), "stacks": stacks}))
        errors = {r: a.error for r, a in answers.items() if a.error is not None}
        if errors:
            if len(errors) < self.world_size:  # some ranks went on: the group's state is unknown
                self.kill()
            raise RankError(_rank_errors(errors))
        skipped = [a.not_applicable for a in answers.values() if a.not_applicable is not None]
        if skipped:
            if len(skipped) < self.world_size:  # as above: the group's state is unknown
                self.kill()
            raise NotApplicable(skipped[0])
        return [torch.load(self.folder / payload_name(seq, r), weights_only=True) for r in range(self.world_size)]

    def _collect(self, seq: int, what: str, answers: dict[int, RankAnswer], wait_s: float) -> None:
        """The answers to call `seq` that came within `wait_s`, into `answers`; a rank whose channel
        closed, or whose process ended without answering, crashed."""
        waiting = {self.channels[r]: r for r in range(self.world_size) if r not in answers}
        for channel in ready(waiting, wait_s):
            rank = waiting[channel]
            try:
                answer = channel.recv(RankAnswer, timeout=0)
            except PeerGone:
                self._crashed(rank, what)
            except ProtocolError as exc:  # not a rank of ours, or a torn write: its state is unknown
                self.kill()
                raise RankError(f"rank {rank} answered {what} with {exc}") from None
            if answer.seq == seq:  # an earlier call's answer cannot come: a pool that timed out is killed
                answers[rank] = answer
        for channel, rank in waiting.items():
            if rank not in answers and self.procs[rank].poll() is not None and not channel.conn.poll(0):
                self._crashed(rank, what)

    def _crashed(self, rank: int, what: str) -> None:
        proc = self.procs[rank]
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
        code = proc.returncode
        how = f"was killed by {signal_name(-code)}" if code is not None and code < 0 else f"exited with status {code}"
        tail = self.tail(rank)
        self.kill()
        raise OracleMismatch(Mismatch(f"rank {rank} {how} during {what} (a crash; every rank killed)",
                                      extra={"rank": rank, "returncode": code, "output_tail": tail}))

    def _stacks(self, ranks: list[int]) -> dict[str, str]:
        """Where each hung rank waits: its faulthandler dump (rank_worker.py registers SIGUSR1)."""
        for rank in ranks:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.procs[rank].pid, signal.SIGUSR1)
        time.sleep(0.5)
        return {str(rank): self.tail(rank, 25) for rank in ranks}

    def tail(self, rank: int, lines: int = 15) -> str:
        try:
            text = (self.folder / f"rank{rank}.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return bool(self.procs) and all(p.poll() is None for p in self.procs)

    def close(self) -> None:
        """End the ranks politely (their channel closed: they leave the group), then by force."""
        for channel in self.channels:
            channel.close()
        self.channels = []
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self.kill()

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
        for channel in self.channels:
            channel.close()
        self.procs, self.channels = [], []
        shutil.rmtree(self.folder, ignore_errors=True)


def _missing(answers: dict[int, Any], world: int) -> str:
    return ", ".join(str(r) for r in range(world) if r not in answers)


def _rank_errors(errors: dict[int, str]) -> str:
    return "; ".join(f"rank {r}: {e}" for r, e in sorted(errors.items()))


_POOL: RankPool | None = None


def pool_for(device: str, backend: str | None, backend_import: str | None) -> RankPool:
    """This process's live pool for the device and backend, started (or restarted) as needed."""
    global _POOL
    want = (device, backend, backend_import, WORLD_SIZE)
    stale = _POOL is not None and time.monotonic() - _POOL.last_used > REUSE_S
    if _POOL is not None and (_POOL.key != want or not _POOL.alive() or stale):
        _POOL.close()
        _POOL = None
    if _POOL is None:
        pool = RankPool(device, backend, backend_import)
        try:
            pool.start()
        except BaseException:
            pool.kill()
            raise
        _POOL = pool
    return _POOL


def on_ranks(ctx: Any, check: str, timeout: float = CALL_TIMEOUT_S, **params: Any) -> list[Any]:
    """Run `check` ("module:function") on every rank for the case's device and backend; by rank."""
    manifest = ctx.manifest
    pool = pool_for(str(ctx.device), manifest.distributed_backend, manifest.backend_import)
    ctx.describe(world_size=pool.world_size, c10d_backend=pool.joined)
    return pool.call(check, params, timeout)


def _drop_pool() -> None:
    global _POOL
    if _POOL is not None:
        _POOL.close()
        _POOL = None


atexit.register(_drop_pool)
