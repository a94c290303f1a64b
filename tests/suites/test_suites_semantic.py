"""The hand-written semantic suites: clean on CPU validation, selectable by level and suite, and
pair-dtype cases need both dtypes claimed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from helpers.runs import latest_run, records, run_cli

from torchcts.cases.api import CaseSet
from torchcts.cases.registry import SUITES, iter_cases
from torchcts.engine.selection import claim_decision, select
from torchcts.manifest.templates import validation_manifest
from torchcts.model.selection import Selection

MINE = ("operators", "strides", "dtypes", "errors", "rng", "serialization", "autograd")


def test_suites_registered_with_levels_and_oracles() -> None:
    assert set(MINE) <= set(SUITES)
    ids = Counter()
    for case in iter_cases(list(MINE)):
        ids[case.id] += 1
        assert case.id.startswith(case.suite + "/")
        assert 1 <= case.level <= 5 and case.oracle and case.runner
    assert all(n == 1 for n in ids.values()), [i for i, n in ids.items() if n > 1][:5]
    by_suite = Counter(i.split("/")[0] for i in ids)
    assert all(by_suite[s] >= 20 for s in MINE), by_suite


def test_validation_float32_is_clean(tmp_path: Path) -> None:
    suites = [a for s in MINE for a in ("--suite", s)]
    r = run_cli("run", "--validation", *suites, "--dtype", "float32", "--", "-q", "-p", "no:cacheprovider",
                cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    recs = records(latest_run(tmp_path))
    statuses = Counter(rec["status"] for rec in recs)
    assert set(statuses) <= {"passed", "not_applicable"}, statuses
    passed = Counter(rec["suite"] for rec in recs if rec["status"] == "passed")
    assert all(passed[s] > 0 for s in MINE), passed


def test_pair_case_needs_both_dtypes_claimed() -> None:
    cs = CaseSet("dtypes")
    cs.case("promotion/add", level=3, dtypes=[("float16", "int32")])(lambda ctx, dtype, dtypes: None)
    (case,) = cs.cases()
    assert case.id == "dtypes/promotion/add/float16-int32" and case.dtype == "float16"
    assert case.dtypes == ("float16", "int32") and case.params["dtypes"] == ["float16", "int32"]
    m = validation_manifest()
    assert claim_decision(case, m).status == "run"
    m.supported_dtypes["int32"] = False
    decision = claim_decision(case, m)
    assert decision.status == "not_claimed" and "int32" in decision.reason


@pytest.mark.parametrize(("sel", "levels"), [
    (Selection(suites=["strides"], level_exact=5), {5}),
    (Selection(suites=["dtypes"], level_range=(2, 2)), {2}),
    (Selection(suites=["autograd"], level=3), {3}),
    (Selection(suites=["operators"], level=1), {1}),
])
def test_level_and_suite_selection(sel: Selection, levels: set[int]) -> None:
    result = select(iter_cases(sel.suites), validation_manifest(), sel)
    assert result.to_run and {c.level for c in result.to_run} == levels
    assert {c.suite for c in result.to_run} == set(sel.suites)
    assert result.filtered > 0


def test_show_skips_lists_unclaimed(tmp_path: Path) -> None:
    r = run_cli("init", "--template", "minimal", "--backend", "cpu", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_cli("show-skips", "--device", "cpu", "--suite", "dtypes", "--suite", "rng", "--level", "3", "--details",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    # the summary first: counts per unclaimed dtype and capability (results/reports/skips.py)
    summary = out.split("(--details")[0] if "(--details" in out else out.split("dtypes/")[0]
    assert "not claimed, by capability" in summary and "  rng" not in summary.split("by capability")[0]
    assert "float16" in summary.split("by capability")[0]
    # minimal claims float32/int64/bool and not rng: a pair with an unclaimed dtype is listed
    assert "dtypes/promotion/add/float32-float16  (dtype float16 not in supported_dtypes)" in out
    assert "rng/manual_seed/rand/float32  (capability 'rng' not claimed)" in out
    assert "dtypes/promotion/add/float32-int64" not in out
