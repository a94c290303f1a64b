"""What a server imports before it forks (by profile), inductor's warm-ups, and what would make a
fork unsafe afterwards."""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Callable

PROFILES = {
    # a run with a backend module: only what a fresh worker imports before the backend anyway
    "base": ("torch", "pytest", "xdist.remote", "execnet"),
    "bare": (),  # the mechanism alone (tests)
    # a CPU run: also the OpInfo database and torch.compile's modules (their import-time state
    # would differ if a backend registered a PrivateUse1 device before them)
    "full": ("torch", "pytest", "xdist.remote", "execnet", "torch.testing",
             "torch.testing._internal.common_methods_invocations",
             "torch._dynamo", "torch._inductor.compile_fx", "torch._inductor.codecache"),
}
# "backend:MODULE" (workers/crash_server.py, for a backend known fork-safe, never a device runtime):
# the base imports, then MODULE, then the full profile's others, in the order a fresh worker
# imports them (the backend before PyTorch's testing modules, which read the PrivateUse1 name).
BACKEND_PREFIX = "backend:"
# "named:DEVICE" (workers/warm.py: NAMED_BACKENDS, a backend whose import is indifferent to what was
# imported before it): the base imports, PrivateUse1 renamed DEVICE, then PyTorch's testing modules
# and the OpInfo database, which read that name at import (~2.6 s of a replacement worker's start);
# the backend itself is imported after the fork, by each worker, as a fresh one would.
NAMED_PREFIX = "named:"
NAMED_IMPORTS = ("torch.testing", "torch.testing._internal.common_methods_invocations")
# Modules that initialise an accelerator's runtime when imported on a build that has one
ACCELERATOR_PROBES = ("torch.testing._internal.common_methods_invocations",)


# Calls after the imports, each filling a cache inductor keeps for the life of a process, so that
# a forked worker's first torch.compile does not pay for it again. Measured on a 2-core machine, of
# a 1.7 s first compile in a forked worker: the dlopen probes of the CPU's vector ISAs (a python
# subprocess each) 0.55 s, the hash of torch's own sources that keys inductor's caches 0.47 s, the
# preprocessing and hashing of the precompiled C++ header (g++ -E, openssl) 0.24 s: the last only a
# real compilation reaches, so the server compiles one tiny function (in-process: one compile
# thread, no worker pool) and then resets dynamo. Pure functions of the build, the compiler
# (CXX/CC/PATH are in the key) and TORCHINDUCTOR_* (TORCH*, in the key).
def _vector_isas() -> None:
    from torch._inductor import cpu_vec_isa

    cpu_vec_isa.valid_vec_isa_list()


def _torch_source_hash() -> None:
    from torch._inductor import codecache

    codecache.torch_key()


def _tiny_compile() -> None:
    import torch
    import torch._dynamo
    from torch._inductor import config

    threads = config.compile_threads
    config.compile_threads = 1
    try:
        torch.compile(lambda x: x * 2 + 1, backend="inductor")(torch.ones(4))
    finally:
        config.compile_threads = threads
        torch._dynamo.reset()


def _assert_close() -> None:
    """The lazy imports of torch.testing.assert_close (seconds), as engine/plugin.py makes before a
    worker's first case."""
    import torch

    torch.testing.assert_close(torch.zeros(1), torch.zeros(1))


WARMUPS: dict[str, tuple[Callable[[], None], ...]] = {
    "full": (_vector_isas, _torch_source_hash, _tiny_compile),
    # no compilation: the backend's dynamo hooks are installed, and a fresh worker compiled nothing
    BACKEND_PREFIX: (_assert_close, _vector_isas, _torch_source_hash)}


def backend_of(profile: str) -> str | None:
    """The backend module a "backend:MODULE" profile imports, else None."""
    return profile[len(BACKEND_PREFIX):] if profile.startswith(BACKEND_PREFIX) else None


def device_of(profile: str) -> str | None:
    """The PrivateUse1 name a "named:DEVICE" profile gives before PyTorch's testing modules, else None."""
    return profile[len(NAMED_PREFIX):] if profile.startswith(NAMED_PREFIX) else None


def imports(profile: str) -> tuple[str, ...]:
    """The modules a profile imports, in order (KeyError: no such profile)."""
    if device_of(profile):
        return (*PROFILES["base"], *NAMED_IMPORTS)
    backend = backend_of(profile)
    if backend is None:
        return PROFILES[profile]
    base = PROFILES["base"]
    return (*base, backend, *(name for name in PROFILES["full"] if name not in base))


def warmups(profile: str) -> tuple[Callable[[], None], ...]:
    return WARMUPS.get(BACKEND_PREFIX if backend_of(profile) else profile, ())


# PyTorch's autoloading of out-of-tree backends (the `torch.backends` entry points, run inside
# `import torch` unless TORCH_DEVICE_BACKEND_AUTOLOAD=0). A server for a backend not known to survive
# a fork ("base", "named:DEVICE") imports torch with it off, so the backend's runtime never starts
# before the fork; each forked worker then loads the entry points itself, as its own `import torch`
# would have (`load_deferred_backends`), when its environment has autoloading on (issue 40 item 2: OpenReg).
AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"
DEFERS_AUTOLOAD = frozenset({"base"})


def defers_autoload(profile: str) -> bool:
    return profile in DEFERS_AUTOLOAD or device_of(profile) is not None


def defer_autoload(profile: str) -> str | None:
    """Switch autoloading off for the server's own imports (a "base" profile); the value to restore."""
    previous = os.environ.get(AUTOLOAD)
    if defers_autoload(profile):
        os.environ[AUTOLOAD] = "0"
    return previous


def restore_autoload(previous: str | None) -> None:
    """The server's environment as it was (the workers' environments come from their launchers)."""
    if previous is None:
        os.environ.pop(AUTOLOAD, None)
    else:
        os.environ[AUTOLOAD] = previous


def load_deferred_backends(profile: str) -> None:
    """In a forked worker of a server that imported torch without autoloading: load the backends the
    worker's own `import torch` would have loaded (its environment, set from the launcher's)."""
    torch = sys.modules.get("torch")
    if not defers_autoload(profile) or torch is None or os.environ.get(AUTOLOAD, "1") != "1":
        return
    load = getattr(torch, "_import_device_backends", None)  # PyTorch 2.5+: what `import torch` calls
    if callable(load):
        load()


def preload(profile: str) -> str | None:
    """Import the profile's modules and make its warm-up calls; the reason forking would be unsafe
    afterwards, or None."""
    for name in imports(profile):
        if name in ACCELERATOR_PROBES and _accelerator_build():
            continue  # its import would initialise CUDA/ROCm, which a forked child cannot use
        try:
            importlib.import_module(name)
        except ImportError:
            if name == backend_of(profile):
                raise  # the backend is what the profile is for: no server (the reason is kept)
            continue  # a build without it: a worker that needs it finds out as a fresh one would
        problem = name_privateuse1(device_of(profile)) if name == "torch" else None
        problem = problem or fork_hazard()
        if problem:
            return f"importing {name} {problem}"
    for warmup in warmups(profile):
        try:
            warmup()
        except Exception:  # noqa: BLE001 - another PyTorch, no compiler: a worker pays as a fresh one would
            continue
        problem = fork_hazard()
        if problem:
            return f"{warmup.__name__} {problem}"
    return None


def name_privateuse1(device: str | None) -> str | None:
    """Give PrivateUse1 the backend's name, as its own import will again after the fork (PyTorch
    allows the same name twice), so that PyTorch's testing modules read it; why not, or None."""
    if not device:
        return None
    import torch

    current = torch._C._get_privateuse1_backend_name()
    if current == device:
        return None
    if current != "privateuseone":
        return f"found PrivateUse1 already named {current!r}, not {device!r}"
    try:
        torch.utils.rename_privateuse1_backend(device)
    except (RuntimeError, ValueError) as exc:  # a name PyTorch refuses: the server does not serve
        return f"could not name PrivateUse1 {device!r} ({exc})"
    return None


def _accelerator_build() -> bool:
    torch = sys.modules.get("torch")
    version = getattr(torch, "version", None)
    return bool(getattr(version, "cuda", None) or getattr(version, "hip", None) or sys.platform == "darwin")


def fork_hazard() -> str | None:
    """A Python thread, or an initialised accelerator runtime: what a fork would break. (Native
    OpenBLAS threads are not: OpenBLAS stops its pool around fork() with pthread_atfork.)"""
    if threading.active_count() > 1:
        return "started a Python thread"
    return accelerator_hazard()


def accelerator_hazard() -> str | None:
    """An initialised accelerator runtime, which a forked child cannot use; None when there is none."""
    torch = sys.modules.get("torch")
    for name in ("cuda", "xpu", "mps", "mtia"):
        initialised = getattr(getattr(torch, name, None), "is_initialized", None)
        if callable(initialised) and initialised():
            return f"initialised the {name} runtime"
    return None
