"""One pytest session of a run, driven by the process that calls pytest.main: the controller.

The controller builds the Recorder (engine/plugin.py, the only writer of cases.jsonl) and hands it
to pytest.main as a plugin. With -n 0 or --no-isolation that process is the only one; under xdist the
workers are other processes and never have one. A rerun attempt of --rerun-failures is the same in a
fresh process: `python -m torchcts.engine.session PYTEST_ARGV` (engine/rerun.py). Both build the
Recorder from pytest's argv: the run folder, the workers' log folder, the live --manifest and
`--torchcts-attempt` reach every process of a run one way.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchcts.engine.plugin import Recorder


def run_session(argv: list[str], plugins: Sequence[Any] = (), replacer: Any = None) -> tuple[int, Recorder]:
    """pytest.main on `argv` (engine/execute.py: pytest_argv) with this process's Recorder and
    `plugins`: (pytest's exit code, the Recorder), whose `writer.failure` the caller checks.
    `replacer`: the run's crash server (workers/crash_server.py), which the Recorder's worker-death
    policy asks for a dead worker's replacement."""
    import pytest

    recorder = build_recorder(argv)
    recorder.deaths.replacer = replacer
    code = pytest.main(argv, plugins=[recorder, recorder.progress, *plugins])
    return code, recorder


def build_recorder(argv: Sequence[str]) -> Recorder:
    """The Recorder of a session, from the same argv its workers read: the run folder, the workers'
    log folder, the live --manifest and the attempt travel once, on pytest's command line."""
    from torchcts.engine.plugin import Recorder, RunState
    from torchcts.errors import UsageError

    run_dir = option(argv, "--torchcts-run-dir")
    if not run_dir:
        raise UsageError("a TorchCTS pytest session needs --torchcts-run-dir=RUN in pytest's arguments")
    work_dir = option(argv, "--torchcts-work-dir")
    state = RunState(Path(run_dir), option(argv, "--torchcts-manifest-arg"))
    return Recorder(state, Path(work_dir) if work_dir else None, int(option(argv, "--torchcts-attempt") or 1))


def option(argv: Sequence[str], name: str) -> str | None:
    """The last value of `name` in a pytest argv, in the `NAME=VALUE` form engine/execute.py:
    pytest_argv and engine/rerun.py write."""
    prefix = name + "="
    values = [arg[len(prefix):] for arg in argv if arg.startswith(prefix)]
    return values[-1] if values else None


def main(argv: list[str]) -> int:
    """A rerun attempt: pytest's exit code, or 2 with one line when a record could not be written."""
    from torchcts.errors import ExitCode, UsageError

    try:
        code, recorder = run_session(argv)
    except UsageError as exc:
        print(f"torchcts: error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if recorder.writer.failure is not None:
        exc = recorder.writer.failure
        print(f"torchcts: error: cannot write {exc.filename or 'cases.jsonl'}: {exc.strerror or exc}", file=sys.stderr)
        return ExitCode.USAGE
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
