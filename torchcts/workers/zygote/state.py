"""A server's files next to its socket, in the private per-user folder (workers/warm.py):

    KEY.sock.lock     held (flock) for the server's life; its pid is written in it
    KEY.sock.authkey  the secret both ends of the channel prove they know (0600)
    KEY.sock.status   JSON: pid, key, profile, start, last activity, workers, recent refusals
    KEY.sock.why      why a server could not serve at all (a fork hazard, a failed import)
    KEY.sock.log      the server's stderr (one line per forked worker)

A run-scoped server (workers/crash_server.py) removes them all when it exits (`remove_files`).

Every file is written atomically (a temporary file, then os.replace), so a reader never sees half.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import tempfile
import time
from typing import IO, Any

REFUSALS_KEPT = 10  # the status file keeps the latest refusals


def write_atomically(path: str, data: bytes, mode: int = 0o600) -> None:
    """torchcts/safe_io.py's job, written again on purpose: the server never imports torchcts (its
    forked workers import it fresh, so an edited torchcts file can never be stale in a worker)."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def hold_lock(sock_path: str, tries: int = 5) -> IO[str] | None:
    """Take the key's lock and write this process's pid in it; None if another server holds it.
    A few tries: a reader (`holder`) may hold it shared for an instant."""
    lock = open(sock_path + ".lock", "a+", encoding="ascii")  # noqa: SIM115 - held for the server's life
    for attempt in range(tries):
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or attempt == tries - 1:
                lock.close()
                return None
            time.sleep(0.05)
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock


SUFFIXES = ("", ".authkey", ".status", ".why", ".log", ".lock")  # the socket and its files; the lock last


def remove_files(sock_path: str) -> None:
    """Remove a server's socket and files (a run-scoped server at its end, or its run after it)."""
    for suffix in SUFFIXES:
        try:
            os.unlink(sock_path + suffix)
        except OSError:
            pass


def holder(lock_path: str) -> int | None:
    """The pid of the server holding `lock_path`, or None (nobody holds it, or not yet written)."""
    try:
        with open(lock_path, encoding="ascii") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                text = f.read().strip()  # held: by a server, which wrote its pid after locking
                return int(text) if text.isdigit() else None
            fcntl.flock(f, fcntl.LOCK_UN)  # nobody held it
    except OSError:
        return None
    return None


def new_authkey(sock_path: str) -> bytes:
    key = os.urandom(32)
    write_atomically(sock_path + ".authkey", key.hex().encode())
    return key


def read_authkey(sock_path: str) -> bytes:
    """OSError or ValueError when there is none (no server)."""
    with open(sock_path + ".authkey", encoding="ascii") as f:
        return bytes.fromhex(f.read().strip())


def write_status(sock_path: str, status: dict[str, Any]) -> None:
    try:
        write_atomically(sock_path + ".status", json.dumps(status, sort_keys=True).encode())
    except OSError:
        pass  # the status is for people; serving goes on without it


def read_status(sock_path: str) -> dict[str, Any]:
    try:
        with open(sock_path + ".status", encoding="utf-8") as f:
            status = json.load(f)
    except (OSError, ValueError):
        return {}
    return status if isinstance(status, dict) else {}


def note_why(sock_path: str, text: str) -> None:
    """Why this server does not serve (workers/warm.py shows it and retries later)."""
    try:
        write_atomically(sock_path + ".why", (text + "\n").encode(), 0o644)
    except OSError:
        pass


def forget_why(sock_path: str) -> None:
    try:
        os.unlink(sock_path + ".why")
    except OSError:
        pass
