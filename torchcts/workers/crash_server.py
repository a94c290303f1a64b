"""Cheap replacement workers after a crash, in runs without warm workers (issue 30 item 1).

Only for runs whose cases cannot fork after a crash (`case_fork_refusal`: a backend not known to survive
a fork, or TORCHCTS_CASE_PROCESSES=0): in a CPU or sim run a worker dies once at most, since its
cases then run in forked children (workers/case_process.py), so a server would be started for
nothing.

Why: a worker that a case kills is replaced by a new Python that imports torch, pytest, xdist, the
backend and the OpInfo database again (~7 CPU-s, ~15 s of wall on a loaded 2-core machine), so a
backend in bring-up paid that per crash. Warm workers (workers/warm.py) make a replacement a fork,
but they are off in CI (a job must not leave a background server behind) and with `--no-warm`.

How: at a run's first crash (a clean run pays nothing) the controller starts a fork server of its
own (workers/zygote/, run-scoped: a socket name no other run has, files removed when it exits), and
from then on xdist starts each replacement through the launcher: `pytest_testnodedown` runs before
xdist's `_clone_node`, which reuses the dead worker's popen spec, and the worker-death policy
(workers/deaths.py: WorkerDeaths.node_down) asks `CrashServer.replace` to point that spec at it. Until the server listens, and
whenever it refuses (another environment, a changed file, a fork hazard), the launcher execs a fresh
python: a replacement is never worse than before, and it exits as its worker did, so a crash stays
a crash. The run stops the server at its end (`serving`: SIGTERM to the pid its lock file holds,
then it removes whatever a server killed before its own clean-up left); a controller killed before
that leaves a server whose workers die with their controller's channel, and which exits after
TORCHCTS_CRASH_SERVER_IDLE seconds without workers.

What the server imports: a CPU run the "full" profile (torch, the OpInfo database, dynamo and
inductor, as warm workers); a backend module run only torch, pytest and xdist ("base": a device
runtime initialised at import cannot be used in a forked child, and PyTorch's testing modules read
the PrivateUse1 name at import, so the OpInfo database must come after the backend), unless the
backend is in FORK_SAFE_BACKENDS: then the backend itself, then the OpInfo database
("backend:MODULE", workers/zygote/preload.py).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from torchcts import settings
from torchcts.workers import warm
from torchcts.workers.isolation import signal_quietly
from torchcts.workers.zygote import state
from torchcts.workers.zygote.preload import BACKEND_PREFIX

# Backends whose import a forked child can live with: no device runtime, no thread, no descriptor
# of a device. Never a real device runtime (CUDA, ROCm, XPU, MPS, a vendor's PrivateUse1 library).
FORK_SAFE_BACKENDS = {
    "torchcts.sim": "TorchCTS's simulated device: pure Python over CPU tensors, nothing started at import",
}
MAX_STARTS = 3  # a server that exits (idle, refused to fork) is started again, this many times a run
STOP_WAIT_S = 10.0  # how long the run waits for its server to leave before it kills it


def case_fork_refusal(device_type: str, backend_import: str | None) -> str | None:
    """Why a crash in this run cannot be contained in a forked child of its worker
    (workers/case_process.py), or None when it can: CPU or a fork-safe backend, on Linux, not
    switched off (TORCHCTS_CASE_PROCESSES=0)."""
    if not sys.platform.startswith("linux"):
        return "forked cases need Linux"
    if not settings.current().case_processes:
        return f"{settings.env_name('case_processes')}=0"
    if not (backend_import in FORK_SAFE_BACKENDS or (backend_import is None and device_type == "cpu")):
        return f"backend {backend_import or device_type!r} is not known to survive a fork"
    return None


def profile_for(device_type: str, backend_import: str | None) -> str:
    """What a run's crash server may import before it forks (see the module's docstring)."""
    if backend_import in FORK_SAFE_BACKENDS:
        return BACKEND_PREFIX + backend_import
    return warm.profile_for(device_type, backend_import)


def run_socket_path(profile: str, env: dict[str, str] | None = None) -> str:
    """A socket of this run alone, in the warm servers' private folder (`torchcts warm --status`
    lists it), with a random part no other run has."""
    return warm.socket_path(profile, env, run=secrets.token_hex(4))


class CrashServer:
    """Controller side: a crashed worker's replacement starts through this run's fork server (asked
    by the worker-death policy, workers/deaths.py: WorkerDeaths.node_down)."""

    def __init__(self, profile: str, idle_s: float) -> None:
        self.profile = profile
        self.idle_s = idle_s
        self.path: str | None = None  # the socket, chosen at the first crash
        self.starts = 0
        self.failed: str | None = None  # why no server could be started (said once)

    def replace(self, node: Any) -> None:
        """A worker died, and xdist clones its spec next: make that clone's python the launcher."""
        spec = getattr(getattr(node, "gateway", None), "spec", None)
        if spec is None or not spec.popen or spec.via or (spec.python and warm.ZYGOTE not in spec.python):
            return  # not a local popen worker, or one the user gave its own python
        launcher = self.launcher()
        if launcher is not None:
            spec.python = launcher

    def launcher(self) -> str | None:
        """The launcher of this run's server, started first when none is running; None when it
        cannot be (no private folder, too many starts)."""
        try:
            if self.path is None:
                self.path = run_socket_path(self.profile)
            if not warm.listening(self.path) and not state.holder(self.path + ".lock"):
                if self.starts >= MAX_STARTS:
                    return None
                self.starts += 1
                warm.start_server(self.path, self.profile, idle_s=self.idle_s, run_scoped=True)
        except (OSError, subprocess.SubprocessError) as exc:
            if self.failed is None:
                self.failed = str(exc)
                warm.say(f"torchcts: note: no fork server for crashed workers' replacements ({exc}); "
                         "they start as fresh processes")
            return None
        return warm.launcher_command(self.path)

    def stop(self, wait_s: float = STOP_WAIT_S) -> None:
        """Stop this run's server (it leaves once its last worker has) and remove its files."""
        if self.path is None:
            return
        lock = self.path + ".lock"
        pid = state.holder(lock)
        if pid:
            # Gone means the process too: it lets go of its lock before its interpreter has exited.
            def up() -> bool:
                return bool(state.holder(lock)) or _alive(pid)

            signal_quietly(pid, signal.SIGTERM)
            deadline = time.monotonic() + wait_s
            while up() and time.monotonic() < deadline:
                time.sleep(0.05)
            if state.holder(lock):  # the lock says the pid is still the server's (a gone one's may be reused)
                signal_quietly(pid, signal.SIGKILL)  # its workers' launchers then kill them (zygote/launcher.py)
                while up() and time.monotonic() < deadline + 5:
                    time.sleep(0.05)
        state.remove_files(self.path)


def _alive(pid: int) -> bool:
    """The process runs (a zombie, exited and waiting to be reaped, does not)."""
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):  # gone, or gone between the two looks
        return False
    except OSError:  # another user's (a reused pid), or no /proc: os.kill's answer stands
        return True


def wanted(isolation: bool, warm_plugins: list[Any], device_type: str, backend_import: str | None) -> str | None:
    """The crash server's profile for this run, or None: no isolation, no fork here, switched off
    (TORCHCTS_CRASH_SERVER=0), warm workers already fork replacements from the same imports, or
    cases fork after the first crash (workers/case_process.py), so a worker dies once at most."""
    if not isolation or not settings.current().crash_server or warm.unavailable() is not None:
        return None
    if case_fork_refusal(device_type, backend_import) is None:
        return None
    profile = profile_for(device_type, backend_import)
    if any(getattr(p, "profile", None) == profile for p in warm_plugins):
        return None
    return profile


@contextlib.contextmanager
def serving(isolation: bool, warm_plugins: list[Any], device_type: str,
            backend_import: str | None) -> Iterator[CrashServer | None]:
    """The run's CrashServer for cheap replacements, or None; the server, if one was started, is
    stopped when the block ends, however it ends."""
    profile = wanted(isolation, warm_plugins, device_type, backend_import)
    plugin = CrashServer(profile, float(settings.current().crash_server_idle)) if profile else None
    try:
        yield plugin
    finally:
        if plugin is not None:
            plugin.stop()
