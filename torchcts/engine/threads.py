"""PyTorch's CPU threads in each worker: the cores divided among the workers (docs/speed.md, "Threads").

Left alone, every xdist worker starts torch with one intra-op (OpenMP) thread per core and as many
inter-op threads, so two workers on two cores run four busy threads: OpenMP's spin-waiting then
burns the cores the other worker needs (a level-2 float32 OpInfo run took 2.7x the CPU seconds of
the same run with one thread per worker). A worker therefore takes `cores // workers` threads (at
least 1), set before any case runs, and OpenMP's passive wait policy (idle team threads sleep
instead of spinning between the many tiny parallel regions of a conformance run: one worker with
two threads took 37 CPU-s instead of 112 on the same selection, and less wall time than with one
thread), unless the user chose (OMP_NUM_THREADS, MKL_NUM_THREADS or OMP_WAIT_POLICY in the
environment: torch and OpenMP honour it, TorchCTS leaves everything as it is). A single process
(`--no-isolation`, `-n 0`) owns every core and keeps torch's default. Each record's `threads`
field says how many intra-op threads its case ran with; run.json's `threads` says where that
count came from. The tolerances cover summation order, so the count never changes a verdict.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import Any

from torchcts import settings

COUNT_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
WAIT_VAR, WAIT_POLICY = "OMP_WAIT_POLICY", "PASSIVE"
USER_VARS = (*COUNT_VARS, WAIT_VAR)
# Set by the controller next to the variables it exported for its workers (`exported`): they are
# TorchCTS's choice, not the user's, and the value is the per-worker count.
MARK_VAR = settings.env_name("threads")


def available_cores() -> int:
    """Cores this process may run on (its affinity mask, e.g. a container's cpuset), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS and Windows lack sched_getaffinity
        return max(1, os.cpu_count() or 1)


def user_setting(env: Mapping[str, str]) -> str | None:
    """`NAME=value` of the thread variable the user set (torch reads it itself), or None."""
    if settings.of(env).threads is not None:
        return None  # the controller exported them for this run (`exported`)
    for name in USER_VARS:
        if env.get(name, "").strip():
            return f"{name}={env[name].strip()}"
    return None


def per_worker(cores: int, workers: int) -> int:
    """Intra-op (and inter-op) threads for each of `workers` processes sharing `cores`."""
    return max(1, cores // max(1, workers))


def worker_threads(workers: int | None, env: Mapping[str, str] | None = None, cores: int | None = None) -> int | None:
    """The count a worker of `workers` sets, or None when it leaves torch as it is (the user chose,
    or one process runs everything)."""
    mark = settings.of(env).threads
    if mark:
        return mark
    env = os.environ if env is None else env
    if user_setting(env) is not None or not workers:
        return None
    return per_worker(available_cores() if cores is None else cores, workers)


def export(threads: int | None, env: MutableMapping[str, str] | None = None) -> None:
    """Before torch is imported: OpenMP and MKL read these once at start-up (so do the processes a
    case starts, such as inductor's compiler). The wait policy has no API: a worker whose torch was
    imported before this keeps OpenMP's default (spinning)."""
    if threads is None:
        return
    env = os.environ if env is None else env
    for name in COUNT_VARS:
        env[name] = str(threads)
    env[WAIT_VAR] = WAIT_POLICY


def apply(threads: int | None) -> None:
    """Set torch's thread pools (whether or not torch was imported before `export`); a no-op for None."""
    if threads is None or "torch" not in sys.modules:
        return
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    try:
        if torch.get_num_interop_threads() != threads:
            torch.set_num_interop_threads(threads)
    except RuntimeError:  # inter-op work already started (a backend's import): its pool stays
        pass


def intra_op_threads() -> int | None:
    """The record's `threads`: how many intra-op threads torch runs with now (None before torch)."""
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else None


def workers_in_args(args: list[str]) -> int | None:
    """The xdist worker count in pytest's arguments (`-n N`, `-nN`, `--numprocesses[=]N`; `auto` and
    `logical` count the cores), 0 without xdist, None when `-n` is absent. The last one wins."""
    found: int | None = None
    for i, arg in enumerate(args):
        value = None
        if arg in ("-n", "--numprocesses") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--numprocesses="):
            value = arg.split("=", 1)[1]
        elif arg.startswith("-n") and len(arg) > 2 and not arg.startswith("--"):
            value = arg[2:]
        elif arg == "no:xdist":
            found = 0
        if value is not None:
            found = available_cores() if value in ("auto", "logical") else _int(value)
    return found


def _int(value: str) -> int | None:
    try:
        return max(0, int(value))
    except ValueError:
        return None


def describe(pytest_args: list[str], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """run.json's `threads`: the per-worker count and why (the controller's view before workers start)."""
    env = os.environ if env is None else env
    user = user_setting(env)
    workers = workers_in_args(pytest_args)
    cores = available_cores()
    if user is not None:
        return {"per_worker": None, "cores": cores, "workers": workers, "source": f"{user} (set by the user; left as is)"}
    if not workers:
        return {"per_worker": None, "cores": cores, "workers": workers or 0,
                "source": "torch's default: one process runs every case"}
    return {"per_worker": per_worker(cores, workers), "cores": cores, "workers": workers,
            "source": f"{cores} cores // {workers} workers", "wait_policy": WAIT_POLICY}


@contextmanager
def exported(pytest_args: list[str], env: MutableMapping[str, str] | None = None) -> Iterator[None]:
    """The controller's environment for one run's workers: their thread variables (with MARK_VAR)
    set before any worker or warm-worker server starts, so OpenMP reads the wait policy when torch
    loads in either (a forked worker cannot change it later, workers/warm.py); restored afterwards."""
    env = os.environ if env is None else env
    workers = workers_in_args(pytest_args)
    count = None if user_setting(env) is not None or not workers else per_worker(available_cores(), workers)
    if count is None:
        yield
        return
    names = (*USER_VARS, MARK_VAR)
    saved = {name: env.get(name) for name in names}
    export(count, env)
    env[MARK_VAR] = str(count)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
