"""Every reader of a shared artifact, fuzzed: the short form of bench/fuzz_readers.py (issue 41 item 8).

A few hundred generated inputs (mutations of a real sim run, an evidence store, a corpus entry and
manifests; values built from the readers' schemas; byte edits), each fed in-process to the command
that reads it: every answer is exit 0, 1 or 2, with no traceback, no hang and no write outside the
input's own folder. The long form (100,000 inputs) and its figure: docs/security.md.
"""

from __future__ import annotations

import sys

import pytest
from helpers.paths import REPO

sys.path.insert(0, str(REPO / "bench"))
import fuzz_readers  # noqa: E402

INPUTS = 300


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> fuzz_readers.Seeds:
    sys.addaudithook(fuzz_readers._audit)  # inert outside an input (no sandbox set)
    return fuzz_readers.make_seeds(tmp_path_factory.mktemp("seeds"))


def test_every_reader_answers_0_1_or_2(seeds, tmp_path):
    tally = fuzz_readers.fuzz(INPUTS, 0, seeds, tmp_path)
    assert tally.inputs == INPUTS
    assert not tally.failures, [(f["argv"][:2], f["status"], f["output"][-800:]) for f in tally.failures[:3]]
    assert set(tally.statuses) <= {"0", "1", "2"}
    assert {key.split(":")[0] for key in tally.by_target} == set(fuzz_readers.TARGETS)
    assert tally.slowest_s < fuzz_readers.LIMIT_S
    assert fuzz_readers.peak_mb() < 4096


def test_the_harness_sees_a_write_outside_the_input(seeds, tmp_path):
    """The write check is real: a repro told to write elsewhere is caught by the audit hook."""
    box = tmp_path / "box"
    box.mkdir()
    outside = tmp_path / "elsewhere"
    status, text = fuzz_readers.run_one(["repro", seeds.case_id, "--run", str(seeds.run_dir), "-o", str(outside)], box)
    assert status == "wrote outside" and str(outside.resolve()) in text
