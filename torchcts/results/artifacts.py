"""Every artifact of a run folder, rebuilt from run.json and cases.jsonl alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchcts.results.summary import render_markdown


def write_artifacts(run_dir: Path, run: dict[str, Any], records: list[dict[str, Any]]) -> None:
    (run_dir / "summary.md").write_text(render_markdown(run, records), encoding="utf-8")
