"""Every artifact of a run folder, rebuilt from run.json and cases.jsonl alone.

This is the single place artifacts are written, by `run` at the end and by `report` for any run
(also a killed one). A new artifact is one entry in ARTIFACTS: a function (run_dir, run, records).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchcts.results.records import CaseRecord
from torchcts.results.scrub import scrub_obj
from torchcts.safe_io import write_atomic

Records = list[CaseRecord]


def _text(name: str, render: Callable[[dict[str, Any], Records], str]) -> Callable[[Path, dict[str, Any], Records], None]:
    def write(run_dir: Path, run: dict[str, Any], records: Records) -> None:
        write_atomic(run_dir, name, render(run, records))

    write.__name__ = f"write_{name.replace('.', '_')}"
    return write


def _summary(run: dict[str, Any], records: Records) -> str:
    from torchcts.results.summary import render_markdown

    return render_markdown(run, records)


def _junit(run: dict[str, Any], records: Records) -> str:
    from torchcts.results.junit import render_junit

    return render_junit(run, records)


def _html(run_dir: Path, run: dict[str, Any], records: Records) -> None:
    """report.html links the repro scripts it finds in the run folder, so it gets the folder."""
    from torchcts.results.html import render_html

    write_atomic(run_dir, "report.html", render_html(run, records, run_dir))


# The repro/ folder (scripts per failure) plugs in here as one more entry.
ARTIFACTS: list[Callable[[Path, dict[str, Any], Records], None]] = [
    _text("summary.md", _summary),
    _text("junit.xml", _junit),
    _html,
]


def write_artifacts(run_dir: Path, run: dict[str, Any], records: Records) -> None:
    """Data is scrubbed before rendering (a downloaded run may hold anything), then each format
    quotes it (results/quoting.py): scrubbing rendered HTML or Markdown would break its escaping."""
    run = scrub_obj(run)
    records = [CaseRecord.from_json(scrub_obj(r.to_json())) for r in records]
    for write in ARTIFACTS:
        write(run_dir, run, records)
