"""The warm worker: a fork server ("zygote") and the launcher xdist runs instead of `python`.

Why: a fresh xdist worker pays `import torch` (~2 s of CPU), PyTorch's OpInfo database (~4 s) and
dynamo/inductor's imports (~1 s) before its first case. The server imports them once and forks a
worker per xdist gateway. This file is stdlib-only and runs as a script: it never imports
torchcts nor a backend module (those are imported by each worker after the fork, as before).

    python zygote.py serve SOCKET PROFILE IDLE_S   the server (engine/warm.py starts it detached)
    python zygote.py launch SOCKET -u -c CODE      what execnet runs instead of `python -u -c CODE`

The launcher sends its stdin/stdout/stderr (SCM_RIGHTS), argv, cwd, environment and sys.path over
the server's unix socket; the server checks them against its own (the key, below), forks, and the
child takes those descriptors and runs execnet's bootstrap line as `python -c` would. The launcher
waits and exits with the child's exact status, or dies by the same signal, so crash isolation
(engine/isolation.py) sees what it sees with a fresh worker. Anything unexpected (no server, a key
or sys.path mismatch, a server that dies) makes the launcher exec a fresh `python` instead: never a
hang, never a stale worker.

Never stale: the socket's name is a hash of the key (`key()`: the interpreter, this file's
version and the environment variables that decide what an import loads); the server also refuses
a launcher whose sys.path differs, and before every fork checks that no file of a module it
imported changed (mtime, size): then it refuses, stops listening and exits once its workers end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import time
from typing import Any

FORMAT = 2  # bump when the protocol or what the server imports changes
# Environment variables read at import time by the interpreter, torch, numpy/BLAS/OpenMP runtimes,
# the dynamic loader or PyTorch's testing modules (common_utils reads CI, PYTORCH_TEST_*, ...).
KEY_PREFIXES = ("PYTHON", "TORCH", "PYTORCH", "OMP_", "MKL_", "KMP_", "GOMP_", "OPENBLAS_", "BLIS_",
                "VECLIB_", "NUMEXPR_", "NUMPY_", "SCIPY_", "CUDA", "NVIDIA_", "HIP_", "ROCM", "HSA_",
                "TRITON_", "LD_", "DYLD_", "LC_", "IS_", "TEST_", "SANDCASTLE", "TMP", "TEMP")
# CXX, CC and PATH decide which compiler inductor's vector-ISA probe (WARMUPS) builds with.
KEY_NAMES = ("CI", "HOME", "LANG", "XDG_CACHE_HOME", "USER", "LOGNAME", "CXX", "CC", "PATH")
NOT_KEY_PREFIXES = ("TORCHCTS_",)  # read by torchcts, which every worker imports after the fork
PROFILES = {
    # a run with a backend module: only what a fresh worker imports before the backend anyway
    "base": ("torch", "pytest", "xdist.remote", "execnet"),
    # a CPU run: also the OpInfo database and torch.compile's modules (their import-time state
    # would differ if a backend registered a PrivateUse1 device before them)
    "bare": (),  # the mechanism alone (tests)
    "full": ("torch", "pytest", "xdist.remote", "execnet", "torch.testing",
             "torch.testing._internal.common_methods_invocations",
             "torch._dynamo", "torch._inductor.compile_fx", "torch._inductor.codecache"),
}
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


WARMUPS = {"full": (_vector_isas, _torch_source_hash, _tiny_compile)}
# Modules that initialise an accelerator's runtime when imported on a build that has one
ACCELERATOR_PROBES = ("torch.testing._internal.common_methods_invocations",)


def key_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items()
            if (k.startswith(KEY_PREFIXES) or k in KEY_NAMES) and not k.startswith(NOT_KEY_PREFIXES)}


def key(env: dict[str, str], profile: str, executable: str = sys.executable) -> str:
    """What decides what the server's imports loaded; a different key is a different server."""
    import hashlib

    try:
        me = os.stat(__file__)
        stamp = [me.st_mtime_ns, me.st_size]
    except OSError:
        stamp = []
    text = json.dumps([FORMAT, executable, sys.version, profile, sorted(key_env(env).items()), stamp])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def fresh_path() -> list[str]:
    """sys.path as `python -c` would have it, without its leading '' (this script's folder here)."""
    return list(sys.path if sys.flags.safe_path else sys.path[1:])


# --- framing: a 4-byte length, then JSON -------------------------------------------------------

def send_msg(sock: socket.socket, obj: Any, fds: list[int] | None = None) -> None:
    data = json.dumps(obj).encode()
    data = struct.pack("!I", len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    sock.sendall(data)


def recv_msg(sock: socket.socket, maxfds: int = 0) -> tuple[Any, list[int]]:
    """One message (and up to `maxfds` descriptors, which come with its first byte); reads exactly
    its bytes, so a message sent right after it stays in the socket. EOFError: the peer closed."""
    fds: list[int] = []
    try:
        if maxfds:
            head, fds, _flags, _addr = socket.recv_fds(sock, 4, maxfds)
        else:
            head = sock.recv(4)
        head = _exactly(sock, head, 4)
        return json.loads(_exactly(sock, b"", struct.unpack("!I", head)[0])), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _exactly(sock: socket.socket, got: bytes, size: int) -> bytes:
    while len(got) < size:
        more = sock.recv(size - len(got))
        if not more:
            raise EOFError
        got += more
    return got


# --- the launcher ------------------------------------------------------------------------------

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def launch(sock_path: str, argv: list[str]) -> None:
    """Become the worker xdist asked for: a forked one if the server takes us, else a fresh python."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)
        sock.connect(sock_path)
        send_msg(sock, {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "path": fresh_path(),
                        "umask": _umask()}, [0, 1, 2])
        reply, _ = recv_msg(sock)
    except (OSError, EOFError, ValueError):
        reply = {"ok": False}
    if not reply.get("ok"):
        os.execv(sys.executable, [sys.executable, *argv])  # a fresh worker, exactly as without us
    pid = int(reply["pid"])
    for name in FORWARDED:  # what the terminal or xdist sends this process reaches the worker
        signal.signal(getattr(signal, name), lambda signum, frame: _kill(pid, signum))
    sock.settimeout(None)
    try:
        status = int(recv_msg(sock)[0]["status"])
    except (OSError, EOFError, ValueError, KeyError):  # the server died: so must the worker
        _kill(pid, signal.SIGKILL)
        status = signal.SIGKILL  # a raw wait status: killed by SIGKILL
    exit_like(status)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def exit_like(status: int) -> None:
    """Exit with a raw wait status: the same exit code, or death by the same signal (no core file)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ImportError, ValueError, OSError):
            pass
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those two cannot be caught, nor reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


# --- the server --------------------------------------------------------------------------------

class Forked(Exception):
    """Raised in the child to leave the server's loop; carries what the worker needs."""

    def __init__(self, request: dict[str, Any]) -> None:
        super().__init__("forked")
        self.request = request


def preload(profile: str) -> str | None:
    """Import the profile's modules and make its warm-up calls; the reason forking would be unsafe
    afterwards, or None."""
    import importlib

    for name in PROFILES[profile]:
        if name in ACCELERATOR_PROBES and _accelerator_build():
            continue  # its import would initialise CUDA/ROCm, which a forked child cannot use
        try:
            importlib.import_module(name)
        except ImportError:
            continue  # a build without it: a worker that needs it finds out as a fresh one would
        problem = fork_hazard()
        if problem:
            return f"importing {name} {problem}"
    for warmup in WARMUPS.get(profile, ()):
        try:
            warmup()
        except Exception:  # noqa: BLE001 - another PyTorch, no compiler: a worker pays as a fresh one would
            continue
        problem = fork_hazard()
        if problem:
            return f"{warmup.__name__} {problem}"
    return None


def _accelerator_build() -> bool:
    torch = sys.modules.get("torch")
    version = getattr(torch, "version", None)
    return bool(getattr(version, "cuda", None) or getattr(version, "hip", None) or sys.platform == "darwin")


def fork_hazard() -> str | None:
    """A Python thread, or an initialised accelerator runtime: what a fork would break. (Native
    OpenBLAS threads are not: OpenBLAS stops its pool around fork() with pthread_atfork.)"""
    import threading

    if threading.active_count() > 1:
        return "started a Python thread"
    torch = sys.modules.get("torch")
    for name in ("cuda", "xpu", "mps", "mtia"):
        initialised = getattr(getattr(torch, name, None), "is_initialized", None)
        if callable(initialised) and initialised():
            return f"initialised the {name} runtime"
    return None


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
    for path, stamp in stamps.items():
        try:
            st = os.stat(path)
        except OSError:
            return path
        if (st.st_mtime_ns, st.st_size) != stamp:
            return path
    return None


def shadowed(cwd: str, names: set[str]) -> str | None:
    """A module in `cwd` that `python -c` there would import instead of the server's copy."""
    try:
        entries = os.listdir(cwd)
    except OSError:
        return None
    for entry in entries:
        stem = entry.split(".", 1)[0]
        if stem in names and (entry.endswith((".py", ".pyc", ".so", ".pyd"))
                              or os.path.isfile(os.path.join(cwd, entry, "__init__.py"))):
            return entry
    return None


class Server:
    def __init__(self, sock_path: str, profile: str, idle_s: float) -> None:
        self.sock_path = sock_path
        self.profile = profile
        self.idle_s = idle_s
        self.key = key(dict(os.environ), profile)
        self.path = fresh_path()
        self.children: dict[int, socket.socket | None] = {}  # worker pid -> its launcher
        self.stopping = False
        self.stop_asked = False
        self.listener: socket.socket | None = None
        self.conns: set[socket.socket] = set()

    def note(self, text: str) -> None:
        try:
            with open(self.sock_path + ".why", "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError:
            pass

    def run(self) -> None:
        import selectors

        sys.argv = ["-c"]  # as a worker's `python -c`: modules may read it at import
        sys.path[:] = self.path  # without '': what is imported never depends on a folder
        os.chdir("/")
        start_env = dict(os.environ)
        try:
            hazard = preload(self.profile)
        except BaseException as exc:  # noqa: BLE001 - any failure: no server; the reason is kept
            self.note(f"importing failed: {type(exc).__name__}: {exc}")
            return
        if hazard:
            self.note(hazard)
            return
        # What the imports set in os.environ (inductor sets TORCHINDUCTOR_CACHE_DIR): as a fresh
        # worker's imports would, from the same key variables
        self.import_env = {k: v for k, v in os.environ.items() if start_env.get(k) != v}
        self.stamps = module_stamps()
        self.names = {name for name in sys.modules if "." not in name}
        # Everything imported so far (torch, the OpInfo database, inductor: millions of objects)
        # lives as long as the process: out of the collector's sight, a forked worker's full
        # collections do not walk it (measured: a 0.3-0.4 s pause in the middle of some case) nor
        # touch, and so copy, its pages.
        import gc

        gc.collect()
        gc.freeze()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            if os.path.exists(self.sock_path):  # we hold the lock: whoever bound it is gone
                os.unlink(self.sock_path)
            listener.bind(self.sock_path)
        finally:
            os.umask(old)
        listener.listen(16)
        self.listener = listener
        self.bound_ino = os.stat(self.sock_path).st_ino
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):  # `torchcts warm --stop`
            signal.signal(sig, lambda *_: setattr(self, "stop_asked", True))
        sel = selectors.DefaultSelector()
        sel.register(listener, selectors.EVENT_READ)
        sel.register(wake_r, selectors.EVENT_READ)
        self.wake = (wake_r, wake_w)
        self.sel = sel
        last = time.monotonic()
        checked = last
        while not (self.stopping and not self.children):
            for item, _ in sel.select(timeout=5.0):
                if item.fileobj is self.listener:
                    self.accept()
                elif item.fileobj == wake_r:
                    while _read(wake_r):
                        pass
                else:
                    self.serve(item.fileobj)  # type: ignore[arg-type]
            self.reap()
            if self.stop_asked:
                self.stop()
            now = time.monotonic()
            if self.children or self.conns:
                last = now
            elif now - last > self.idle_s:
                self.stop()
            if now - checked > 10 and not self.stopping:
                checked = now
                if changed(self.stamps) or not self.still_ours():
                    self.stop()
        self.stop()

    def still_ours(self) -> bool:
        try:
            return os.stat(self.sock_path).st_ino == self.bound_ino
        except OSError:
            return False

    def stop(self) -> None:
        """Stop listening; the loop ends when the last worker has exited."""
        if self.listener is not None:
            self.sel.unregister(self.listener)
            if self.still_ours():
                os.unlink(self.sock_path)
            self.listener.close()
            self.listener = None
        self.stopping = True

    def accept(self) -> None:
        import selectors

        if self.listener is None:
            return
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", creds)[1] != os.getuid():
            conn.close()
            return
        conn.settimeout(10)
        self.conns.add(conn)
        self.sel.register(conn, selectors.EVENT_READ)

    def drop(self, conn: socket.socket) -> None:
        if conn not in self.conns:
            return
        self.sel.unregister(conn)
        self.conns.discard(conn)
        for pid, owner in list(self.children.items()):
            if owner is conn:  # its launcher is gone (killed): so must its worker be
                self.children[pid] = None
                _kill(pid, signal.SIGKILL)
        conn.close()

    def reap(self) -> None:
        """Hand each exited worker's raw wait status to its launcher."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is not None:
                try:
                    send_msg(conn, {"status": status})
                except OSError:
                    pass
                self.drop(conn)

    def serve(self, conn: socket.socket) -> None:
        if conn in self.children.values():  # a launcher only speaks once; anything more is its end
            self.drop(conn)
            return
        try:
            request, fds = recv_msg(conn, 3)
        except (OSError, EOFError, ValueError):
            self.drop(conn)
            return
        try:
            refusal = self.refusal(request, fds)
            if refusal:
                send_msg(conn, {"ok": False, "why": refusal})
                self.drop(conn)
                return
            pid = self.fork(request, fds)
        finally:
            for fd in fds:
                os.close(fd)
        self.children[pid] = conn
        print(f"forked worker {pid}", file=sys.stderr)  # the server's log
        try:
            send_msg(conn, {"ok": True, "pid": pid})
        except OSError:
            self.drop(conn)

    def refusal(self, request: dict[str, Any], fds: list[int]) -> str | None:
        argv = request.get("argv") or []
        if len(fds) != 3 or len(argv) < 2 or argv[-2] != "-c" or any(a not in ("-u", "-B") for a in argv[:-2]):
            return "not an execnet worker's command line"
        if self.stopping:
            return "stopping"
        if key(request.get("env") or {}, self.profile) != self.key or request.get("path") != self.path:
            return "another environment"
        if changed(self.stamps) or not self.still_ours():
            self.stop()
            return "files changed since the server started"
        where = shadowed(str(request.get("cwd")), self.names)
        if where:
            return f"{where} in the working folder would shadow a preloaded module"
        return fork_hazard()

    def fork(self, request: dict[str, Any], fds: list[int]) -> int:
        import warnings

        with warnings.catch_warnings():  # Python 3.12+ warns about the (fork-safe) OpenBLAS threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid:
            return pid
        signal.set_wakeup_fd(-1)
        for fd in self.wake:
            os.close(fd)
        self.sel.close()
        for conn in [*self.conns]:
            conn.close()
        if self.listener is not None:
            self.listener.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        raise Forked({**request, "env": {**request["env"], **self.import_env}})


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 512)
    except (BlockingIOError, InterruptedError):
        return b""


def become_worker(request: dict[str, Any]) -> dict[str, Any]:
    """In the forked child: the process state of `python -u -c CODE` started by the launcher;
    returns the namespace to run CODE in (a fresh __main__)."""
    import types

    for name in ("SIGCHLD", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as the interpreter sets it
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(int(request["umask"]))
    sys.path[:] = ([] if sys.flags.safe_path else [""]) + list(request["path"])
    sys.argv = ["-c"]
    if "-B" in request["argv"]:
        sys.dont_write_bytecode = True
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None  # found again from this environment
    if "random" in sys.modules:
        sys.modules["random"].seed()  # the server's state is every worker's otherwise
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    return main.__dict__


def quick_exit() -> None:
    """A worker's normal end without the interpreter's teardown: after xdist's worker has returned,
    wait for threads and run atexit functions as Py_Finalize would, flush, and leave without
    destroying ~3,500 modules (seconds of wall time the controller waits for at the end of a run)."""
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
    os._exit(0)


def serve_main(sock_path: str, profile: str, idle_s: float) -> dict[str, Any] | None:
    """Run the server; in a forked child, return its worker's namespace and request instead."""
    import fcntl

    lock = open(sock_path + ".lock", "a")  # noqa: SIM115 - held for the server's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return None  # another server for this key is starting or running
    try:
        os.unlink(sock_path + ".why")
    except OSError:
        pass
    try:
        Server(sock_path, profile, idle_s).run()
    except Forked as forked:
        lock.close()
        return {"request": forked.request}
    return None


def main(argv: list[str]) -> None:
    if len(argv) >= 2 and argv[0] == "launch":
        launch(argv[1], argv[2:])
    elif len(argv) == 4 and argv[0] == "serve":
        if os.fork():  # detach: whoever started us waits for nothing but this exit
            os._exit(0)
        job = serve_main(argv[1], argv[2], float(argv[3]))
        if job is not None:
            namespace = become_worker(job["request"])
            exec(compile(job["request"]["argv"][-1], "<string>", "exec"), namespace)  # noqa: S102
            quick_exit()
    else:
        sys.exit("usage: zygote.py launch SOCKET ARGS... | serve SOCKET PROFILE IDLE_S")


if __name__ == "__main__":
    main(sys.argv[1:])
