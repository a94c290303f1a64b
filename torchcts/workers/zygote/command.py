"""Whole commands from a server: `python -m MODULE ARGS` and `python SCRIPT.py ARGS`, run in a
forked child as a fresh interpreter would run them.

Why: the project's tests start several hundred `python -m torchcts ...` commands and repro scripts,
each a fresh interpreter that imports torch (1.5-2 CPU-s) before its first line of ours. A server
of the "base" profile (torch, pytest, xdist; nothing of torchcts, no backend, no PyTorch testing
module, which read PrivateUse1's name) forks one per command (tests/helpers/command_server.py).
Everything after the fork is the command's own: its module or script, its sys.path[0], sys.argv,
standard streams as Python makes them, and its exit status as Python reports it (SystemExit, an
uncaught exception, Ctrl-C's death by SIGINT).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import types
from typing import NoReturn

MODULES = frozenset({"torchcts"})  # what `-m` a server runs: ours, never an arbitrary module


def module_of(argv: list[str]) -> str | None:
    """MODULE of `-m MODULE ARGS`, when it is one a server runs; else None."""
    return argv[1] if len(argv) >= 2 and argv[0] == "-m" and argv[1] in MODULES else None


def script_of(argv: list[str]) -> str | None:
    """SCRIPT of `SCRIPT.py ARGS` (no interpreter option before it); else None."""
    return argv[0] if argv and argv[0].endswith(".py") and not argv[0].startswith("-") else None


def is_command(argv: list[str]) -> bool:
    return module_of(argv) is not None or script_of(argv) is not None


def first_path_entry(argv: list[str], cwd: str) -> str:
    """sys.path[0] of the command, as the interpreter sets it: the script's own folder (symlinks
    resolved) for a script, else the working folder (`-m`; execnet's `-c` has '', which is it)."""
    script = script_of(argv)
    if script is None:
        return cwd
    return os.path.dirname(os.path.realpath(os.path.join(cwd, script)))


def run(argv: list[str]) -> NoReturn:
    """Run the command in this (forked) process (worker.become_worker made its sys.path) and exit
    with the status Python would. Its own process group: what it starts goes with it when its
    launcher is killed (server.Server.drop)."""
    with contextlib.suppress(OSError):  # the server may have made it so already
        os.setpgid(0, 0)
    fresh_stdio()
    status = 0
    try:
        _run(argv)
    except SystemExit as exc:
        status = _exit_status(exc)
    except KeyboardInterrupt as exc:  # Python's own exit on an uncaught Ctrl-C: its traceback, death by SIGINT
        _print_uncaught(exc)
        finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        os._exit(130)
    except BaseException as exc:  # noqa: BLE001 - printed as Python prints it, status 1
        _print_uncaught(exc)
        status = 1
    finish()
    os._exit(status)


def _run(argv: list[str]) -> None:
    import runpy

    module = module_of(argv)
    if module is not None:
        sys.argv = ["-m", *argv[2:]]  # runpy puts the module's file in sys.argv[0], as `-m` does
        runpy._run_module_as_main(module, alter_argv=True)  # type: ignore[attr-defined] # what `-m` runs
        return
    run_script(argv)


def run_script(argv: list[str]) -> None:
    """`python SCRIPT ARGS`: sys.argv as given, __main__.__file__ absolute (Python 3.9+); not runpy's
    run_path, which puts its own path in sys.argv[0]."""
    import builtins
    import importlib.machinery

    path = os.path.abspath(argv[0])
    sys.argv = list(argv)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __builtins__=builtins,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", path))
    sys.modules["__main__"] = main
    with io.open_code(path) as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    exec(code, main.__dict__)  # noqa: S102 - the script the launcher was asked to run


def _print_uncaught(exc: BaseException) -> None:
    own = _commands_own(exc.__traceback__)
    sys.excepthook(type(exc), exc.with_traceback(own), own)


def _commands_own(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback from the command's own first frame, as the fresh interpreter prints it: without
    this module's frames (`-m` shows runpy's in both)."""
    here = os.path.abspath(__file__)
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if os.path.abspath(name) != here:
            break
        tb = tb.tb_next
    return tb


def _exit_status(exc: SystemExit) -> int:
    """As Python's handling of an uncaught SystemExit: None is 0, an int is itself, anything else
    is printed to stderr and is 1."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 1


_SERVERS_STREAMS: list[object] = []  # kept alive: their collection would close fds 0-2


def fresh_stdio() -> None:
    """Standard streams as a fresh `python` makes them on the launcher's descriptors (Python's
    create_stdio): the server's own were made by `python -u` for its log, and this command is
    unbuffered only when its own PYTHONUNBUFFERED says so."""
    buffered = not os.environ.get("PYTHONUNBUFFERED")

    def stream(fd: int, old: io.TextIOWrapper, errors: str, line: bool, raw: bool = False) -> io.TextIOWrapper:
        _SERVERS_STREAMS.append(old)
        binary = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
        if not raw:
            binary = (io.BufferedReader if fd == 0 else io.BufferedWriter)(binary)
        return io.TextIOWrapper(binary, encoding=old.encoding, errors=errors, line_buffering=line,
                                write_through=raw)

    sys.stdin = sys.__stdin__ = stream(0, sys.__stdin__, sys.__stdin__.errors, False)
    sys.stdout = sys.__stdout__ = stream(1, sys.__stdout__, sys.__stdout__.errors, buffered and os.isatty(1),
                                         raw=not buffered)
    sys.stderr = sys.__stderr__ = stream(2, sys.__stderr__, "backslashreplace", buffered, raw=not buffered)


def finish() -> None:
    """What Py_Finalize does that a command can see: threads joined, exit functions run, streams
    flushed (the modules' teardown is skipped: nothing observable, seconds of wall)."""
    import atexit
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if callable(shutdown):
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
