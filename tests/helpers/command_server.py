"""The test session's command servers: `python -m torchcts ...` and repro scripts forked from a
server that has imported torch, instead of a fresh interpreter each (issue 52 item 6).

Why: the tests start several hundred commands; each fresh one imports torch and pytest (1.5-2 CPU-s)
before a line of ours. A server of the zygote's "base" profile (torch, pytest, xdist: the imports a
backend's forked workers get, nothing that reads PrivateUse1's name, nothing of torchcts) forks one
per command; the command imports torchcts, its backend and PyTorch's testing modules itself, as a
fresh one does (torchcts/workers/zygote/command.py). Anything the server refuses (another key
variable, another sys.path, a module in the folder that would shadow a preloaded one) runs fresh,
and so does the first command of a key (a test's own PYTHONPATH is often seen once).

The session's controller makes a private folder (FOLDER_VAR) and stops the servers at its end;
`CTS_TEST_FRESH=1` (scripts/version-matrix sets it) runs every command fresh, so CI proves both.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from torchcts.workers import warm
from torchcts.workers.zygote import command, keys, state

FOLDER_VAR = "CTS_TEST_COMMAND_SERVERS"  # not TORCHCTS_*: no torchcts setting, not in the key
FRESH_VAR = "CTS_TEST_FRESH"
PROFILE = "base"
IDLE_S = 300.0
STOP_WAIT_S = 10.0
MAX_SERVERS = 4  # distinct key environments served at once; others run fresh


def open_folder() -> None:
    """In the session's controller: the private folder its workers (and their commands) share."""
    if os.environ.get(FRESH_VAR) == "1" or os.environ.get(FOLDER_VAR):
        return
    os.environ[FOLDER_VAR] = tempfile.mkdtemp(prefix="cts-cmd-")  # 0700


def close_folder() -> None:
    """In the session's controller, at its end: stop the servers, remove their folder."""
    folder = os.environ.pop(FOLDER_VAR, None)
    if not folder or not os.path.isdir(folder):
        return
    locks = [str(lock) for lock in Path(folder).glob("*.sock.lock")]
    for lock in locks:
        pid = state.holder(lock)
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)  # it stops listening; its running commands finish
            except OSError:
                pass
    deadline = time.monotonic() + STOP_WAIT_S
    while any(state.holder(lock) for lock in locks) and time.monotonic() < deadline:
        time.sleep(0.05)  # its last status file written before the folder goes
    shutil.rmtree(folder, ignore_errors=True)


def prepare(args: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment for `python ARGS` with `env`: through a server's launcher
    when this session has one for env's key (started here at the key's second command), else
    `python ARGS` itself."""
    fresh = [sys.executable, *args]
    folder = env.get(FOLDER_VAR)
    if not folder or env.get(FRESH_VAR) == "1" or not command.is_command(args) or not os.path.isdir(folder):
        return fresh, env
    path = os.path.join(folder, keys.key(env, PROFILE)[:24] + ".sock")
    if len(path.encode()) > 100:  # AF_UNIX's limit (~107 bytes) with the suffixes' room
        return fresh, env
    if not state.holder(path + ".lock"):  # no server for the key: none listening nor importing
        if not seen_before(path) or running(folder) >= MAX_SERVERS:
            return fresh, env
        warm.start_server(path, PROFILE, env, idle_s=IDLE_S)  # detached; the launcher waits for it
    return [sys.executable, warm.ZYGOTE, "launch", path, *args], env


def launch(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """`prepare` for a whole command line (this Python first): engine/selftest.py's `launch`."""
    assert argv[0] == sys.executable, argv
    return prepare(argv[1:], env)


def seen_before(path: str) -> bool:
    """Whether a command of this key came before (a key seen once, a test's own PYTHONPATH, runs
    fresh: a server would import torch for one command)."""
    try:
        os.close(os.open(path + ".seen", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return True
    return False


def running(folder: str) -> int:
    return sum(1 for lock in Path(folder).glob("*.sock.lock") if state.holder(str(lock)))
