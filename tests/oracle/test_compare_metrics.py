"""Mismatch metrics: 0-d first index, precision of passing sparse results."""

import torch

from torchcts.oracle.compare import find_mismatch
from torchcts.oracle.tolerances import Tolerance


def test_zero_dim_mismatch_reports_values():
    m = find_mismatch(torch.tensor(1.5), torch.tensor(1.0), Tolerance(1e-5, 1e-5))
    assert m is not None and m.first_index == [] and m.first_actual == 1.5 and m.first_expected == 1.0
    assert "got 1.5, expected 1.0" in m.describe()


def test_max_abs_error_of_sparse_results():
    """Passing comparisons record their precision: sparse outputs are compared densely."""
    from torchcts.oracle.compare import max_abs_error

    dense = torch.tensor([[0.0, 1.5], [2.0, 0.0]])
    assert max_abs_error(dense.to_sparse(), (dense + 0.25).to_sparse()) == 0.25


def test_compare_names_differing_selections_readably(tmp_path):
    """issue 30: differing selections were printed as raw Python dicts."""
    from torchcts.model.selection import Selection
    from torchcts.results.records import rundir
    from torchcts.results.reports.compare import compare_runs, render

    def run(name: str, selection: Selection, validation: bool) -> object:
        path = tmp_path / name
        path.mkdir()
        rundir.write_json_atomic(path / rundir.RUN_JSON, {
            "name": name, "status": "complete", "device": {"type": "cpu", "gate": "cpu", "count": 1, "model": "x"},
            "gate": "cpu", "validation": validation, "selection": selection.to_json()})
        rundir.RecordWriter(path).close()
        return path

    old = run("r1", Selection(ops=["add"], dtypes=["float32"], level=2), False)
    new = run("r2", Selection(ops=["mul"], level=2, shard=(1, 2)), True)
    text = render(compare_runs(old, new))
    assert "note: the runs differ in selection: dtypes float32 vs (all); ops add vs mul; shard (none) vs 1/2\n" in text
    assert "note: the runs differ in validation: no vs yes" in text
    assert "{" not in text and "[" not in text and "'" not in text
    assert "level" not in text and "device" not in text  # only what differs


def test_a_records_mismatch_reads_typed_and_a_wrong_type_reads_as_unset():
    """Reports and triage read a record's mismatch through Mismatch.from_json (issue 52 item 1): what
    TorchCTS wrote reads back equal; a crafted field of the wrong type reads as unset, never a crash."""
    from torchcts.oracle.mismatch import Mismatch

    m = Mismatch(what="values differ", max_abs_error=0.5, max_rel_error=0.25, mismatched=2, total=8, first_index=[1],
                 first_actual=1.5, first_expected=1.0, atol=1e-5, rtol=1e-3, extra={"max_abs_expected": 2.0})
    assert Mismatch.from_json(m.to_json()) == m
    crafted = Mismatch.from_json({"what": 5, "max_abs_error": "big", "total": True, "first_index": "0", "extra": [1]})
    assert crafted is not None
    assert (crafted.what, crafted.max_abs_error, crafted.total, crafted.first_index, crafted.extra) == ("", None, None, None, {})
    assert Mismatch.from_json(None) is None and Mismatch.from_json({}) is None and Mismatch.from_json("x") is None
