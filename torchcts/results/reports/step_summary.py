"""The run's summary on the CI page: GitHub Actions shows Markdown appended to the file named by
GITHUB_STEP_SUMMARY on the job's page, so `run` (and `merge`, for a fan-in job) append summary.md.

Capped below GitHub's 1 MiB per step: past it GitHub drops the whole summary with an error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

ENV = "GITHUB_STEP_SUMMARY"
LIMIT_BYTES = 512 * 1024


def append_step_summary(run_dir: Path, env: Mapping[str, str] = os.environ) -> bool:
    """Append the run's summary.md where GITHUB_STEP_SUMMARY points; False when it is unset. A file
    that cannot be written is one warning: the run's verdict never depends on it."""
    target = env.get(ENV, "").strip()
    summary = run_dir / "summary.md"
    if not target or not summary.is_file():
        return False
    text = summary.read_text(encoding="utf-8", errors="replace")
    data = text.encode("utf-8")
    if len(data) > LIMIT_BYTES:
        text = data[:LIMIT_BYTES].decode("utf-8", "ignore").rsplit("\n", 1)[0]
        text += f"\n\n(cut at {LIMIT_BYTES // 1024} KiB: the whole summary.md is in the run folder)"
    try:
        with open(target, "a", encoding="utf-8") as out:
            out.write(text.rstrip("\n") + "\n\n")
    except OSError as exc:
        print(f"torchcts: warning: cannot append the summary to {ENV}: {exc.strerror or exc}", file=sys.stderr)
        return False
    return True
