"""Why a server refuses a launcher: each check compares the launcher's request with what the server
was when it imported (its Baseline). A refused launcher execs a fresh python: never a stale worker."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from . import command, keys
from .preload import fork_hazard
from .protocol import LaunchRequest


@dataclass(frozen=True)
class Baseline:
    """What the server's imports were made with, taken once they are done."""

    profile: str
    key: str
    env: dict[str, str]  # the server's key variables
    path: list[str]  # its sys.path, as `python -c` has it
    stamps: dict[str, tuple[int, int]]  # module file -> (mtime_ns, size)
    names: frozenset[str]  # top-level modules imported

    @classmethod
    def after_imports(cls, profile: str, env: dict[str, str], path: list[str]) -> Baseline:
        """`env` and `path`: the server's before its imports (which may change both)."""
        return cls(profile, keys.key(env, profile), keys.key_env(env, profile), list(path), module_stamps(),
                   frozenset(name for name in sys.modules if "." not in name))


def module_stamps() -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every file an imported module came from."""
    stamps = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path not in stamps:
            try:
                st = os.stat(path)
            except OSError:
                continue
            stamps[path] = (st.st_mtime_ns, st.st_size)
    return stamps


def changed(stamps: dict[str, tuple[int, int]]) -> str | None:
    """The first file whose stamp changed (or that is gone), else None."""
    for path, stamp in stamps.items():
        try:
            st = os.stat(path)
        except OSError:
            return path
        if (st.st_mtime_ns, st.st_size) != stamp:
            return path
    return None


def shadowed(cwd: str, names: frozenset[str]) -> str | None:
    """A module in `cwd` that `python -c` there would import instead of the server's copy."""
    try:
        entries = os.listdir(cwd)
    except OSError:
        return None
    for entry in entries:
        stem = entry.split(".", 1)[0]
        if stem in names and (entry.endswith((".py", ".pyc", ".so", ".pyd"))
                              or os.path.isfile(os.path.join(cwd, entry, "__init__.py"))):
            if not _loaded_from(stem, os.path.join(cwd, entry)):
                return entry
    return None


def _loaded_from(name: str, where: str) -> bool:
    """The preloaded module `name` is that file or package: `python -c` there imports the same one
    (a backend package run from its own checkout, on PYTHONPATH too)."""
    origin = getattr(sys.modules.get(name), "__file__", None)
    if not isinstance(origin, str):
        return False
    origin, where = os.path.realpath(origin), os.path.realpath(where)
    return origin == where or origin.startswith(where + os.sep)


def execnet_command(argv: list[str]) -> bool:
    """`-u -c CODE` (maybe `-B`): the only command line a launcher stands in for."""
    return len(argv) >= 2 and argv[-2] == "-c" and all(a in ("-u", "-B") for a in argv[:-2])


def refusal(request: LaunchRequest, base: Baseline) -> str | None:
    """Why a worker forked for `request` would not be what `python` there would start, or None."""
    if not (execnet_command(request.argv) or command.is_command(request.argv)):
        return "neither an execnet worker's command line nor a command a server runs"
    if keys.key(request.env, base.profile) != base.key:
        names = keys.differing(request.env, base.env, base.profile)
        return f"another environment ({', '.join(names) or 'the key'} differs)"
    if request.path != base.path:
        return f"another sys.path ({_first_difference(request.path, base.path)})"
    where = shadowed(command.first_path_entry(request.argv, request.cwd), base.names)  # sys.path[0]'s folder
    if where:
        folder = "script" if command.script_of(request.argv) else "working"
        return f"{where} in the {folder} folder would shadow a preloaded module"
    return fork_hazard()


def _first_difference(theirs: list[str], ours: list[str]) -> str:
    for i, (a, b) in enumerate(zip(theirs, ours, strict=False)):
        if a != b:
            return f"entry {i}: {a!r} where the server has {b!r}"
    return f"{len(theirs)} entries where the server has {len(ours)}"
