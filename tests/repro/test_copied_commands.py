"""Issue 30 item 7: every command a run offers runs when pasted in the folder the run was made from.

One sim run with a planted fault, started the way `torchcts selftest` starts it (the sim's manifest
by its path inside the package). Every command its records, terminal, summary.md, report.html and
`expectations update` offer parses into the intended argv with no shell redirection; the record's
repro line, run as a shell would from that folder with nothing planted from outside, reproduces
the failure (it sets the fault itself), and so does the standalone script it leads to.
"""

from __future__ import annotations

import html
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers.runs import latest_run, run_cli, run_typed

from torchcts.engine.selftest import ENV, SIM_MANIFEST
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.results.records import rundir
from torchcts.results.records.scrub import scrub
from torchcts.results.repro.commands import record_repro, repro_script_command

FAULT, CASE = "abs_zero_dim", "operators/elementwise/abs/float32"
SHELL_OPERATORS = set("<>|&;()")


def shell_words(command: str) -> list[str]:
    """The words a POSIX shell makes of `command`; an unquoted redirection or other operator is a
    word of its own here (punctuation_chars), so a test can refuse it."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def assert_runnable_text(command: str) -> list[str]:
    words = shell_words(command)
    assert not any(set(w) <= SHELL_OPERATORS for w in words), command
    assert words == shlex.split(command), command  # no operator glued to a word either
    return words


def run_as_pasted(command: str, cwd: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`command` as a shell would run it in `cwd`, nothing planted from outside (the fault variable
    removed unless `env_extra` sets it)."""
    return run_typed(assert_runnable_text(command), cwd, env_extra, unset=(ENV,))


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    root = tmp_path_factory.mktemp("copied")
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--case", CASE, "--no-isolation",
                cwd=root, env={ENV: FAULT})
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    return root, latest_run(root), r.stdout


def offered(run_dir: Path, stdout: str) -> dict[str, list[str]]:
    """Every command the run offers, by where it is offered."""
    recs = [rec for rec in rundir.read_records(run_dir) if rec.id == CASE]
    summary = (run_dir / "summary.md").read_text()
    page = (run_dir / "report.html").read_text()
    return {
        "records": [c for rec in recs for c in (rec.repro, rec.repro_script) if c],
        "terminal": re.findall(r"^ +(?:repro|script): (.*)$", stdout, re.M),
        "summary.md": [c for c in re.findall(r"`([^`]*)`", summary) if c.split(" ")[0] in ("torchcts", f"{ENV}={FAULT}")],
        "report.html": [html.unescape(c) for c in re.findall(r"data-copy='([^']*)'", page)],
    }


def test_every_offered_command_parses_into_its_argv(fault_run):
    root, run_dir, stdout = fault_run
    repro = [ENV + "=" + FAULT, "torchcts", "run", "--device", "sim", "--manifest", "torchcts:sim/manifest.py",
             "--case", CASE, "--sample", "0"]
    script = ["torchcts", "repro", CASE, "--run", f"results/{run_dir.name}"]
    found = offered(run_dir, stdout)
    for where, commands in found.items():
        assert commands, where
        for command in commands:
            words = assert_runnable_text(command)
            assert words in (repro, script, [*script, "--manifest", "torchcts:sim/manifest.py"]), (where, command)
    assert {shlex.join(repro)} == {c for cs in found.values() for c in cs if c.startswith(ENV)}
    # `torchcts report` rebuilds the same commands from run.json alone (its --manifest scrubbed there)
    again = run_cli("report", str(run_dir.relative_to(root)), cwd=root)
    assert again.returncode == 1, again.stdout[-2000:] + again.stderr[-2000:]
    assert offered(run_dir, again.stdout) == found
    # `expectations update` names the command to check its proposals with
    update = run_cli("expectations", "update", cwd=root)
    assert update.returncode == 0, update.stderr
    for command in re.findall(r"'(torchcts [^']*)'", update.stdout):
        assert assert_runnable_text(command) == ["torchcts", "check-manifest"]


def test_a_hidden_path_is_quoted_never_a_redirection(tmp_path):
    """A manifest or results folder the scrubber reduces to a placeholder stays one quoted word."""
    spec = Run.from_json({"device": {"type": "sim"}, "manifest": {}, "validation": False, "sim_env": {ENV: f"{FAULT},x"}})
    for manifest in ("/opt/vendor/npu/manifest.py", "../npu/manifest.py"):
        line = scrub(record_repro(CaseRecord(id=CASE, level=1), spec, manifest))
        assert assert_runnable_text(line)[:2] == [f"{ENV}={FAULT},x", "torchcts"]
        assert "--manifest '<path:manifest.py>'" in line, line
    line = scrub(repro_script_command(CASE, "/opt/ci/results/20260101T000000Z-aaaaaa"))
    assert assert_runnable_text(line)[-1] == "<path:20260101T000000Z-aaaaaa>"
    crafted = Run.from_json({**spec.to_json(), "sim_env": {ENV: "x; rm -rf ~", "PATH": "/evil"}})  # untrusted
    assert record_repro(CaseRecord(id=CASE), crafted, None) == "torchcts run --device sim --case " + CASE


def test_the_repro_line_and_script_reproduce_as_pasted(fault_run):
    root, run_dir, _ = fault_run
    rec = next(r for r in rundir.read_records(run_dir) if r.id == CASE)
    again = run_as_pasted(rec.repro, root)  # sets the fault itself, names the sim's manifest portably
    assert again.returncode == 1, again.stdout[-2000:] + again.stderr[-2000:]
    rerun = latest_run(root)
    assert rerun != run_dir and [r.status for r in rundir.read_records(rerun) if r.id == CASE] == ["failed"]
    made = run_as_pasted(next(c for c in offered(run_dir, "")["summary.md"] if " repro " in c), root)
    assert made.returncode == 0, made.stdout + made.stderr
    script = made.stdout.rsplit("run it with: ", 1)[1].strip()
    broken = run_as_pasted(script, root)
    assert broken.returncode == 1 and "MISMATCH" in broken.stdout, broken.stdout + broken.stderr
    assert f"setting {ENV}={FAULT} as the run had it" in broken.stdout  # and it says so
    clean = run_as_pasted(script, root, {ENV: ""})  # the reader's own setting wins: no fault, a pass
    assert clean.returncode == 0 and "all samples match" in clean.stdout, clean.stdout + clean.stderr
