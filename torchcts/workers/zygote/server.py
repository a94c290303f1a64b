"""The fork server's one-event loop.

As xdist's `DSession.loop_once`: wait for one event, then dispatch it by name to one small
handler (`on_<name>`). The events:

    connection   a launcher connects (authenticated, same user)
    message      a launcher sent its request (or closed: its worker is then killed)
    child_exit   SIGCHLD: hand each exited worker's raw wait status to its launcher
    stop         SIGTERM/SIGHUP/SIGINT (`torchcts warm --stop`): stop listening
    tick         after every wait: the idle timeout, and every 10 s a check for changed files

A stopped server stops listening and leaves its loop once its last worker has exited. In the
forked child the `message` handler returns the launcher's request: the loop returns it and the
script's top level (cli.py) runs the worker, with nothing of the server's loop on the stack.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import selectors
import signal
import socket
import sys
import time
import warnings
from multiprocessing.connection import Connection
from typing import Any

from . import checks, command, protocol, state
from .protocol import ExitStatus, LaunchRequest, Refusal

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
WAIT_S = 5.0  # the longest one wait lasts: the tick's resolution
CHECK_EVERY_S = 10.0  # how often an idle server looks for changed module files
PEER_TIMEOUT_S = 10.0  # a launcher that takes longer to speak is dropped


class Server:
    """A listening server: its socket, its launchers' connections and its forked workers."""

    def __init__(self, sock_path: str, base: checks.Baseline, idle_s: float,
                 import_env: dict[str, str], started: float) -> None:
        self.sock_path = sock_path
        self.base = base
        self.idle_s = idle_s
        self.import_env = import_env  # what the server's imports set in os.environ
        self.conns: set[Connection] = set()
        self.children: dict[int, Connection | None] = {}  # worker pid -> its launcher
        self.events: collections.deque[tuple[str, dict[str, Any]]] = collections.deque()
        self.refusals: list[dict[str, Any]] = []
        self.stopping = False
        self.started = started  # when the process took the key's lock, before its imports
        self.last_active = self.checked = time.monotonic()
        self.authkey = state.new_authkey(sock_path)  # before the socket exists: launchers read it first
        self.listener: socket.socket | None
        self.listener, self.bound_ino = self.bind()
        self.wake_r, self.wake_w = self.watch_signals()
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.listener, selectors.EVENT_READ)
        self.sel.register(self.wake_r, selectors.EVENT_READ)
        self.save_status()

    # --- set-up ---------------------------------------------------------------------------------

    def bind(self) -> tuple[socket.socket, int]:
        """The listening socket, created 0600 (in a 0700 folder); a stale one is replaced (we hold
        the key's lock: whoever bound it is gone)."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            if os.path.exists(self.sock_path):
                os.unlink(self.sock_path)
            listener.bind(self.sock_path)
        finally:
            os.umask(old)
        listener.listen(16)
        return listener, os.stat(self.sock_path).st_ino

    def watch_signals(self) -> tuple[int, int]:
        """A pipe the signals this loop waits for write their number into (signal.set_wakeup_fd)."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        for sig in (signal.SIGCHLD, *STOP_SIGNALS):  # the number in the pipe is the event
            signal.signal(sig, lambda *_: None)
        return wake_r, wake_w

    # --- the loop -------------------------------------------------------------------------------

    def loop(self) -> LaunchRequest | None:
        """Serve until stopped and the last worker has exited (None); in a forked child, return its
        launcher's request."""
        while not (self.stopping and not self.children):
            job = self.loop_once()
            if job is not None:
                return job
        self.stop()
        return None

    def loop_once(self) -> LaunchRequest | None:
        if not self.events:
            self.wait()
        name, kwargs = self.events.popleft()
        return getattr(self, "on_" + name)(**kwargs)

    def wait(self) -> None:
        """Queue the events one wait brings, then a tick."""
        for item, _ in self.sel.select(timeout=WAIT_S):
            if item.fileobj is self.listener:
                self.events.append(("connection", {}))
            elif item.fileobj == self.wake_r:
                self.events.extend((self.signal_event(signum), {}) for signum in sorted(drain(self.wake_r)))
            else:
                self.events.append(("message", {"conn": item.fileobj}))
        self.events.append(("tick", {}))

    @staticmethod
    def signal_event(signum: int) -> str:
        return "child_exit" if signum == signal.SIGCHLD else "stop"

    # --- handlers -------------------------------------------------------------------------------

    def on_connection(self) -> None:
        if self.listener is None:
            return
        conn = protocol.accept(self.listener, self.authkey, PEER_TIMEOUT_S)
        if conn is not None:
            self.conns.add(conn)
            self.sel.register(conn, selectors.EVENT_READ)

    def on_message(self, conn: Connection) -> LaunchRequest | None:
        if conn not in self.conns:
            return None  # dropped by an earlier event of the same wait
        if conn in self.children.values():  # a launcher only speaks once; anything more is its end
            self.drop(conn)
            return None
        try:
            request = protocol.receive(conn, LaunchRequest)
            fds = protocol.recv_fds(conn, 3)
        except (OSError, EOFError, ValueError):
            self.drop(conn)
            return None
        try:
            why = self.why_not(request)
            if why:
                self.refuse(conn, why)
                return None
            return self.fork(conn, request, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def on_child_exit(self) -> None:
        """Hand each exited worker's raw wait status to its launcher."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                break
            if pid == 0:
                break
            conn = self.children.pop(pid, None)
            if conn is not None:
                try:
                    protocol.send(conn, ExitStatus(status))
                except OSError:
                    pass
                self.drop(conn)
        self.last_active = time.monotonic()
        self.save_status()

    def on_stop(self) -> None:
        self.stop()
        self.save_status()

    def on_tick(self) -> None:
        """Idle for idle_s: stop. Every CHECK_EVERY_S: stop if a module file changed."""
        now = time.monotonic()
        if self.children or self.conns:
            self.last_active = now
        elif now - self.last_active > self.idle_s:
            self.stop()
        if now - self.checked > CHECK_EVERY_S and not self.stopping:
            self.checked = now
            if self.stale():
                self.stop()

    # --- what the handlers do -------------------------------------------------------------------

    def why_not(self, request: LaunchRequest) -> str | None:
        """Why not fork for `request`; a stale server also stops."""
        if self.stopping:
            return "stopping"
        stale = self.stale()
        if stale:
            self.stop()
            return stale
        return checks.refusal(request, self.base)

    def stale(self) -> str | None:
        path = checks.changed(self.base.stamps)
        if path:
            return f"files changed since the server started ({path})"
        return None if self.still_ours() else "its socket was replaced"

    def refuse(self, conn: Connection, why: str) -> None:
        self.refusals = [*self.refusals, {"time": time.time(), "why": why}][-state.REFUSALS_KEPT:]
        try:
            protocol.send(conn, Refusal(why))
        except OSError:
            pass
        self.drop(conn)
        self.save_status()

    def fork(self, conn: Connection, request: LaunchRequest, fds: list[int]) -> LaunchRequest | None:
        """Fork a worker for `request`: in the child, its request (the environment completed with
        what the server's imports set); in the server, None."""
        with warnings.catch_warnings():  # Python 3.12+ warns about the (fork-safe) OpenBLAS threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            self.leave_in_child(fds)
            return dataclasses.replace(request, env={**request.env, **self.import_env})
        self.children[pid] = conn
        if command.is_command(request.argv):  # as the child does (command.run): whichever runs first
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)
        print(f"forked worker {pid}", file=sys.stderr)  # the server's log
        try:
            protocol.send(conn, protocol.Accepted(pid))
        except OSError:
            self.drop(conn)
        self.save_status()
        return None

    def leave_in_child(self, fds: list[int]) -> None:
        """In the forked child: close the server's descriptors (its socket file stays), take the
        launcher's stdio."""
        signal.set_wakeup_fd(-1)
        os.close(self.wake_r)
        os.close(self.wake_w)
        self.sel.close()
        for conn in self.conns:
            conn.close()
        if self.listener is not None:
            self.listener.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)

    def drop(self, conn: Connection) -> None:
        """Forget a launcher's connection; a worker whose launcher is gone (killed) is killed too."""
        if conn not in self.conns:
            return
        self.sel.unregister(conn)
        self.conns.discard(conn)
        for pid, owner in list(self.children.items()):
            if owner is conn:
                self.children[pid] = None
                kill_tree(pid)
        conn.close()

    def stop(self) -> None:
        """Stop listening; the loop ends when the last worker has exited."""
        if self.listener is not None:
            self.sel.unregister(self.listener)
            if self.still_ours():
                os.unlink(self.sock_path)
            self.listener.close()
            self.listener = None
        self.stopping = True

    def still_ours(self) -> bool:
        try:
            return os.stat(self.sock_path).st_ino == self.bound_ino
        except OSError:
            return False

    def save_status(self) -> None:
        """What `torchcts warm --status` shows (state.py: the status file)."""
        idle_for = 0.0 if self.children or self.conns else time.monotonic() - self.last_active
        state.write_status(self.sock_path, {
            "pid": os.getpid(), "key": self.base.key, "profile": self.base.profile, "path": self.base.path,
            "started": self.started, "idle_since": time.time() - idle_for, "workers": len(self.children),
            "stopping": self.stopping, "refusals": self.refusals})


def kill_tree(pid: int) -> None:
    """SIGKILL a worker, and its process group when it leads one (a command: command.run)."""
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
            return
        except OSError:
            continue


def drain(fd: int) -> set[int]:
    """The signal numbers waiting in the wake-up pipe."""
    got = b""
    while True:
        try:
            more = os.read(fd, 512)
        except (BlockingIOError, InterruptedError):
            break
        if not more:
            break
        got += more
    return set(got)
