"""The warm worker: a fork server ("zygote") and the launcher xdist runs instead of `python`.

Why: a fresh xdist worker pays `import torch` (~2 s of CPU), PyTorch's OpInfo database (~4 s) and
dynamo/inductor's imports (~1 s) before its first case. The server imports them once and forks a
worker per xdist gateway. This package is stdlib-only and runs as a script (its folder, through
`__main__.py`): it never imports torchcts nor a backend module (each worker imports those after
the fork, as before).

    python zygote/ serve SOCKET PROFILE IDLE_S [run]   the server (workers/warm.py starts it
                    detached; `run`: one run's server, workers/crash_server.py, files removed at exit)
    python zygote/ launch SOCKET -u -c CODE      what execnet runs instead of `python -u -c CODE`
    python zygote/ launch SOCKET -m torchcts ARGS | SCRIPT.py ARGS
                    a whole command (command.py; the project's tests start theirs so)

Modules, each with one job:
    keys.py      what a server's imports depend on (its key), sys.path as `python -c` has it
    protocol.py  the typed messages and their channel (multiprocessing.connection, an authkey)
    launcher.py  the launcher: hand over stdio, wait, exit with the worker's exact status
    preload.py   the profiles' imports, inductor's warm-ups, what would make a fork unsafe
    checks.py    why a server refuses a launcher (environment, sys.path, changed files, shadowing)
    state.py     the server's files: lock (with its pid), authkey, status (refusals), `.why`
    server.py    the one-event loop: connection, message, child exit, tick, stop
    worker.py    in the forked child: become `python -u -c CODE`, run it, leave without teardown
    command.py   in the forked child: run `-m torchcts ARGS` or `SCRIPT.py ARGS` as a fresh python would
    cli.py       the script's entry: `launch` or `serve`

Anything unexpected (no server, a key or sys.path mismatch, a server that dies) makes the
launcher exec a fresh `python` instead: never a hang, never a stale worker.

Profiles (preload.py): "full" (a CPU run), "base" (a backend run), "bare" (tests), and
"backend:MODULE", which imports a backend workers/crash_server.py knows to be fork-safe (the sim)
before PyTorch's testing modules: that server imports torchcts too (through the backend), so its
key also holds TORCHCTS_* and a forked worker reads torchcts's settings again (worker.py).
"""
