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
