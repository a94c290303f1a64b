"""In the forked child: become the process `python -u -c CODE` started by the launcher would be,
run CODE (execnet's bootstrap line), and leave without the interpreter's teardown; or run a whole
command (command.py)."""

from __future__ import annotations

import builtins
import os
import signal
import sys
import types
from collections.abc import Callable
from typing import Any, NoReturn

from . import command
from .protocol import LaunchRequest


def run(request: LaunchRequest, after_env: Callable[[], None] = lambda: None) -> NoReturn:
    """The worker's whole life after the fork (server.Server.loop returned its request); `after_env`
    runs once the launcher's environment is in place (the backends a deferred autoload left)."""
    namespace = become_worker(request)
    after_env()
    if command.is_command(request.argv):
        command.run(request.argv)
    exec(compile(request.argv[-1], "<string>", "exec"), namespace)  # noqa: S102 - execnet's `-c CODE`
    quick_exit()


def become_worker(request: LaunchRequest) -> dict[str, Any]:
    """The process state of `python -u -c CODE` (or of the command) in the launcher's place;
    returns the namespace to run CODE in (a fresh __main__)."""
    for name in ("SIGCHLD", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as the interpreter sets it
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    os.umask(request.umask)
    first = command.first_path_entry(request.argv, request.cwd) if command.is_command(request.argv) else ""
    sys.path[:] = ([] if sys.flags.safe_path else [first]) + list(request.path)
    sys.argv = ["-c"]
    if "-B" in request.argv:
        sys.dont_write_bytecode = True
    reseed()
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    return main.__dict__


def reseed() -> None:
    """Module state the server set up for itself that each worker must have of its own."""
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None  # found again from this environment
    if "random" in sys.modules:
        sys.modules["random"].seed()  # the server's state is every worker's otherwise
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()
    settings = sys.modules.get("torchcts.settings")  # a "backend:" server imported torchcts
    if settings is not None:
        settings.reload()  # read again from this worker's environment


def quick_exit() -> NoReturn:
    """A worker's normal end without the interpreter's teardown: after xdist's worker has returned,
    wait for threads and run atexit functions as Py_Finalize would, flush, and leave without
    destroying ~3,500 modules (seconds of wall time the controller waits for at the end of a run)."""
    command.finish()
    os._exit(0)
