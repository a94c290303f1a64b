"""The script's entry (`python zygote/ launch|serve ...`, see __init__.py): run the launcher, or
start a server (detached) and, in a forked child, the worker it returns."""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .protocol import LaunchRequest

USAGE = "usage: zygote launch SOCKET ARGS... | serve SOCKET PROFILE IDLE_S [run]"
RUN_SCOPED = "run"  # serve's last word: a server of one run (workers/crash_server.py), files removed at exit


def main(argv: list[str]) -> None:
    if len(argv) >= 2 and argv[0] == "launch":
        from .launcher import launch

        launch(argv[1], argv[2:])
    elif len(argv) in (4, 5) and argv[0] == "serve" and argv[4:] in ([], [RUN_SCOPED]):
        if os.fork():  # detach: whoever started us waits for nothing but this exit
            os._exit(0)
        job = serve(argv[1], argv[2], float(argv[3]), run_scoped=argv[4:] == [RUN_SCOPED])
        if job is not None:  # a forked child: the server's loop is behind us
            from . import preload, worker

            worker.run(job, lambda: preload.load_deferred_backends(argv[2]))
    else:
        sys.exit(USAGE)


def serve(sock_path: str, profile: str, idle_s: float, run_scoped: bool = False) -> LaunchRequest | None:
    """Hold the key's lock and serve; None when done (or another server holds the key), or in a
    forked child the launcher's request. A run-scoped server leaves none of its files behind."""
    from . import state

    lock = state.hold_lock(sock_path)
    if lock is None:
        return None  # another server for this key is starting or running
    state.forget_why(sock_path)
    started, server = time.time(), os.getpid()
    state.write_status(sock_path, {"pid": server, "profile": profile, "started": started,
                                   "idle_since": started, "preparing": True, "run_scoped": run_scoped})
    try:
        job = prepare_and_serve(sock_path, profile, idle_s, started)
    finally:
        if run_scoped and os.getpid() == server:  # the server, not a forked worker
            state.remove_files(sock_path)  # the lock file last; the lock itself goes with this process
    if job is not None:
        lock.close()  # the worker holds no server lock
    return job


def prepare_and_serve(sock_path: str, profile: str, idle_s: float, started: float) -> LaunchRequest | None:
    """Import the profile as `python -c` in "/" would, freeze that heap, then run the loop."""
    import gc

    from . import checks, keys, preload, state
    from .server import Server

    sys.argv = ["-c"]  # as a worker's `python -c`: modules may read it at import
    path = keys.fresh_path()
    sys.path[:] = path  # without '': what is imported never depends on a folder
    os.chdir("/")
    start_env = dict(os.environ)
    autoload = preload.defer_autoload(profile)  # a "base" server imports torch without the autoloaded backend
    try:
        hazard = preload.preload(profile)
    except BaseException as exc:  # noqa: BLE001 - any failure: no server; the reason is kept
        hazard = f"importing failed: {type(exc).__name__}: {exc}"
    preload.restore_autoload(autoload)
    if hazard:
        state.note_why(sock_path, hazard)
        return None
    # What the imports set in os.environ (inductor sets TORCHINDUCTOR_CACHE_DIR): as a fresh
    # worker's imports would, from the same key variables
    import_env = {k: v for k, v in os.environ.items() if start_env.get(k) != v}
    base = checks.Baseline.after_imports(profile, start_env, path)
    # Everything imported so far (torch, the OpInfo database, inductor: millions of objects)
    # lives as long as the process: out of the collector's sight, a forked worker's full
    # collections do not walk it (measured: a 0.3-0.4 s pause in the middle of some case) nor
    # touch, and so copy, its pages.
    gc.collect()
    gc.freeze()
    return Server(sock_path, base, idle_s, import_env, started).loop()
