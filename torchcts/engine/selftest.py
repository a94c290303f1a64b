"""Measure the suite's detection power: run it on the sim clean and once per planted fault.

Nothing here imports `torchcts.sim` (importing it renames PrivateUse1 for the whole process): a
fault is passed by name and its catching globs, and planted in the child through the environment.

Each run is a subprocess `torchcts run --device sim` (a crash or hang in a faulty kernel must not
take the self-test down) in its own results folder, so every run leaves its evidence. A fault is
detected when some case fails (failed, error, crashed, timeout); the first such case, in the
order cases finished, is the one reported. The engine's worker isolation records a crashing case
`crashed` and a hung one `timeout` (`torchcts run --timeout`); a run that dies mid-case without
isolation (`--no-isolation`) is attributed to the first planned case that has no record.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from torchcts import settings
from torchcts.errors import ExitCode, UsageError
from torchcts.model.status import FAILURES, Status
from torchcts.results.records import rundir
from torchcts.results.records.jsonl import read_jsonl

ENV = settings.env_name("sim_fault")
SIM_MANIFEST = Path(__file__).parent.parent / "sim" / "manifest.py"


@dataclass
class Outcome:
    name: str  # fault name, or "clean"
    detected: bool
    first_case: str | None = None
    status: str | None = None
    meant: bool = False  # the first failing case is one the fault names as its catcher
    seconds: float = 0.0
    returncode: int | None = None
    planned: int = 0
    note: str = ""
    measured: bool = True  # False: this build has no case meant to catch the fault

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def run_argv(selection: list[str], results_dir: Path, *, stop_first: bool, case_timeout: float | None,
             isolation: bool = True) -> list[str]:
    """`torchcts run` on the sim: the per-case limit is the run's own `--timeout` (a hung case is
    recorded `timeout`, a crashed one `crashed`, by the engine's worker isolation)."""
    argv = [sys.executable, "-m", "torchcts", "run", "--device", "sim", "--manifest", str(SIM_MANIFEST),
            "--results-dir", str(results_dir), *selection, "--timeout", f"{case_timeout or 0:g}"]
    if not isolation:
        argv.append("--no-isolation")
    argv += ["--", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    if stop_first:
        argv.append("-x")
    return argv


def read_plan_ids(run_dir: Path) -> tuple[list[str], list[str]]:
    """(the planned case ids in order, one problem per unreadable line of plan.jsonl): a damaged line
    is counted, never dropped, since the case it held could be the one a dead run was running."""
    path = run_dir / "plan.jsonl"
    ids: list[str] = []
    problems: list[str] = []
    for line in read_jsonl(path) if path.is_file() else ():
        case_id = line.value.get("id") if isinstance(line.value, dict) else None
        if isinstance(case_id, str):
            ids.append(case_id)
        else:
            problems.append(f"plan.jsonl line {line.number}: {line.problem or 'not a case'}")
    return ids, problems


def judge(name: str, run_dir: Path | None, returncode: int | None, seconds: float,
          catches: tuple[str, ...] = ()) -> Outcome:
    """Read a finished (or killed) run folder: detected or not, and by which case."""
    out = Outcome(name, False, seconds=round(seconds, 2), returncode=returncode)
    if run_dir is None:
        out.note = "no run folder (the run did not start)"
        return out
    records, record_problems = rundir.scan_records(run_dir)
    plan, plan_problems = read_plan_ids(run_dir)
    out.planned = len(plan)
    failing = [r for r in records if r.status in FAILURES]
    if failing:
        out.detected, out.first_case, out.status = True, failing[0].id, str(failing[0].status)
    elif returncode is None or returncode < 0 or returncode >= 128:
        done = {r.id for r in records}
        pending = [case_id for case_id in plan if case_id not in done]
        out.detected = True
        out.status = str(Status.TIMEOUT if returncode is None else Status.CRASHED)
        out.first_case = pending[0] if pending else None
    elif returncode not in (ExitCode.OK, ExitCode.FAILURES):
        out.note = f"torchcts run exited {returncode} (usage or internal error)"
    out.meant = bool(out.first_case and any(fnmatch.fnmatchcase(out.first_case, g) for g in catches))
    unreadable = plan_problems + [f"cases.jsonl {p}" for p in record_problems]
    if unreadable:  # the verdict read from these files may miss a case: said, as a run's reports say it
        out.note = "; ".join(filter(None, [out.note, f"{len(unreadable)} unreadable line(s) ({unreadable[0]})"]))
    return out


Launch = Callable[[list[str], dict[str, str]], tuple[list[str], dict[str, str]]]


def as_given(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    return argv, env


def run_one(name: str, selection: list[str], results_dir: Path, *, fault: str | None,
            catches: tuple[str, ...] = (), stop_first: bool, case_timeout: float | None,
            run_timeout: float | None, isolation: bool = True, launch: Launch = as_given) -> Outcome:
    """One `torchcts run` on the sim, with the named fault (or a comma-separated list, or none) planted;
    `run_timeout` None: no limit on the whole run (each case still has `case_timeout`). `launch`: the
    command line and environment the run is started with (the project's tests fork it from a
    server of theirs: tests/helpers/command_server.py)."""
    results_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env[settings.env_name("ci")] = "true"
    if fault is not None:
        env[ENV] = fault
    argv, env = launch(run_argv(selection, results_dir, stop_first=stop_first, case_timeout=case_timeout,
                                isolation=isolation), env)
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        output, _ = proc.communicate(timeout=run_timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        rc = None
    out = judge(name, rundir.latest_run(results_dir), rc, time.monotonic() - start, catches)
    if out.note and output:
        out.note += ": " + output.strip().splitlines()[-1][:200]
    return out


def missing_cases(suite: str, level: int) -> str | None:
    """Why a focused selection (suite at one level) would run nothing in this build, or None."""
    from torchcts.cases.registry import SUITES, suite_cases

    if suite not in SUITES:
        return f"suite '{suite}' is not in this build"
    cases = [c for c in suite_cases(suite) if c.level == level]
    if not cases:
        return f"suite '{suite}' has no level-{level} cases in this build"
    return _unclaimed_by_sim(suite, cases)


def _unclaimed_by_sim(suite: str, cases: list) -> str | None:
    """The sim's manifest claims nothing these cases need on this PyTorch (compile before 2.12)."""
    import torch

    from torchcts.engine.selection import select
    from torchcts.manifest.load import load_manifest
    from torchcts.model.selection import Selection

    if select(cases, load_manifest(SIM_MANIFEST), Selection()).to_run:
        return None
    return f"the sim does not claim what suite '{suite}' needs on PyTorch {torch.__version__}"


_CATALOG_CODE = "import json\nfrom torchcts.sim.faults import FAULTS\nprint(json.dumps([f.to_json() for f in FAULTS.values()]))"


def fault_catalog() -> list[dict]:
    """The planted faults (name, suite, level, catches, selection), read in a child process."""
    r = subprocess.run([sys.executable, "-c", _CATALOG_CODE], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300, check=False)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or [""])[-1]
        if "UsageError: " in last:  # the sim cannot register on this PyTorch/machine: say why, exit 2
            raise UsageError(f"the simulated device cannot start here: {last.split('UsageError: ', 1)[1]}")
        raise RuntimeError(f"could not list the sim's faults: {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])
