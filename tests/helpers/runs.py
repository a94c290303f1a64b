"""Running the CLI as a user would, and reading what a run left: shared by every test area."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from torchcts.results.records import rundir

from . import command_server


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600):
    """Run `python -m torchcts ARGS` in a subprocess; returns CompletedProcess with text output. A run
    past `timeout` is killed with its process group (its workers too: a killed controller alone leaves
    them holding the output pipes) and fails the test with its output so far, not a bare timeout."""
    full_env = {**os.environ, "CI": "true", **(env or {})}
    command, full_env = command_server.prepare(["-m", "torchcts", *args], full_env)
    with subprocess.Popen(command, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:  # a process outside the group holds the pipes
                out, err = "(not read: a process outside the run's group holds its output)", ""
            pytest.fail(f"torchcts {' '.join(args)} ran past {timeout} s and was killed\n"
                        f"--- stdout (tail)\n{(out or '')[-4000:]}\n--- stderr (tail)\n{(err or '')[-4000:]}")
        except BaseException:  # pytest-timeout's Failed, Ctrl-C: the run's group goes too, never left behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def run_typed(words: list[str], cwd: Path, extra: dict[str, str] | None = None, unset: tuple[str, ...] = (),
              timeout: float = 300) -> subprocess.CompletedProcess:
    """A printed or documented command line (its shell words) as a shell runs it in `cwd`: leading
    NAME=value words set the environment; `unset`: variables removed first (nothing planted from
    outside); `extra`: set last. `torchcts` is this Python's."""
    words = list(words)
    env = {k: v for k, v in os.environ.items() if k not in unset}
    given = {}
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        given[name] = value
    given.update(extra or {})
    env.update({**given, "CI": given.get("CI", "true")})
    assert words and words[0] in ("torchcts", "python"), words
    argv, env = command_server.prepare(["-m", "torchcts", *words[1:]] if words[0] == "torchcts" else words[1:], env)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def pythonpath(*dirs: Path | str) -> dict[str, str]:
    """PYTHONPATH with `dirs` first and the caller's own kept after them: the version matrix runs
    this checkout through PYTHONPATH, and a test that replaced it would import no torchcts at all."""
    return {"PYTHONPATH": os.pathsep.join(p for p in (*map(str, dirs), os.environ.get("PYTHONPATH")) if p)}


def latest_run(root: Path) -> Path:
    """The run `root/results/latest` points to (a symlink, or a one-line file)."""
    run = rundir.latest_run(root / "results")
    assert run is not None, f"no run under {root / 'results'}"
    return run


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "cases.jsonl").read_text().splitlines() if line.strip()]


def start_hanging_run(tmp_path: Path, planted_env: dict[str, str]) -> subprocess.Popen:
    """`torchcts run` of a passing planted case and then a hanging one, in its own process group
    (for the tests that interrupt a run with a signal)."""
    env = {**os.environ, "CI": "true", **planted_env, "PLANTED_HANG_LAST": "1"}
    args = [sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--timeout", "120",
            "--case", "planted/a_ok/*", "--case", "planted/z_hang/*", "--", "-p", "no:benchmark", "-n", "1"]
    # A shell that ignores SIGINT (a background job, nohup, some CI runners) passes that on through
    # exec, and Python then never raises KeyboardInterrupt: the run a user starts has the default.
    return subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True, text=True,
                            preexec_fn=_default_sigint)


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
