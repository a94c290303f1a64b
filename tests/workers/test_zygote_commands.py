"""Whole commands from a fork server (workers/zygote/command.py): a forked `python SCRIPT` or
`python -m torchcts` must be what the fresh interpreter is to whoever started it (the tests'
command servers, tests/helpers/command_server.py, stand in for hundreds of fresh ones)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers import command_server, zygote_servers
from helpers.zygote_servers import start, wait_gone

from torchcts.workers import warm

server_env = zygote_servers.server_env  # the fixture: a private socket folder, its servers stopped

PROBE = """
import atexit, os, sys
atexit.register(lambda: print("atexit ran", flush=False))
print("ppid", os.getppid())
print("argv", sys.argv, "path0", sys.path[0], "cwd", os.getcwd())
print("stdin", sys.stdin.readline().strip(), "write_through", sys.stdout.write_through,
      "line_buffering", sys.stdout.line_buffering, "main", __name__)
print("to stderr", file=sys.stderr)
how = sys.argv[1]
if how == "code":
    sys.exit(int(sys.argv[2]))
if how == "message":
    sys.exit("a message")
if how == "raise":
    raise ValueError("uncaught")
if how == "interrupt":
    raise KeyboardInterrupt
if how == "signal":
    os.kill(os.getpid(), signal.SIGTERM)
"""


def both(path: str, args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess, ...]:
    """The command through the launcher, then fresh."""
    def run(argv: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(argv, env=env, cwd=cwd, input="from stdin\n", capture_output=True, text=True, timeout=120)

    return run([sys.executable, warm.ZYGOTE, "launch", path, *args]), run([sys.executable, *args])


def test_a_forked_script_is_the_fresh_one_to_its_caller(server_env, tmp_path):
    """Same stdout, stderr and exit status as the fresh `python SCRIPT ARGS` for each way a script
    ends; only the parent differs (the server: it was forked). Without PYTHONUNBUFFERED, which the
    server's own `python -u` streams would otherwise hide."""
    server_env = {k: v for k, v in server_env.items() if k != "PYTHONUNBUFFERED"}
    path, server = start(server_env)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "probe.py").write_text("import signal\n" + PROBE)
    for how in (["code", "0"], ["code", "3"], ["message"], ["raise"], ["signal"], ["interrupt"]):
        forked, fresh = both(path, ["scripts/probe.py", *how], server_env, tmp_path)
        if how != ["signal"]:  # killed, a buffered stdout is lost, forked as fresh
            assert f"ppid {server}\n" in forked.stdout and f"ppid {server}\n" not in fresh.stdout, how
        assert forked.returncode == fresh.returncode, (how, forked.stderr, fresh.stderr)
        strip = lambda text: "\n".join(line for line in text.splitlines() if not line.startswith("ppid"))  # noqa: E731
        assert strip(forked.stdout) == strip(fresh.stdout), how
        assert forked.stderr == fresh.stderr, how
    assert [fresh.returncode for fresh in [both(path, ["scripts/probe.py", h], server_env, tmp_path)[1]
                                           for h in ("message", "interrupt", "signal")]] == [1, -signal.SIGINT,
                                                                                             -signal.SIGTERM]
    assert f"argv ['scripts/probe.py', 'interrupt'] path0 {scripts} cwd {tmp_path}" in forked.stdout
    assert Path(path + ".log").read_text().count("forked worker") >= 6


def test_torchcts_commands_fork_and_anything_else_runs_fresh(server_env, tmp_path):
    """`-m torchcts` forks (its output equal to the fresh one's); `-m` of another module and a script
    beside a module that would shadow a preloaded one run fresh, and the server says why."""
    path, server = start(server_env)
    forked, fresh = both(path, ["-m", "torchcts", "backends"], server_env, tmp_path)
    assert forked.returncode == fresh.returncode == 0 and forked.stdout == fresh.stdout, forked.stderr
    assert Path(path + ".log").read_text().count("forked worker") == 1
    other, _ = both(path, ["-m", "json.tool", "--help"], server_env, tmp_path)
    assert other.returncode == 0
    (tmp_path / "socket.py").write_text("print('the local socket module')\n")  # the server imported socket
    (tmp_path / "uses_socket.py").write_text("import os, socket\nprint(os.getppid())\n")
    shadowed, fresh = both(path, ["uses_socket.py"], server_env, tmp_path)
    assert shadowed.stdout.splitlines()[0] == "the local socket module" == fresh.stdout.splitlines()[0]
    assert shadowed.stdout.splitlines()[1] != str(server)
    assert Path(path + ".log").read_text().count("forked worker") == 1
    refusals = " | ".join(r["why"] for r in warm.statuses(Path(path).parent)[0]["refusals"])
    assert "neither an execnet worker's command line nor a command a server runs" in refusals, refusals
    assert "socket.py in the script folder would shadow a preloaded module" in refusals, refusals


def test_a_killed_launcher_takes_the_commands_whole_process_group(server_env, tmp_path):
    """run_cli kills a command past its timeout with its process group: forked, the command's own
    children (a run's workers) must go too, though they are not in the launcher's group."""
    path, _ = start(server_env)
    (tmp_path / "parent.py").write_text(
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "print(child.pid, flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, warm.ZYGOTE, "launch", path, "parent.py"], cwd=tmp_path,
                            env=server_env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    grandchild = int(proc.stdout.readline())
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_gone(grandchild, "the command's child outlived its killed launcher")


def test_the_sessions_helper_forks_commands_of_its_key_and_runs_the_rest_fresh(tmp_path, monkeypatch):
    """tests/helpers/command_server.py: a `torchcts` command or a script goes through a launcher of
    the session's folder from its key's second command on (the first runs fresh); `-c CODE`,
    CTS_TEST_FRESH=1 and no folder give the fresh command line; another key environment is another
    server, its command's environment untouched."""
    folder = Path(tempfile.mkdtemp(prefix="cts", dir="/tmp"))  # short enough for AF_UNIX
    # the version matrix runs the tests with CTS_TEST_FRESH=1: this test's commands ask for servers
    env = {**{k: v for k, v in os.environ.items() if k != command_server.FRESH_VAR}, command_server.FOLDER_VAR: str(folder)}
    assert command_server.prepare(["-m", "torchcts", "--version"], env)[0][1:] == ["-m", "torchcts", "--version"]
    argv, _ = command_server.prepare(["-m", "torchcts", "--version"], env)  # the key's second command
    try:
        assert argv[:3] == [sys.executable, warm.ZYGOTE, "launch"] and argv[4:] == ["-m", "torchcts", "--version"]
        assert Path(argv[3]).parent == folder
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0 and result.stdout.startswith("torchcts"), result.stderr
        assert "forked worker" in Path(argv[3] + ".log").read_text()
        assert command_server.prepare(["-c", "pass"], env)[0] == [sys.executable, "-c", "pass"]
        assert command_server.prepare(["x.py"], {**env, command_server.FRESH_VAR: "1"})[0] == [sys.executable, "x.py"]
        assert command_server.prepare(["x.py"], {k: v for k, v in env.items() if k != command_server.FOLDER_VAR})[0] \
            == [sys.executable, "x.py"]
        assert command_server.launch([sys.executable, "x.py"], env)[0] == [*argv[:4], "x.py"]
        chosen = {**env, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "mine")}
        assert command_server.prepare(["x.py"], chosen)[0] == [sys.executable, "x.py"]
        other, kept = command_server.prepare(["x.py"], chosen)
        assert other[3] != argv[3] and kept == chosen
    finally:
        monkeypatch.setenv(command_server.FOLDER_VAR, str(folder))
        command_server.close_folder()
    assert not folder.exists()
