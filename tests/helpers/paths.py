"""Where the project's tests find things, whatever folder a test module sits in."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]  # tests/: on PYTHONPATH for subprocesses importing helpers.*
HELPERS = TESTS / "helpers"
REPO = TESTS.parent
DOCS = REPO / "docs"
