"""engine/lean.py's exits without module teardown: the command line's status survives them, every
exit handler runs exactly once (a temporary folder's finalizer, a case's own, one registered after
the worker's hook), buffered output (Python's and C's) reaches a pipe, and an output that cannot be
flushed makes the status 120, as Python's own exit does."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as a user's shell


def _run(script: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=ENV, capture_output=True,
                          text=True, timeout=120, **kw)


def test_the_command_lines_exit_keeps_status_handlers_and_output(tmp_path: Path) -> None:
    marker = tmp_path / "handler-ran"
    proc = _run(f"""
        import atexit, ctypes, pathlib, tempfile
        from torchcts.engine.lean import exit_now
        kept = tempfile.TemporaryDirectory(dir={str(tmp_path)!r})  # removed by weakref's exit handler
        atexit.register(lambda: pathlib.Path({str(marker)!r}).open("a").write("x"))
        print("buffered", end="")
        ctypes.CDLL(None).printf(b"native")  # C's stdout buffer, which os._exit alone would drop
        exit_now(3)
    """)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.count("buffered") == 1 and "native" in proc.stdout, proc.stdout
    assert marker.read_text() == "x"  # once
    assert [p for p in tmp_path.iterdir() if p != marker] == []  # the temporary folder is gone


def test_a_workers_hook_runs_earlier_and_later_handlers_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    proc = _run(f"""
        import atexit, pathlib
        from torchcts.engine.lean import exit_without_teardown
        note = lambda w: pathlib.Path({str(log)!r}).open("a").write(w)
        atexit.register(note, "before ")
        exit_without_teardown()
        atexit.register(note, "after ")
    """)
    assert proc.returncode == 0, proc.stderr
    assert sorted(log.read_text().split()) == ["after", "before"]


def test_an_output_that_cannot_be_flushed_is_status_120() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-c", "from torchcts.engine.lean import exit_now\n"
                               "print('x' * 100, end='')\nexit_now(0)"],
                              env=ENV, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 120, proc.stderr
