"""The commands a report offers for a record, rebuilt from validated fields, never copied from it.

A record's stored `repro` / `repro_script` strings are data anyone can craft (issue 31): shown as
they are, a downloaded run folder would offer its reader an attacker's command to paste. So every
report (terminal, summary.md, report.html, junit.xml) shows commands rebuilt here from the record's
id, level and failing sample and run.json's device, validation flag and `--manifest` value, each
argument quoted for the shell (`cases/repro_builders.py: repro_command`); a stored command is only a sign
that the record had one. A `--manifest` naming a file inside the results folder is never offered
(the command would execute a manifest that came with the run). Each command runs as pasted in the
folder the run was made from (the results folder's parent): paths the scrubber hides are quoted,
never a shell redirection, a manifest inside the package is `torchcts:REL`, and a sim run's line
sets the sim's variables it had (tests/repro/test_copied_commands.py).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from torchcts.cases.repro_builders import failing_sample, repro_command
from torchcts.manifest.load import portable_manifest
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.results.records.scrub import scrub
from torchcts.results.reports.repeat_rate import repro_repeat
from torchcts.results.repro import sim_env


def offered_commands(record: CaseRecord, run: Run, run_dir: Path,
                     manifest_arg: str | None = None) -> CaseRecord:
    """`record` with `repro` and `repro_script` rebuilt (where it had them); nothing else changes.
    `manifest_arg`: `--manifest` as typed, when the run itself finalizes (quoted, then scrubbed, as
    the record's own line was); else run.json's scrubbed value, quoted as it stands."""
    if record.repro is None and record.repro_script is None:
        return record
    manifest = manifest_arg or reader_manifest(run.manifest_arg, run_dir)
    repro, script = record.repro, record.repro_script
    if repro is not None:
        repro = scrub(record_repro(record, run, manifest))
    if script is not None:
        script = repro_script_command(record.id, str(run_dir))
        if manifest and not run.validation:  # the script imports that manifest's backend module
            script += f" --manifest {shell_path(manifest)}"
        script = scrub(script)
    return record.copy(repro=repro, repro_script=script)


def reader_manifest(value: Any, run_dir: Path) -> str | None:
    """run.json's `--manifest` when it can name the reader's own manifest: a path into the results
    folder (a manifest.py shipped with a crafted run, which the offered command would execute) is
    dropped, and so is anything but a string."""
    if not isinstance(value, str) or not value:
        return None
    if value != (portable := portable_manifest(value)):  # the sim's, as an older run.json names it
        return portable
    try:
        path = Path(os.path.abspath(value))
        results = Path(os.path.abspath(run_dir)).parent
    except (OSError, ValueError):
        return None
    return None if path == results or results in path.parents else value


def record_repro(record: CaseRecord, run: Run, manifest: str | None) -> str:
    """`repro_command` for a run's record; `manifest` is the `--manifest` value as given. The line
    runs as pasted in the folder the run was made from: it sets the sim's variables the run had
    (results/repro/sim_env.py), and a manifest path the scrubber must hide is quoted (`shell_path`)."""
    level = record.level
    claimed = run.manifest.semantic_level if run.manifest is not None else None
    above = isinstance(level, int) and isinstance(claimed, int) and level > claimed
    repeat = repro_repeat(record)  # a flaky case under --repeat: one run would most likely pass
    return sim_env.shell_prefix(run) + repro_command(
        record.id, run.device_type or "DEVICE", bool(run.validation),
        manifest=manifest, sample=failing_sample(record.info), level=level if above else None,
        quote_path=shell_path) + (f" --repeat {repeat}" if repeat else "")


def repro_script_command(case_id: str, run_dir: str) -> str:
    """One line that writes a standalone script reproducing this case from this run folder."""
    return f"torchcts repro {shlex.quote(case_id)} --run {shell_path(run_dir)}"


def shell_path(path: str) -> str:
    """`path` quoted for the shell so that it stays one argument once scrubbed (results/records/scrub.py): a
    path the scrubber turns into a placeholder (`<path:manifest.py>`, `<tmp>/...`) is quoted even where
    the shell needs no quotes for it, so a pasted line never reads it as a redirection; one the
    scrubber leaves runnable (under the working folder: `./manifest.py`) is quoted as shlex does."""
    quoted = shlex.quote(path)
    return f"'{path}'" if quoted == path and re.search("[<>]", scrub(path)) else quoted
