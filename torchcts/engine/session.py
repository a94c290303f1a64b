"""One pytest session of a run, driven by the process that calls pytest.main: the controller.

The controller builds the Recorder (engine/plugin.py, the only writer of cases.jsonl) and hands it
to pytest.main as a plugin. With -n 0 or --no-isolation that process is the only one; under xdist the
workers are other processes and never have one. A rerun attempt of --rerun-failures is the same in a
fresh process: `python -m torchcts.engine.session PYTEST_ARGV` (engine/rerun.py), which takes the run
folder, the worker folder, the live --manifest and `--torchcts-attempt` from the argv.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchcts.engine.plugin import Recorder


def run_session(run_dir: Path, argv: list[str], *, manifest_arg: str | None = None, work_dir: Path | None = None,
                attempt: int = 1, plugins: Sequence[Any] = ()) -> tuple[int, Recorder]:
    """pytest.main on `argv` with this process's Recorder (and `plugins`); (pytest's exit code, the
    Recorder), whose `writer.failure` the caller checks."""
    import pytest

    from torchcts.engine.plugin import Recorder, RunState

    recorder = Recorder(RunState(run_dir, manifest_arg), work_dir, attempt)
    code = pytest.main(argv, plugins=[recorder, recorder.progress, *plugins])
    return code, recorder


def option(argv: Sequence[str], name: str) -> str | None:
    """The last value of `name` in a pytest argv, in the `NAME=VALUE` form engine/execute.py:
    pytest_argv and engine/rerun.py write."""
    prefix = name + "="
    values = [arg[len(prefix):] for arg in argv if arg.startswith(prefix)]
    return values[-1] if values else None


def main(argv: list[str]) -> int:
    """A rerun attempt: pytest's exit code, or 2 with one line when a record could not be written."""
    from torchcts.errors import EXIT_USAGE

    run_dir = option(argv, "--torchcts-run-dir")
    if not run_dir:
        print("torchcts: error: engine/session.py needs --torchcts-run-dir=RUN in pytest's arguments", file=sys.stderr)
        return EXIT_USAGE
    work_dir = option(argv, "--torchcts-work-dir")
    code, recorder = run_session(Path(run_dir), argv, manifest_arg=option(argv, "--torchcts-manifest-arg"),
                                 work_dir=Path(work_dir) if work_dir else None,
                                 attempt=int(option(argv, "--torchcts-attempt") or 1))
    if recorder.writer.failure is not None:
        exc = recorder.writer.failure
        print(f"torchcts: error: cannot write {exc.filename or 'cases.jsonl'}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
