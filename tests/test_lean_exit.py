"""engine/lean.py's exit without module teardown: the command line's status survives it, and every
exit handler registered before it (a temporary folder's finalizer, a case's own) still runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def test_exit_handlers_run_and_the_status_is_kept(tmp_path: Path) -> None:
    marker = tmp_path / "handler-ran"
    script = textwrap.dedent(f"""
        import atexit, pathlib, sys, tempfile
        from torchcts.engine.lean import exit_without_teardown
        kept = tempfile.TemporaryDirectory(dir={str(tmp_path)!r})  # removed by weakref's exit handler
        atexit.register(pathlib.Path({str(marker)!r}).write_text, "yes")
        exit_without_teardown(3)
        print("flushed at exit", end="")
        sys.exit(0)  # the status given to exit_without_teardown wins: the command line's own
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "flushed at exit"
    assert marker.read_text() == "yes"
    assert [p for p in tmp_path.iterdir() if p != marker] == []  # the temporary folder is gone
