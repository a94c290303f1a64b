"""Every environment variable TorchCTS reads, parsed in one place (docs/settings.md has the table).

`Settings` is a frozen dataclass: one field per variable, each with its variable name, default and
one-line meaning in the field's metadata, and one parser per kind of value. A process reads the
environment once (`current()`, cached) so every part of a run sees one configuration; code that
must see a variable set later in the same process calls `reload()` (the project's tests do after
each `monkeypatch.setenv`), and code that describes another process's environment (the one a
worker will get) parses that mapping with `of(env)`.

Like hypothesis' settings profiles with its CI profile, CI changes defaults in one place: `ci`
(the `CI` variable, set by every CI service) and `interactive()`, the one "is a person at a
terminal" decision that warm workers, `--device`, `init` and `install` consult.

A bad value is a `UsageError` naming the variable and the fix (exit 2), never a traceback: the CLI
reads the settings before anything else.

The default folders are computed here too, and only here (`RESULTS_DIR`, `REPRO_DIR`,
`cache_folder`, `warm_folder`, `venv_folder`): a variable above moves one, and the XDG and temporary
folders they fall back on are read here with them.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from torchcts.errors import UsageError

ON_WORDS = ("1", "true", "yes", "on")
OFF_WORDS = ("0", "false", "no", "off")
WORKER_WORDS = ("auto", "logical")  # pytest-xdist's own words for "one per core"
SIM_DECOMP_MODES = ("table", "composite")  # sim/decomp.py: MODES (tests/foundation/test_settings.py keeps them equal)

Parser = Callable[[str, str], Any]


def _present(name: str, raw: str) -> bool:
    return True  # any non-empty value: CI services set "true", "1", "yes"...


def _switch(name: str, raw: str) -> bool:
    word = raw.lower()
    if word in ON_WORDS:
        return True
    if word in OFF_WORDS:
        return False
    raise UsageError(f"{name}={raw!r} is not a switch: set it to 1 or 0, or unset it")


# The largest count a variable takes: far past any machine (seconds: 11 days; threads, shards), far
# below what the C calls it reaches overflow (an OverflowError there ended a run with exit 3).
MAX_COUNT = 1_000_000
MAX_WORKERS = 4096


def _positive(name: str, raw: str) -> int:
    value = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 12 else 0
    if not 1 <= value <= MAX_COUNT:
        raise UsageError(f"{name}={raw[:40]!r} is not a whole number from 1 to {MAX_COUNT:,}: set it to e.g. 2, "
                         "or unset it")
    return value


def _workers(name: str, raw: str) -> int | str:
    if raw.lower() in WORKER_WORDS:
        return raw.lower()
    if raw.isascii() and raw.isdigit() and len(raw) <= 12 and int(raw) <= MAX_WORKERS:
        return int(raw)
    raise UsageError(
        f"{name}={raw[:40]!r} is not a worker count: set it to a whole number up to {MAX_WORKERS}, auto or "
        "logical, or unset it"
    )


def _path(name: str, raw: str) -> Path:
    return Path(raw)


def _text(name: str, raw: str) -> str:
    return raw


def _names(name: str, raw: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in raw.split(",") if n.strip())


def _suites(name: str, raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for entry in filter(None, (e.strip() for e in raw.split(","))):
        suite, _, module = (part.strip() for part in entry.partition("="))
        if not suite or not module:
            raise UsageError(
                f"{name}: '{entry}' is not name=module: write e.g. {name}=planted=helpers.planted"
            )
        out[suite] = module
    return out


def _sim_decomp(name: str, raw: str) -> str:
    if raw not in SIM_DECOMP_MODES:
        raise UsageError(
            f"{name}={raw!r} is not a decomposition mode: use one of {', '.join(SIM_DECOMP_MODES)}"
        )
    return raw


def _var(
    env: str, default: Any, meaning: str, parse: Parser, *, factory: Callable[[], Any] | None = None
) -> Any:
    meta = {"env": env, "meaning": meaning, "parse": parse}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    """The parsed environment. An unset or blank variable gives the field's default."""

    ci: bool = _var(
        "CI",
        False,
        "set (to anything): a CI job, so no warm workers, no prompts and --device required",
        _present,
    )
    warm: bool | None = _var(
        "TORCHCTS_WARM",
        None,
        "1/0: warm workers on/off for `run` (--warm/--no-warm win); unset: on in a terminal outside CI",
        _switch,
    )
    warm_dir: Path | None = _var(
        "TORCHCTS_WARM_DIR",
        None,
        "the warm servers' private socket folder (default "
        "$XDG_RUNTIME_DIR/torchcts-warm, else <tmp>/torchcts-warm-<uid>)",
        _path,
    )
    crash_server: bool = _var(
        "TORCHCTS_CRASH_SERVER",
        True,
        "0: a run without warm workers replaces a crashed worker with a fresh python, "
        "not a fork of a run-scoped server (workers/crash_server.py)",
        _switch,
    )
    case_processes: bool = _var(
        "TORCHCTS_CASE_PROCESSES",
        True,
        "0: after a run's first crash a worker keeps running cases itself (each crash then costs a "
        "replacement worker), not in forked children (workers/case_process.py)",
        _switch,
    )
    crash_server_idle: int = _var(
        "TORCHCTS_CRASH_SERVER_IDLE",
        120,
        "seconds a run-scoped crash server waits without workers before it exits (if its run was killed)",
        _positive,
    )
    workers: int | str | None = _var(
        "TORCHCTS_WORKERS",
        None,
        "`run`'s worker processes: N, auto or logical "
        "(default one per core, one per 64 cases at most; `-- -n N` wins)",
        _workers,
    )
    threads: int | None = _var(
        "TORCHCTS_THREADS",
        None,
        "set by `run` for its workers, not by users: each worker's torch threads (engine/threads.py)",
        _positive,
    )
    cache_dir: Path | None = _var(
        "TORCHCTS_CACHE_DIR",
        None,
        "the case-list cache's folder (default $XDG_CACHE_HOME/torchcts, else ~/.cache/torchcts)",
        _path,
    )
    no_cache: bool = _var(
        "TORCHCTS_NO_CACHE", False, "1: build case lists and selections without the on-disk cache", _switch
    )
    extra_suites: dict[str, str] = _var(
        "TORCHCTS_EXTRA_SUITES",
        None,
        "name=module[,name=module]: suites added without editing the registry (the project's tests)",
        _suites,
        factory=dict,
    )
    observe_dispatch: bool = _var(
        "TORCHCTS_OBSERVE_DISPATCH",
        True,
        "0: run cases without the dispatch observer (records then have no `dispatched`)",
        _switch,
    )
    compile_backend: str | None = _var(
        "TORCHCTS_COMPILE_BACKEND",
        None,
        "torch.compile backend of the compiler suites (default inductor on cpu/cuda/xpu, else aot_eager)",
        _text,
    )
    shard_count: int | None = _var(
        "TORCHCTS_SHARD_COUNT",
        None,
        "`--shard auto` on a Kubernetes Indexed Job: the number of shards (--shard-count wins)",
        _positive,
    )
    sim_fault: tuple[str, ...] = _var(
        "TORCHCTS_SIM_FAULT",
        (),
        "name[,name]: faults planted in the sim device when it is imported (`torchcts selftest` sets it)",
        _names,
    )
    sim_decomp: str = _var(
        "TORCHCTS_SIM_DECOMP",
        "table",
        "torchcts.sim.decomp's decompositions: table or composite",
        _sim_decomp,
    )
    venv_root: Path | None = _var(
        "TORCHCTS_VENV_ROOT",
        None,
        "scripts/version-matrix's folder of torch-VERSION venvs (default <tmp>/torchcts-venvs)",
        _path,
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Parse `env`; UsageError (one line: the variable and the fix) on a bad value."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            name = f.metadata["env"]
            raw = env.get(name, "")
            if raw.strip():
                values[f.name] = f.metadata["parse"](
                    name, raw if f.metadata["parse"] is _path else raw.strip()
                )
        return cls(**values)


def env_name(field_name: str) -> str:
    """The environment variable behind a field (for messages and for exporting it to a child)."""
    return next(f.metadata["env"] for f in fields(Settings) if f.name == field_name)


_current: Settings | None = None


def current() -> Settings:
    """This process's settings, read from os.environ the first time and then kept."""
    global _current
    if _current is None:
        _current = Settings.from_env(os.environ)
    return _current


def reload() -> None:
    """Forget the settings read so far: the next `current()` reads os.environ again. For code that
    must see a variable set after the first read (and where a bad value then raises: there)."""
    global _current
    _current = None


def of(env: Mapping[str, str] | None) -> Settings:
    """The settings of `env`: this process's (read once) for None or os.environ, else that mapping
    parsed (e.g. the environment a worker will be started with)."""
    return current() if env is None or env is os.environ else Settings.from_env(env)


def interactive() -> bool:
    """A person at a terminal: not CI and stdin is a terminal. Off, TorchCTS never prompts or
    guesses (--device is required, warm workers are off unless asked for)."""
    if current().ci:
        return False
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):  # no stdin, or a closed one
        return False


# --- default folders: computed here only; callers ask (a flag, where there is one, wins) ---

RESULTS_DIR = "results"  # `--results-dir`: run folders go under the working folder's results/
REPRO_DIR = "repro"  # `repro` without a run (or --output): repro/<case>/ under the working folder


def cache_folder() -> Path:
    """The case-list cache's folder: TORCHCTS_CACHE_DIR, else $XDG_CACHE_HOME/torchcts, else ~/.cache/torchcts."""
    given = current().cache_dir
    if given is not None:
        return given
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchcts"


def warm_folder(env: Mapping[str, str] | None = None) -> Path:
    """The warm servers' socket folder for `env` (None: this process's), not created here:
    TORCHCTS_WARM_DIR, else $XDG_RUNTIME_DIR/torchcts-warm where that folder exists, else
    <tmp>/torchcts-warm-<uid> (per user, since a socket folder must be private)."""
    given = of(env).warm_dir
    if given is not None:
        return given
    runtime = (os.environ if env is None else env).get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "torchcts-warm"
    return Path(tempfile.gettempdir()) / f"torchcts-warm-{os.getuid()}"


def torch_extensions_folder() -> Path:
    """Where compat.py builds its PrivateUse1 guard extension: PyTorch's TORCH_EXTENSIONS_DIR, else
    ~/.cache/torch_extensions (so every checkout with the same source and torch shares one build)."""
    return Path(os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "torch_extensions"))


def venv_folder() -> Path:
    """scripts/version-matrix's venvs: TORCHCTS_VENV_ROOT, else <tmp>/torchcts-venvs (--venv-root wins)."""
    return current().venv_root or Path(tempfile.gettempdir()) / "torchcts-venvs"
