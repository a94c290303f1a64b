"""`torchcts compare OLD NEW` across a torch upgrade (issue 49): what follows the torch, what is the backend's."""

from __future__ import annotations

from pathlib import Path

from torchcts.model.record import CaseRecord
from torchcts.results.records import rundir
from torchcts.results.reports.compare import compare_runs, render


def _run(root: Path, name: str, torch_version: str, records: list[CaseRecord]) -> Path:
    path = root / name
    path.mkdir(parents=True)
    rundir.write_json_atomic(path / rundir.RUN_JSON, {
        "name": name, "status": "complete", "device": {"type": "npu", "gate": "npu", "count": 1, "model": "x"},
        "gate": "npu", "validation": False, "torch": {"torch": torch_version, "family": "cpu"}})
    writer = rundir.RecordWriter(path)
    for r in records:
        writer.append(r)
    writer.close()
    return path


def _rec(cid: str, status: str, samples: int | None = None, op: str | None = None) -> CaseRecord:
    return CaseRecord(id=cid, status=status, op=op or cid.split("/")[1],
                      info={"samples_run": samples} if samples is not None else None)


def test_upgrade_separates_the_backends_regressions_from_what_follows_the_torch(tmp_path):
    old = _run(tmp_path, "r213", "2.13.0+cpu", [
        _rec("opinfo/add/float32/forward", "passed", 10),      # same samples, now fails: the backend's
        _rec("opinfo/addcmul/float32/forward", "passed", 12),  # samples changed, now fails: follows torch
        _rec("opinfo/cholesky/float32/forward", "passed", 5),  # gone with 2.14
        _rec("opinfo/mul/float32/forward", "passed", 8),       # unchanged
        _rec("opinfo/sub/float32/forward", "failed", 4),       # failed before too: neither list
        _rec("opinfo/div/float32/forward", "failed", 4),       # fixed by the upgrade: neither list
    ])
    new = _run(tmp_path, "r215", "2.15.0+cu132", [
        _rec("opinfo/add/float32/forward", "failed", 10),
        _rec("opinfo/addcmul/float32/forward", "failed", 14),
        _rec("opinfo/linalg.polar/float32/forward", "failed", 3),  # new OpInfo, fails: follows torch
        _rec("opinfo/mul/float32/forward", "passed", 8),
        _rec("opinfo/sub/float32/forward", "error", 4),
        _rec("opinfo/div/float32/forward", "passed", 4),
        _rec("opinfo/bcomplex_view/float32/forward", "passed", 2),  # new and passing: new case, no failure
    ])
    c = compare_runs(old, new)
    up = c.upgrade
    assert up is not None and (up.old_torch, up.new_torch) == ("2.13.0+cpu", "2.15.0+cu132")
    assert up.regressions == ["opinfo/add/float32/forward"]
    assert up.follows_upgrade == ["opinfo/addcmul/float32/forward", "opinfo/linalg.polar/float32/forward"]
    assert up.removed_ops == ["cholesky"] and up.new_ops == ["bcomplex_view", "linalg.polar"]
    assert up.changed_samples == [("opinfo/addcmul/float32/forward", 12, 14)]
    assert up.gone_cases == ["opinfo/cholesky/float32/forward"]
    assert up.new_cases == ["opinfo/bcomplex_view/float32/forward", "opinfo/linalg.polar/float32/forward"]
    assert [x.id for x in c.changed_failures] == ["opinfo/sub/float32/forward"]  # compare's own, not the upgrade's
    assert [x.id for x in c.fixes] == ["opinfo/div/float32/forward"]
    text = render(c)
    assert "torch upgrade 2.13.0+cpu -> 2.15.0+cu132" in text
    assert "the backend's regressions (same case, same samples, now failing): 1\n    opinfo/add/float32/forward" in text
    assert "ops removed with the torch: 1\n    cholesky" in text
    assert "opinfo/addcmul/float32/forward: 12 -> 14" in text


def test_same_torch_has_no_upgrade_section(tmp_path):
    old = _run(tmp_path, "a", "2.15.0+cu132", [_rec("opinfo/add/float32/forward", "passed", 1)])
    new = _run(tmp_path, "b", "2.15.0+cu132", [_rec("opinfo/add/float32/forward", "failed", 1)])
    c = compare_runs(old, new)
    assert c.upgrade is None and "torch upgrade" not in render(c) and len(c.new_failures) == 1
