"""Typed messages between a process and its child, and the one channel that carries them.

A message kind is a frozen dataclass deriving `Message` with a `kind` name; a `Protocol` is the
registry of the kinds one conversation may carry, and its `decode` refuses anything else (an
unknown kind, a missing or extra field, a field of the wrong JSON type: `ProtocolError`), since a
child may die in the middle of a write or be someone else's process. A `Channel` frames them over a
`multiprocessing.connection.Connection` (a pipe, a socket pair, an authenticated socket): `send`,
and `recv` with a bounded wait (`ChannelTimeout`), a dead or closed peer being `PeerGone`.

Each error also is what the callers caught before there was one layer (`PeerGone` is an EOFError
and an OSError, `ChannelTimeout` a TimeoutError, `ProtocolError` a ValueError).

Standard library only, and no import of the package: the warm server (workers/zygote/), which
never imports torchcts, loads this file by its path.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from multiprocessing.connection import Connection, wait
from typing import Any, ClassVar, TypeVar

M = TypeVar("M", bound="Message")


class ProtocolError(ValueError):
    """A message that is not one of ours, or not well-formed."""


class PeerGone(EOFError, ConnectionError):
    """The other end closed its side or died."""


class ChannelTimeout(TimeoutError):
    """No message came within the wait."""


@dataclass(frozen=True)
class Message:
    """One message: each field a JSON value (text, numbers, lists, objects) as its type hint says."""

    kind: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **{f.name: getattr(self, f.name) for f in fields(self)}}


Check = Callable[[Any], bool]


def _check(hint: Any) -> Check:
    """A test of a decoded JSON value against a field's type hint (Any, str, int, float, bool, None,
    list[X], dict[str, X] and unions of those)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return lambda value: True
    if hint is None or hint is type(None):
        return lambda value: value is None
    if origin in (typing.Union, types.UnionType):
        options = [_check(arg) for arg in args]
        return lambda value: any(ok(value) for ok in options)
    if origin is list:
        item = _check(args[0]) if args else _check(Any)
        return lambda value: type(value) is list and all(item(v) for v in value)
    if origin is dict:
        entry = _check(args[1]) if args else _check(Any)
        return lambda value: type(value) is dict and all(type(k) is str and entry(v) for k, v in value.items())
    if hint is float:  # JSON writes 2.0 as 2.0 but a peer may write 2
        return lambda value: type(value) in (int, float)
    if hint in (str, int, bool):
        return lambda value: type(value) is hint
    raise TypeError(f"a message field cannot be of type {hint!r}: JSON values only")


class Protocol:
    """The message kinds one conversation may carry, by name (its registry)."""

    def __init__(self, *kinds: type[Message]) -> None:
        self.kinds = {cls.kind: cls for cls in kinds}
        if len(self.kinds) != len(kinds) or "" in self.kinds:
            raise TypeError("each message kind needs a name of its own")
        self.checks = {cls.kind: self._checks(cls) for cls in kinds}

    @staticmethod
    def _checks(cls: type[Message]) -> dict[str, Check]:
        hints = typing.get_type_hints(cls)  # each class's hints in its own module
        return {f.name: _check(hints[f.name]) for f in fields(cls)}

    def encode(self, message: Message) -> bytes:
        """Its JSON text; a value JSON cannot hold (a numpy scalar in a case's info) travels as text."""
        if self.kinds.get(message.kind) is not type(message):
            raise ProtocolError(f"{type(message).__name__} is not a message of this protocol")
        return json.dumps(message.to_json(), default=str).encode()

    def decode(self, data: bytes) -> Message:
        """The message in `data`; ProtocolError for anything else (the peer is then dropped)."""
        try:
            obj = json.loads(data)
            cls = self.kinds[obj.pop("kind")]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ProtocolError(f"not a message: {exc}") from None
        checks = self.checks[cls.kind]
        if sorted(obj) != sorted(checks) or not all(ok(obj[name]) for name, ok in checks.items()):
            raise ProtocolError(f"a malformed {cls.kind} message")
        return cls(**obj)


class Channel:
    """Messages of one protocol over a connection; the connection is the channel's from here on."""

    def __init__(self, conn: Connection, protocol: Protocol, max_bytes: int | None = None) -> None:
        self.conn = conn
        self.protocol = protocol
        self.max_bytes = max_bytes  # a longer message is a ProtocolError (a peer cannot fill our memory)

    def send(self, message: Message) -> None:
        """PeerGone when the other end is gone; a socket's own send timeout is a ChannelTimeout."""
        data = self.protocol.encode(message)
        try:
            self.conn.send_bytes(data)
        except (BlockingIOError, TimeoutError) as exc:
            raise ChannelTimeout(f"the peer took no {message.kind} message: {exc}") from None
        except OSError as exc:
            raise PeerGone(f"the peer is gone: {exc}") from None

    def recv(self, *expected: type[M], timeout: float | None = None) -> M:
        """The next message, one of `expected`. Waits `timeout` seconds at most (None: as long as
        the peer lives; the caller says what else bounds it)."""
        try:
            if timeout is not None and not self.conn.poll(timeout):
                raise ChannelTimeout(f"no message within {timeout:g} s")
            data = self.conn.recv_bytes(self.max_bytes) if self.max_bytes else self.conn.recv_bytes()
        except ChannelTimeout:
            raise
        except (BlockingIOError, TimeoutError) as exc:  # a socket's receive timeout (SO_RCVTIMEO)
            raise ChannelTimeout(f"no message in time: {exc}") from None
        except (EOFError, ConnectionError) as exc:
            raise PeerGone(f"the peer is gone: {exc or 'end of stream'}") from None
        except OSError as exc:  # over max_bytes ("bad message length"), or a broken stream
            raise ProtocolError(f"not a message: {exc}") from None
        message = self.protocol.decode(data)
        if not isinstance(message, expected):
            raise ProtocolError(f"unexpected {message.kind} message")
        return message

    def fileno(self) -> int:
        return self.conn.fileno()

    def close(self) -> None:
        self.conn.close()


def ready(channels: Iterable[Channel], timeout: float) -> list[Channel]:
    """The channels with a message (or a gone peer) to read, after waiting `timeout` at most."""
    by_conn = {channel.conn: channel for channel in channels}
    return [by_conn[conn] for conn in wait(list(by_conn), timeout)]  # type: ignore[index]
