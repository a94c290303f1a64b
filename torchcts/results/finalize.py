"""Closing a run folder: totals, the ledger report and the artifacts, all from the records.

Called at the end of `torchcts run`, by `torchcts report` for any run (also a killed one), and by
`torchcts merge` for the joined shards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchcts.compat import describe_fallbacks
from torchcts.results import rundir
from torchcts.results.artifacts import write_artifacts
from torchcts.results.ledger import report_for_run
from torchcts.results.summary import totals


def finalize(run_dir: Path, status: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Totals and artifacts from the records; run.json marked complete or interrupted.

    Returns (run.json, the final records) so the scorecard and the comparison with the previous run
    reuse the records read here instead of parsing cases.jsonl again."""
    run = rundir.read_run(run_dir)
    records = rundir.final_records(run_dir)  # the last record of a case supersedes (reruns, crashes)
    run.update(status=status, ended=run.get("ended") or rundir.utc_now(), totals=totals(records))
    run["compat_fallbacks"] = describe_fallbacks(
        {*run.get("compat_fallbacks", {}), *(n for r in records for n in r.get("compat_fallbacks") or ())})
    run["ledger"] = report_for_run(run, records)
    rundir.write_json_atomic(run_dir / rundir.RUN_JSON, run)
    write_artifacts(run_dir, run, records)
    return run, records
