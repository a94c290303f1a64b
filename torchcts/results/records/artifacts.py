"""Every artifact of a run folder, rebuilt from run.json and cases.jsonl alone.

This is the single place artifacts are written, by `run` at the end and by `report` for any run
(also a killed one). A new artifact is one entry in ARTIFACTS: a function (run_dir, run, records).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.results.records.scrub import scrub_obj
from torchcts.safe_io import write_atomic

Records = list[CaseRecord]


def _text(name: str, render: Callable[[Run, Records], str | Iterable[str]]) -> Callable[[Path, Run, Records], None]:
    def write(run_dir: Path, run: Run, records: Records) -> None:
        write_atomic(run_dir, name, render(run, records))

    write.__name__ = f"write_{name.replace('.', '_')}"
    return write


def _summary(run: Run, records: Records) -> str:
    from torchcts.results.reports.summary import render_markdown

    return render_markdown(run, records)


def _junit(run: Run, records: Records) -> Iterable[str]:
    from torchcts.results.reports.junit import iter_junit

    return iter_junit(run, records)  # written piece by piece: one test case's XML at a time


def _html(run_dir: Path, run: Run, records: Records) -> None:
    """report.html links the repro scripts it finds in the run folder, so it gets the folder."""
    from torchcts.results.reports.html import render_html

    write_atomic(run_dir, "report.html", render_html(run, records, run_dir))


# The repro/ folder (scripts per failure) plugs in here as one more entry.
ARTIFACTS: list[Callable[[Path, Run, Records], None]] = [
    _text("summary.md", _summary),
    _text("junit.xml", _junit),
    _html,
]
# The files ARTIFACTS write, in its order: what a failed rebuild must not leave stale.
ARTIFACT_FILES = ("summary.md", "junit.xml", "report.html")


class StaleArtifacts(OSError):
    """A rebuild that the file system stopped (a full disk): the reports it could not rewrite were
    removed, so no report from an earlier rebuild is read as this one. Keeps the errno and
    filename of the cause, so the CLI names the problem (free space) with exit 2."""


def write_artifacts(run_dir: Path, run: Run, records: Records) -> None:
    """Data is scrubbed before rendering (a downloaded run may hold anything), then each format
    quotes it (results/reports/quoting.py): scrubbing rendered HTML or Markdown would break its escaping."""
    run = run.scrubbed(scrub_obj)
    records = [_scrubbed(r) for r in records]
    for done, write in enumerate(ARTIFACTS):
        try:
            write(run_dir, run, records)
        except OSError as exc:
            removed = _remove_stale(run_dir, ARTIFACT_FILES[done:])
            gone = f"; {', '.join(removed)} from an earlier rebuild removed (stale)" if removed else ""
            raise StaleArtifacts(exc.errno, f"{exc.strerror or exc}{gone}; rerun `torchcts report` once there "
                                 "is space", exc.filename) from exc


def _scrubbed(record: CaseRecord) -> CaseRecord:
    """The record scrubbed: itself when scrubbing changes nothing (most records), so a report of
    10^6 records holds them once, not twice."""
    data = record.to_json()
    clean = scrub_obj(data)
    return record if clean == data else CaseRecord.from_json(clean)


def _remove_stale(run_dir: Path, names: tuple[str, ...]) -> list[str]:
    """Remove the reports this rebuild did not rewrite (never through a link: unlink removes the link)."""
    removed = []
    for name in names:
        try:
            (run_dir / name).unlink()
            removed.append(name)
        except FileNotFoundError:
            continue
        except OSError:  # cannot even remove it: the message still says it was not rebuilt
            continue
    return removed
