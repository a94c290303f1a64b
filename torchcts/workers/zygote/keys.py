"""What decides what a server's imports loaded (its key), and sys.path as a worker would have it.

Never stale: the socket's name is a hash of the key (the interpreter, this package's files and
the environment variables that decide what an import loads); a different key is another server.
"""

from __future__ import annotations

import json
import os
import sys

FORMAT = 4  # bump when the protocol or what the server imports changes
# Environment variables read at import time by the interpreter, torch, numpy/BLAS/OpenMP runtimes,
# the dynamic loader or PyTorch's testing modules (common_utils reads CI, PYTORCH_TEST_*, ...).
KEY_PREFIXES = ("PYTHON", "TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "GOMP_", "OPENBLAS_", "BLIS_",
                "VECLIB_", "NUMEXPR_", "NUMPY_", "SCIPY_", "CUDA", "NVIDIA_", "HIP_", "ROCM", "HSA_",
                "TRITON_", "LD_", "DYLD_", "LC_", "IS_", "TEST_", "SANDCASTLE", "TMP", "TEMP")
# CXX, CC and PATH decide which compiler inductor's vector-ISA probe (preload.WARMUPS) builds with.
KEY_NAMES = ("CI", "HOME", "LANG", "XDG_CACHE_HOME", "USER", "LOGNAME", "CXX", "CC", "PATH")
NOT_KEY_PREFIXES = ("TORCHCTS_",)  # read by torchcts, which every worker imports after the fork
HERE = os.path.dirname(os.path.abspath(__file__))
# The one module of torchcts the server loads (by its path, protocol.py): the messages' definition
SHARED_CHANNEL = os.path.join(os.path.dirname(os.path.dirname(HERE)), "process", "channel.py")


def key_env(env: dict[str, str], profile: str = "") -> dict[str, str]:
    """The variables of `env` that are part of the key. A profile that imports a backend module
    ("backend:MODULE", preload.py) imports torchcts too, which reads TORCHCTS_* at import (the sim's
    planted faults): those are part of its key."""
    keep_torchcts = profile.startswith("backend:")
    return {k: v for k, v in env.items() if (k.startswith(KEY_PREFIXES) or k in KEY_NAMES)
            and (keep_torchcts or not k.startswith(NOT_KEY_PREFIXES))}


def differing(env: dict[str, str], other: dict[str, str], profile: str = "") -> list[str]:
    """The names of the key variables whose values differ (or are set in one only)."""
    mine, theirs = key_env(env, profile), key_env(other, profile)
    return sorted(name for name in {*mine, *theirs} if mine.get(name) != theirs.get(name))


def package_stamp() -> list[list[object]]:
    """(name, mtime_ns, size) of this package's source files and of the module it loads
    (SHARED_CHANNEL): an edited server is another server."""
    try:
        paths = [os.path.join(HERE, n) for n in sorted(os.listdir(HERE)) if n.endswith(".py")]
    except OSError:
        return []
    stamp: list[list[object]] = []
    for path in [*paths, SHARED_CHANNEL]:
        try:
            st = os.stat(path)
        except OSError:
            continue
        name = os.path.relpath(path, HERE) if path == SHARED_CHANNEL else os.path.basename(path)
        stamp.append([name, st.st_mtime_ns, st.st_size])
    return stamp


def key(env: dict[str, str], profile: str, executable: str = sys.executable) -> str:
    """What decides what the server's imports loaded; a different key is a different server."""
    import hashlib  # here: the launcher, which imports this module, never hashes

    text = json.dumps([FORMAT, executable, sys.version, profile, sorted(key_env(env, profile).items()),
                       package_stamp()])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def fresh_path() -> list[str]:
    """sys.path as `python -c` would have it, without its leading '' (the script's folder here)."""
    return list(sys.path if sys.flags.safe_path else sys.path[1:])
