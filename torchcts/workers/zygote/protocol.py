"""The launcher <-> server protocol: typed messages (torchcts/process/channel.py: `Message`, each
with its JSON form) over a channel of the standard library's `multiprocessing.connection` (it
frames messages and authenticates).

One exchange per worker:
    launcher -> server   LaunchRequest, then its stdin/stdout/stderr (SCM_RIGHTS)
    server -> launcher   Refusal (the launcher execs a fresh python) or Accepted(pid)
    server -> launcher   ExitStatus: the worker's raw wait status, when it has exited

Both ends authenticate with the server's authkey (state.py: a 0600 file in the private folder), so
a stranger's process cannot talk to a server. The channel is built from a plain socket with send
and receive timeouts (SO_RCVTIMEO), then `multiprocessing.connection.Connection` and its challenge
functions: what `Listener`/`Client` do, without their unbounded waits (a stuck peer must never
hang the server nor a launcher).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import struct
import sys
import types
from dataclasses import dataclass
from multiprocessing import AuthenticationError, reduction
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any, ClassVar

from .keys import SHARED_CHANNEL

__all__ = ["AuthenticationError", "ProtocolError", "LaunchRequest", "Refusal", "Accepted", "ExitStatus",
           "connect", "accept", "send", "receive", "send_fds", "recv_fds"]

MAX_BYTES = 1 << 20  # a launch request (its environment) is a few kB


def _shared_channel() -> types.ModuleType:
    """torchcts/process/channel.py, the one definition of messages and channels: imported inside
    torchcts; loaded by its path under a name of this package when the server runs as a script
    (__main__.py), which never imports torchcts (keys.py stamps that file as one of ours)."""
    if __package__.startswith("torchcts."):
        from torchcts.process import channel

        return channel
    name = f"{__package__}.channel"
    spec = importlib.util.spec_from_file_location(name, SHARED_CHANNEL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_channel = _shared_channel()
Message, Protocol, ProtocolError, Channel = _channel.Message, _channel.Protocol, _channel.ProtocolError, _channel.Channel


@dataclass(frozen=True)
class LaunchRequest(Message):
    """What `python -u -c CODE` would have been: the launcher's process state."""

    kind: ClassVar[str] = "launch"
    argv: list[str]  # the arguments after the interpreter: -u -c CODE
    cwd: str
    env: dict[str, str]
    path: list[str]  # keys.fresh_path() of the launcher
    umask: int


@dataclass(frozen=True)
class Refusal(Message):
    """The server will not fork for this launcher; why (also kept in the server's status file)."""

    kind: ClassVar[str] = "refusal"
    why: str


@dataclass(frozen=True)
class Accepted(Message):
    """The server forked the worker: its pid (the launcher forwards signals to it)."""

    kind: ClassVar[str] = "accepted"
    pid: int


@dataclass(frozen=True)
class ExitStatus(Message):
    """The worker's raw wait status (os.waitpid), which the launcher reproduces exactly."""

    kind: ClassVar[str] = "exit"
    status: int


PROTOCOL = Protocol(LaunchRequest, Refusal, Accepted, ExitStatus)


def to_json(message: Any) -> bytes:
    return PROTOCOL.encode(message)


def from_json(data: bytes) -> Any:
    """The message in `data`; ProtocolError for anything else (the peer is then dropped)."""
    return PROTOCOL.decode(data)


def send(conn: Connection, message: Any) -> None:
    """An OSError when the launcher or server is gone or stuck (PeerGone, ChannelTimeout)."""
    Channel(conn, PROTOCOL, MAX_BYTES).send(message)


def receive(conn: Connection, *expected: type) -> Any:
    """The next message, which must be one of `expected`: an EOFError when the peer closed, an
    OSError past the socket's timeout, a ValueError (ProtocolError) for anything else."""
    return Channel(conn, PROTOCOL, MAX_BYTES).recv(*expected)


# --- the channel -------------------------------------------------------------------------------

def connect(path: str, authkey: bytes, timeout: float) -> Connection:
    """A launcher's authenticated connection to the server at `path`."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
        conn = _wrap(sock, timeout)
    finally:
        sock.close()
    try:
        answer_challenge(conn, authkey)
        deliver_challenge(conn, authkey)
    except BaseException:
        conn.close()
        raise
    return conn


def accept(listener: socket.socket, authkey: bytes, timeout: float) -> Connection | None:
    """The server's side of a new connection: authenticated, from this user; else None."""
    try:
        sock, _ = listener.accept()
    except OSError:
        return None
    with sock:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", creds)[1] != os.getuid():
            return None
        conn = _wrap(sock, timeout)
    try:
        deliver_challenge(conn, authkey)
        answer_challenge(conn, authkey)
    except Exception:  # noqa: BLE001 - AuthenticationError, a dead or silent peer: not a launcher
        conn.close()
        return None
    return conn


def _wrap(sock: socket.socket, timeout: float) -> Connection:
    """A blocking Connection on `sock`'s descriptor whose reads and writes give up after `timeout`."""
    sock.setblocking(True)
    set_timeout(sock, timeout)
    return Connection(sock.detach())


def set_timeout(sock: socket.socket | Connection, seconds: float | None) -> None:
    """Bound each read and write on the socket (None: wait as long as it takes)."""
    whole = int(seconds or 0)
    tv = struct.pack("ll", whole, int(((seconds or 0) - whole) * 1e6))
    with _socket_of(sock) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)


def _socket_of(sock: socket.socket | Connection) -> socket.socket:
    """A socket object on a duplicate of the descriptor (closing it leaves the original open)."""
    return socket.fromfd(sock.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)


def send_fds(conn: Connection, fds: list[int]) -> None:
    with _socket_of(conn) as s:
        reduction.sendfds(s, fds)


def recv_fds(conn: Connection, count: int) -> list[int]:
    """`count` descriptors sent with send_fds; ProtocolError (none kept open) for any other number."""
    with _socket_of(conn) as s:
        try:
            fds = reduction.recvfds(s, count)
        except RuntimeError as exc:
            raise ProtocolError(f"no descriptors: {exc}") from None
    if len(fds) != count:
        for fd in fds:
            os.close(fd)
        raise ProtocolError(f"{len(fds)} descriptors, not {count}")
    return fds
