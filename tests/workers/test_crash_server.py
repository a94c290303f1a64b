"""Crashed workers' replacements in runs without warm workers (workers/crash_server.py, issue 30
item 1): the run's first crash starts a run-scoped fork server, later replacements are forked from
it, a crash stays a crash, and the server never outlives its run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.paths import TESTS
from helpers.runs import latest_run, records, run_cli

from torchcts import settings
from torchcts.workers import crash_server, warm
from torchcts.workers.deaths import WorkerDeaths
from torchcts.workers.zygote import checks, keys, preload

pytestmark = pytest.mark.skipif(warm.unavailable() is not None, reason=f"fork servers: {warm.unavailable()}")


@pytest.fixture
def run_env(tmp_path):
    """The planted respawn suite on one worker, a private socket folder short enough for AF_UNIX;
    any server left in it is killed (and fails the test that left it). Cases stay in their worker
    after a crash (TORCHCTS_CASE_PROCESSES=0), so each crash needs a replacement, as on a backend
    that is not fork-safe (workers/case_process.py)."""
    folder = Path(tempfile.mkdtemp(prefix="tc", dir="/tmp"))
    env = {"CI": "true", "TORCHCTS_WARM_DIR": str(folder), "PLANTED_WORKERS_LOG": str(tmp_path / "workers.jsonl"),
           "TORCHCTS_CASE_PROCESSES": "0",
           "TORCHCTS_EXTRA_SUITES": "respawn=helpers.planted_respawn",
           "PYTHONPATH": os.pathsep.join(p for p in (str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH")) if p)}
    yield env, folder
    left = warm.running_in(folder)
    for pid, _ in left:
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)
    assert not left, f"servers left behind: {left}"


RUN = ("run", "--device", "cpu", "--suite", "respawn", "--timeout", "300", "--", "-n", "1", "-p", "no:benchmark")


def _notes(env: dict[str, str]) -> list[dict]:
    path = Path(env["PLANTED_WORKERS_LOG"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie (exited, not yet reaped by whoever adopted it) is gone too
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.main_only  # a "full" server (torch, the OpInfo database, inductor): see test_speed_warm
def test_a_crash_is_replaced_by_a_fork_of_the_runs_server_which_is_gone_after_the_run(run_env, tmp_path):
    env, folder = run_env
    r = run_cli(*RUN, cwd=tmp_path, env=env, timeout=400)
    out = r.stdout[-3000:] + r.stderr[-3000:]
    assert r.returncode == 1, out  # the crashes fail the run, as with fresh workers
    recs = records(latest_run(tmp_path))
    status = sorted(rec["status"] for rec in recs)
    assert set(status) == {"crashed", "passed"} and len(status) == 6, status
    for rec in recs:
        if rec["status"] == "crashed":
            assert rec["signal"] == "SIGSEGV" and "died (SIGSEGV)" in rec["message"], rec
    notes = _notes(env)
    # The first worker is a fresh python (a clean run starts no server); after the server listens,
    # a crashed worker's replacement is a fork of it: the worker's marker names its parent.
    assert notes[0]["forked_from"] is None, notes
    forked = [n for n in notes if n["forked_from"] is not None]
    # ... whose parent is the server, not the controller that started the first worker
    assert forked and all(n["forked_from"] != notes[0]["ppid"] for n in forked), notes
    assert len({n["forked_from"] for n in forked}) == 1, notes  # one server per run
    assert len(forked) == status.count("passed"), notes  # every forked worker's case passed
    # Stopped by the run at its end: no process left, and none of its files (lock included).
    server = forked[0]["forked_from"]
    assert _gone(server), f"server {server} outlived its run"
    assert list(folder.iterdir()) == [], list(folder.iterdir())


@pytest.mark.main_only
def test_a_killed_controller_leaves_a_server_that_exits_after_its_idle_limit(run_env, tmp_path):
    env, folder = run_env
    env = {**os.environ, **env, "PLANTED_RESPAWN_HANG": "1", "TORCHCTS_CRASH_SERVER_IDLE": "2"}
    controller = subprocess.Popen([sys.executable, "-m", "torchcts", *RUN], cwd=tmp_path, env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not any(n["forked_from"] for n in _notes(env)):  # a forked worker is running (sleeping)
            assert controller.poll() is None and time.monotonic() < deadline, _notes(env)
            time.sleep(0.2)
        server = next(n["forked_from"] for n in _notes(env) if n["forked_from"])
        assert not _gone(server) and warm.running_in(folder)
    finally:
        controller.kill()  # SIGKILL: the run cannot stop its server
        controller.wait()
    # Its worker dies with the controller's channel; idle for 2 s, the server exits and removes its files.
    deadline = time.monotonic() + 60
    while not (_gone(server) and not list(folder.iterdir())):
        assert time.monotonic() < deadline, (server, list(folder.iterdir()))
        time.sleep(0.2)


class _Spec(SimpleNamespace):
    popen, via, python = True, None, None


def test_only_a_crash_starts_the_server_and_the_run_stops_it(monkeypatch):
    """Unit view of the worker-death policy and the server: a worker that finished (error None) or a
    Ctrl-C starts nothing; a crash starts one server, whose launcher becomes the replacement's python;
    stop() removes it all."""
    tmp_path = Path(tempfile.mkdtemp(prefix="tc", dir="/tmp"))  # short enough for AF_UNIX
    started = []
    monkeypatch.setattr(warm, "start_server", lambda path, profile, **kw: started.append((path, profile, kw)))
    monkeypatch.setenv("TORCHCTS_WARM_DIR", str(tmp_path))
    settings.reload()
    plugin = crash_server.CrashServer("bare", 5.0)
    deaths = WorkerDeaths(None, 1, dict, lambda r: r, None, lambda case_id: None)
    deaths.replacer = plugin  # the controller's one worker-death policy asks the server (workers/deaths.py)
    node = SimpleNamespace(gateway=SimpleNamespace(spec=_Spec()))
    deaths.node_down(node, None)
    deaths.node_down(node, "keyboard-interrupt")
    assert started == [] and node.gateway.spec.python is None and plugin.path is None
    deaths.node_down(node, "Not properly terminated")
    [(path, profile, kw)] = started
    assert profile == "bare" and kw == {"idle_s": 5.0, "run_scoped": True}
    assert Path(path).parent == tmp_path and "-run-" in Path(path).name
    assert node.gateway.spec.python == warm.launcher_command(path)
    other = crash_server.CrashServer("bare", 5.0)
    other.replace(SimpleNamespace(gateway=SimpleNamespace(spec=_Spec())))
    assert other.path != path  # never shared across runs, whatever their environment
    user = _Spec(python="/opt/other/python")  # a worker python the user chose is left alone
    deaths.node_down(SimpleNamespace(gateway=SimpleNamespace(spec=user)), "crashed")
    assert user.python == "/opt/other/python"
    Path(path + ".lock").write_text("")
    Path(path + ".log").write_text("forked worker 1\n")
    plugin.stop()
    assert list(tmp_path.iterdir()) == []
    tmp_path.rmdir()
    settings.reload()


def test_which_runs_get_a_crash_server_and_what_it_imports(monkeypatch):
    assert crash_server.profile_for("cpu", None) == "full"
    assert crash_server.profile_for("sim", "torchcts.sim") == "backend:torchcts.sim"
    assert crash_server.profile_for("npu", "torch_npu") == "base"  # a device runtime: never before the fork
    # A backend indifferent to what was imported before it: the OpInfo database under its name
    assert crash_server.profile_for("ocl", "pytorch_ocl") == warm.profile_for("ocl", "pytorch_ocl") == "named:ocl"
    assert preload.imports("named:ocl") == (*preload.PROFILES["base"], *preload.NAMED_IMPORTS)
    assert preload.defers_autoload("named:ocl") and preload.defers_autoload("base")
    assert not preload.defers_autoload("full") and not preload.defers_autoload("backend:torchcts.sim")
    # The backend before PyTorch's testing modules (they read the PrivateUse1 name at import).
    imports = preload.imports("backend:torchcts.sim")
    assert imports.index("torchcts.sim") < imports.index("torch.testing._internal.common_methods_invocations")
    assert imports[:4] == preload.PROFILES["base"] and preload._assert_close in preload.warmups("backend:x")
    # A backend server imported torchcts, whose variables then decide what it loaded (the sim's faults).
    env = {"PATH": "/bin", "TORCHCTS_SIM_FAULT": "reduce_float32_segv"}
    assert keys.key(env, "backend:torchcts.sim") != keys.key({"PATH": "/bin"}, "backend:torchcts.sim")
    assert keys.key(env, "full") == keys.key({"PATH": "/bin"}, "full")
    monkeypatch.delenv("TORCHCTS_CRASH_SERVER", raising=False)
    monkeypatch.setenv("TORCHCTS_CASE_PROCESSES", "0")
    settings.reload()
    assert crash_server.wanted(True, [], "cpu", None) == "full"
    assert crash_server.wanted(False, [], "cpu", None) is None  # --no-isolation: no workers to replace
    assert crash_server.wanted(True, [warm.WarmWorkers("full")], "cpu", None) is None  # warm already forks
    assert crash_server.wanted(True, [warm.WarmWorkers("base")], "sim", "torchcts.sim") == "backend:torchcts.sim"
    assert crash_server.wanted(True, [], "npu", "torch_npu") == "base"
    monkeypatch.delenv("TORCHCTS_CASE_PROCESSES")
    settings.reload()
    # Cases fork after the first crash (workers/case_process.py): a worker dies once at most.
    assert crash_server.wanted(True, [], "cpu", None) is None
    assert crash_server.wanted(True, [], "sim", "torchcts.sim") is None
    assert crash_server.wanted(True, [], "npu", "torch_npu") == "base"  # not fork-safe: its crashes replace workers
    monkeypatch.setenv("TORCHCTS_CRASH_SERVER", "0")
    settings.reload()
    assert crash_server.wanted(True, [], "npu", "torch_npu") is None
    settings.reload()


def test_a_checkout_on_the_servers_path_does_not_shadow_itself(tmp_path):
    """Running from a backend's own checkout (also on PYTHONPATH) is no shadowing: the server's copy
    is that folder. Another folder with the same name is."""
    here = Path(checks.__file__).resolve().parents[3]  # the folder holding torchcts/
    assert checks.shadowed(str(here), frozenset({"torchcts"})) is None
    (tmp_path / "torchcts").mkdir()
    (tmp_path / "torchcts" / "__init__.py").write_text("")
    assert checks.shadowed(str(tmp_path), frozenset({"torchcts"})) == "torchcts"


NAMED_PRELOAD = """
import json, sys, torch
from torchcts.workers.zygote import preload
hazard = preload.preload("named:ocl")
from torch.testing._internal import common_utils
import torch.testing._internal.common_methods_invocations as cmi
out = {"hazard": hazard, "name": torch._C._get_privateuse1_backend_name(),
       "native": "ocl" in common_utils.NATIVE_DEVICES, "autoload": preload.AUTOLOAD in __import__("os").environ}
torch.utils.rename_privateuse1_backend("ocl")  # the backend's own import, after the fork: the same name again
out["again"] = preload.name_privateuse1("ocl")
out["other"] = preload.name_privateuse1("npu")
print(json.dumps(out))
"""


def test_a_named_server_preloads_the_opinfo_database_under_the_backends_device_name(tmp_path):
    """In a process of its own: renaming PrivateUse1 cannot be undone, and the sim in this one needs its own."""
    env = {**os.environ, "PYTHONPATH": str(TESTS.parent)}
    env.pop(preload.AUTOLOAD, None)
    out = subprocess.run([sys.executable, "-c", NAMED_PRELOAD], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    # PyTorch's testing modules read the name at import: the backend's name, as in a fresh worker
    assert got == {"hazard": None, "name": "ocl", "native": True, "autoload": False, "again": None,
                   "other": "found PrivateUse1 already named 'ocl', not 'npu'"}


def test_a_launcher_waits_for_a_server_still_importing_and_not_for_a_gone_one(tmp_path):
    """Between a run's first crash and its server's socket, replacements wait for the fork (a fresh
    python beside the server's imports slows both); a server that let go of its lock is not waited for."""
    from torchcts.workers.zygote import launcher, state

    sock = str(tmp_path / "s")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from torchcts.workers.zygote import state\n"
        "lock = state.hold_lock(sys.argv[2]); print('held', flush=True); time.sleep(1.0)\n"
        "open(sys.argv[2], 'w').close(); time.sleep(60)"), str(TESTS.parent), sock],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        launcher.wait_for_start(sock, limit_s=30)
        # it returned because the socket came (1 s after the lock), not at its limit
        assert os.path.exists(sock) and time.monotonic() - start < 30
    finally:
        holder.kill()
        holder.wait()
    os.unlink(sock)
    assert state.holder(sock + ".lock") is None  # its lock went with it
    start = time.monotonic()
    launcher.wait_for_start(sock, limit_s=30)
    assert time.monotonic() - start < 30  # nobody is starting: it does not wait out its limit
