"""Fork servers of the zygote in private folders, for the tests of warm workers and of commands
(tests/speed/test_speed_warm.py, tests/workers/test_zygote_commands.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from torchcts.workers import warm


@pytest.fixture
def server_env():
    """A private socket folder short enough for AF_UNIX; every server started in it is stopped."""
    folder = tempfile.mkdtemp(prefix="tw", dir="/tmp")
    env = {**os.environ, "CI": "true", "TORCHCTS_WARM_DIR": folder}
    yield env
    for pid, _ in warm.running_in(Path(folder)):
        os.kill(pid, signal.SIGKILL)


def start(env: dict[str, str], profile: str = "bare", idle_s: float = 60, seconds: float = 120) -> tuple[str, int]:
    """Start a server and wait until it listens; (socket path, server pid)."""
    path = warm.socket_path(profile, env)
    warm.start_server(path, profile, env, idle_s)
    deadline = time.monotonic() + seconds
    while not warm.listening(path):
        assert time.monotonic() < deadline, Path(path + ".log").read_text() if Path(path + ".log").exists() else ""
        time.sleep(0.05)
    [pid] = [pid for pid, name in warm.running_in(Path(path).parent) if name == Path(path).name]
    assert Path(path + ".lock").read_text().strip() == str(pid)  # the server's pid, in the lock it holds
    return path, pid


def launch(path: str, code: str, env: dict[str, str], **kw) -> subprocess.CompletedProcess:
    """What execnet does with `--tx popen//python=<launcher>`: CMD -u -c CODE."""
    cmd = [sys.executable, warm.ZYGOTE, "launch", path, "-u", "-c", code]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, **kw)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pid: int, what: str, seconds: float = 20) -> None:
    """Fail the test unless `pid` is gone (or a zombie) within `seconds`."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
