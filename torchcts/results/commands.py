"""The commands a report offers for a record, rebuilt from validated fields, never copied from it.

A record's stored `repro` / `repro_script` strings are data anyone can craft (issue 31): shown as
they are, a downloaded run folder would offer its reader an attacker's command to paste. So every
report (terminal, summary.md, report.html, junit.xml) shows commands rebuilt here from the record's
id, level and failing sample and run.json's device, validation flag and `--manifest` value, each
argument quoted for the shell (`cases/model.py: repro_command`); a stored command is only a sign
that the record had one. A `--manifest` naming a file inside the results folder is never offered
(the command would execute a manifest that came with the run). Each command runs as pasted in the
folder the run was made from (the results folder's parent): paths the scrubber hides are quoted,
never a shell redirection, a manifest inside the package is `torchcts:REL`, and a sim run's line
sets the sim's variables it had (tests/test_copied_commands.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from torchcts.manifest.load import portable_manifest
from torchcts.results.outcome import RunOutcome
from torchcts.results.records import CaseRecord, record_repro, repro_script_command, shell_path
from torchcts.results.scrub import scrub


def offered_commands(record: CaseRecord, run: RunOutcome, run_dir: Path,
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
