"""The launcher: what execnet runs instead of `python -u -c CODE`.

It hands its stdin/stdout/stderr, argv, cwd, environment and sys.path to the server, waits for the
forked worker and exits with its exact status, or dies by the same signal, so crash isolation
(workers/isolation.py) sees what it sees with a fresh worker. Refused, or anything unexpected (no
server, a server that dies): it execs a fresh `python` instead, never a hang nor a stale worker.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from multiprocessing.connection import Connection

from . import command, protocol, state
from .keys import fresh_path
from .protocol import Accepted, ExitStatus, LaunchRequest, Refusal

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
CONNECT_S = 30.0  # the longest a launcher waits for a server's answer before starting fresh
# The longest a launcher waits for a server that holds its lock but is still importing (a run's
# crash server, started at the run's first crash, while the crashes of a burst are replaced): on the
# same cores a fresh python's imports and the server's slow each other down, and a fork when it is
# ready costs ~1 s (docs/backends.md, "Crash cost").
START_WAIT_S = 20.0


def launch(sock_path: str, argv: list[str]) -> None:
    """Become the worker xdist asked for: a forked one if the server takes us, else a fresh python."""
    conn, pid = ask(sock_path, argv)
    if conn is None:
        os.execv(sys.executable, [sys.executable, *argv])  # a fresh worker, exactly as without us
    target = -pid if command.is_command(argv) else pid  # a command leads its own group (command.run)
    for name in FORWARDED:  # what the terminal or xdist sends this process reaches the worker
        signal.signal(getattr(signal, name), lambda signum, frame: kill(target, signum))
    try:
        protocol.set_timeout(conn, None)
        status = protocol.receive(conn, ExitStatus).status
    except (OSError, EOFError, ValueError):  # the server died: so must the worker
        kill(target, signal.SIGKILL)
        status = signal.SIGKILL  # a raw wait status: killed by SIGKILL
    exit_like(status)


def ask(sock_path: str, argv: list[str]) -> tuple[Connection | None, int]:
    """(the connection, the worker's pid) when the server forked for us; (None, 0) otherwise."""
    request = LaunchRequest(argv=argv, cwd=os.getcwd(), env=dict(os.environ), path=fresh_path(),
                            umask=current_umask())
    wait_for_start(sock_path)
    try:
        conn = protocol.connect(sock_path, state.read_authkey(sock_path), CONNECT_S)
    except Exception:  # noqa: BLE001 - no server, no key, authentication refused: start fresh
        return None, 0
    try:
        protocol.send(conn, request)
        protocol.send_fds(conn, [0, 1, 2])
        reply = protocol.receive(conn, Accepted, Refusal)
    except (OSError, EOFError, ValueError):
        reply = Refusal("no answer")
    if isinstance(reply, Accepted):
        return conn, reply.pid
    conn.close()
    return None, 0


def wait_for_start(sock_path: str, limit_s: float = START_WAIT_S) -> None:
    """Return once the server's socket exists (it binds after its imports), its lock is free (it
    refused to serve, or died), or after `limit_s`."""
    deadline = time.monotonic() + limit_s
    while (not os.path.exists(sock_path) and state.holder(sock_path + ".lock")
           and time.monotonic() < deadline):
        time.sleep(0.05)


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def exit_like(status: int) -> None:
    """Exit with a raw wait status: the same exit code, or death by the same signal (no core file)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ImportError, ValueError, OSError):
            pass
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those two cannot be caught, nor reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
