"""Warm workers: xdist workers forked from a server that has already imported torch (workers/zygote/).

When: on for interactive use (stdin is a terminal and no `CI` variable), off in CI;
`torchcts run --warm/--no-warm` or TORCHCTS_WARM=1/0 force it. Linux only (macOS frameworks and
Windows have no safe fork after these imports). A run never waits for the server: when none is
listening for this run's key, the run starts one in the background and uses fresh workers; the
following runs fork from it. A server exits after IDLE_S without workers, when a file of a module
it imported changes, or on `torchcts warm --stop`. Its socket lives in a private per-user folder
(0700): $XDG_RUNTIME_DIR/torchcts-warm, else <tmp>/torchcts-warm-<uid> (TORCHCTS_WARM_DIR moves it).

Crash isolation is unchanged: xdist still starts one process per worker (the launcher), which
exits exactly as its forked worker did; workers/isolation.py reads the same logs and statuses.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from torchcts import settings
from torchcts.workers.zygote import keys, state
from torchcts.workers.zygote.preload import NAMED_PREFIX

ENV = settings.env_name("warm")
IDLE_S = 900.0  # a server with no worker for 15 minutes exits
RETRY_S = 600.0  # a server that found forking unsafe is not started again for this long (its .why file)
ZYGOTE = str(Path(keys.HERE).resolve())  # the package's folder, run as a script (its __main__.py)


def wanted(flag: bool | None) -> bool:
    """--warm/--no-warm, else TORCHCTS_WARM, else interactive use (a terminal, not CI)."""
    if flag is not None:
        return flag
    forced = settings.current().warm
    return settings.interactive() if forced is None else forced


# Backends whose import leaves the same state whether PyTorch's OpInfo database was imported before
# it or not: it names PrivateUse1 (the same name again), registers its device module and kernels, and
# patches nothing of torch.testing that the database copies at import. Their servers preload the
# database under the backend's name ("named:DEVICE", workers/zygote/preload.py), which a replacement or
# warm worker then does not import again (2.6 s of its start); the backend is imported after the fork.
# Checked by reading the backend's Python, by tests/workers/test_crash_server.py's run on pytorch_ocl and,
# for the sim, by tests/speed/test_speed_warm.py (verdicts and messages as a fresh worker's; each worker
# plants its own run's faults); a backend that monkeypatches torch (torch_npu) stays "base".
NAMED_BACKENDS = {
    "pytorch_ocl": "pytorch_dlprim: a C++ extension that registers 'ocl' and a torch.ocl module, nothing else",
    "torchcts.sim": "TorchCTS's simulated device: renames PrivateUse1 'sim', registers torch.sim, its kernels, "
                    "autocast, a c10d backend and a dynamo hook (applied whether dynamo was imported first or "
                    "not), nothing of torch.testing",
    "torch_openreg": "PyTorch's reference backend: renames PrivateUse1 'openreg', registers torch.openreg and "
                     "generates the Tensor/Storage methods, nothing else",
}


def profile_for(device_type: str, backend_import: str | None) -> str:
    """What the server may import before the fork: everything for a plain CPU run; with a backend
    module only what a fresh worker imports before the backend anyway (workers/zygote/preload.py),
    and for a backend of NAMED_BACKENDS the OpInfo database under its device's name too."""
    if device_type == "cpu" and not backend_import:
        return "full"
    if backend_import in NAMED_BACKENDS:
        return NAMED_PREFIX + device_type
    return "base"


def unavailable() -> str | None:
    """Why this machine cannot have warm workers, or None."""
    if not sys.platform.startswith("linux"):
        return f"they need Linux (this is {sys.platform})"
    if not hasattr(os, "fork") or not hasattr(__import__("socket"), "send_fds"):
        return "this Python has no fork() or descriptor passing"
    if "//" in sys.executable or "//" in ZYGOTE:
        return "the Python path contains '//'"  # execnet's spec syntax cannot carry it
    return None


def server_dir(env: dict[str, str] | None = None) -> Path:
    """The per-user private folder of the servers' sockets (created 0700; refused if not ours)."""
    folder = settings.warm_folder(env)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
    except OSError as exc:  # its text would name the absolute path (the user's home): the name only
        raise OSError(f"the warm servers' folder {folder.name} cannot be made ({exc.strerror or type(exc).__name__})") \
            from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        # named by its own name only: the absolute path names the user's home (docs/security.md)
        raise OSError(f"the warm servers' folder {folder.name} is not a private folder of this user (set "
                      "TORCHCTS_WARM_DIR to a folder only you can read, or TORCHCTS_WARM=0)")
    return folder


def socket_path(profile: str, env: dict[str, str] | None = None, run: str = "") -> str:
    """The socket of the server for `profile` and the environment workers get (os.environ); with
    `run`, a run-scoped server's (workers/crash_server.py): the key's start, for people, then `run`."""
    env = dict(os.environ) if env is None else env
    key = keys.key(env, profile)
    path = str(server_dir(env) / (f"{key[:16]}-run-{run}.sock" if run else f"{key}.sock"))
    if len(path.encode()) > 100:  # AF_UNIX paths are limited to ~107 bytes
        raise OSError(f"the socket path would be too long ({len(path.encode())} bytes): set TORCHCTS_WARM_DIR "
                      "to a shorter folder")
    return path


def listening(path: str) -> bool:
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        return False
    finally:
        sock.close()
    return True


def start_server(path: str, profile: str, env: dict[str, str] | None = None,
                 idle_s: float = IDLE_S, run_scoped: bool = False) -> None:
    """Start a detached server for `path` (it exits at once if another holds the key's lock). It
    starts here, so that relative PYTHONPATH entries resolve as in the workers, then leaves. A
    run-scoped one (workers/crash_server.py) removes its files when it exits."""
    with open(path + ".log", "ab") as log:
        subprocess.run([sys.executable, "-u", ZYGOTE, "serve", path, profile, f"{idle_s:g}",
                        *(["run"] if run_scoped else [])],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                       start_new_session=True, close_fds=True, env=env, check=False, timeout=60)


def launcher_command(path: str) -> str:
    return " ".join(shlex.quote(part) for part in (sys.executable, ZYGOTE, "launch", path))


class WarmWorkers:
    """Controller plugin: xdist's popen workers start through the launcher when a server listens.
    A run that starts the server says so once, and at its end whether the server is ready."""

    def __init__(self, profile: str) -> None:
        self.profile = profile
        self.config: Any = None
        self.started: tuple[str, float] | None = None  # (socket path, when) of a server this run started

    def pytest_xdist_setupnodes(self, config: Any, specs: list[Any]) -> None:
        popen = [s for s in specs if s.popen and not s.python and not s.via]
        if not popen:
            return
        self.config = config
        try:
            path = socket_path(self.profile)
        except OSError as exc:
            notice(f"no private folder for their sockets ({exc})", config)
            return
        if listening(path):
            for spec in popen:
                spec.python = launcher_command(path)
            return
        why = Path(path + ".why")
        if why.is_file() and time.time() - why.stat().st_mtime < RETRY_S:
            notice(why.read_text(encoding="utf-8", errors="replace").strip(), config)
            return
        if state.holder(path + ".lock"):
            return  # a server for this key is importing: an earlier run started it and said so
        start_server(path, self.profile)
        self.started = (path, time.monotonic())
        say("torchcts: starting a warm worker server in the background: later runs start faster "
            "(torchcts warm --stop ends it; --no-warm does without)", config)

    def pytest_unconfigure(self, config: Any) -> None:
        """The run that started the server: one line on whether later runs can use it yet."""
        if self.started is None:
            return
        path, since = self.started
        if listening(path):
            say(f"torchcts: the warm worker server is ready (it took {time.monotonic() - since:.0f} s): "
                "later runs fork their workers from it", config)
        elif state.holder(path + ".lock"):
            say("torchcts: the warm worker server is still importing; `torchcts warm --status` shows "
                "when it is ready", config)


def say(text: str, config: Any = None) -> None:
    """A line of ours on stderr, on a line of its own: after xdist's status line (which a terminal
    leaves unfinished to redraw it), not glued onto it."""
    reporter = config.pluginmanager.get_plugin("terminalreporter") if config is not None else None
    writer = getattr(reporter, "_tw", None)
    if writer is not None and getattr(writer, "width_of_current_line", 0):
        writer.line()
        writer.flush()
    print(text, file=sys.stderr, flush=True)


def notice(why: str, config: Any = None) -> None:
    say(f"torchcts: note: warm workers unavailable ({why}); using fresh workers", config)


def plugins(flag: bool | None, isolation: bool, device_type: str, backend_import: str | None) -> list[Any]:
    """The pytest plugins `torchcts run` adds for warm workers: none when off or unavailable."""
    if not isolation or not wanted(flag):
        return []
    why = unavailable()
    if why:
        if flag:  # asked for explicitly: say why not
            notice(why)
        return []
    return [WarmWorkers(profile_for(device_type, backend_import))]


def running() -> list[tuple[int, str]]:
    """(pid, socket name) of each server of this user that holds its key's lock."""
    try:
        return running_in(server_dir())
    except OSError:
        return []


def running_in(folder: Path) -> list[tuple[int, str]]:
    found = []
    for lock in sorted(folder.glob("*.sock.lock")):
        pid = state.holder(str(lock))  # the server wrote its pid in the lock it holds
        if pid:
            found.append((pid, lock.name[: -len(".lock")]))
    return found


def statuses(folder: Path | None = None) -> list[dict[str, Any]]:
    """Each running server's status (workers/zygote/state.py): pid, key, profile, age and idle
    seconds, workers, whether it is still importing (preparing) or stopping, its latest refusals
    (each a time and why), its socket name, and `here`: whether it serves this checkout and
    environment (its sys.path is this process's; a server of another checkout refuses our launchers)."""
    now = time.time()
    found = []
    here = keys.fresh_path()
    for pid, name in running() if folder is None else running_in(folder):
        sock = str((server_dir() if folder is None else folder) / name)
        st = state.read_status(sock)
        started, idle_since = st.get("started"), st.get("idle_since")
        found.append({"pid": pid, "socket": name, "key": st.get("key", name[: -len(".sock")]),
                      "here": st.get("path", here) == here,
                      "profile": st.get("profile"), "workers": st.get("workers", 0),
                      "age_s": now - started if isinstance(started, (int, float)) else None,
                      "idle_s": (now - idle_since if isinstance(idle_since, (int, float)) and not st.get("workers")
                                 else 0.0),
                      "preparing": bool(st.get("preparing")), "stopping": bool(st.get("stopping")),
                      "refusals": list(st.get("refusals") or [])})
    return found


def stop_all(folder: Path | None = None, everywhere: bool = True) -> list[int]:
    """Ask every server of this user (or in `folder`) to stop (each ends once its workers have); their
    pids. `everywhere=False`: only the servers of this checkout and environment (`statuses`' `here`)."""
    import signal

    stopped = []
    for pid in [s["pid"] for s in statuses(folder) if everywhere or s["here"]]:
        try:
            os.kill(pid, signal.SIGTERM)
            stopped.append(pid)
        except OSError:
            pass
    return stopped
