"""Repro scripts rebuild each argument exactly, and failures say where to start debugging."""

from __future__ import annotations

import io
import json
import re
import runpy

import pytest
import torch

from torchcts.cases import repro_builders
from torchcts.cases.repro_builders import ReproSpec, has_script
from torchcts.manifest.templates import cpu_manifest
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.oracle.compare import find_mismatch
from torchcts.oracle.tolerances import Tolerance
from torchcts.results.records import rundir
from torchcts.results.reports.failure import details
from torchcts.results.reports.html import render_html
from torchcts.results.reports.scorecard import print_scorecard
from torchcts.results.reports.summary import render_markdown
from torchcts.results.repro.commands import record_repro
from torchcts.results.repro.script import ReproTarget, write_repro

CASE = Case(id="planted/strided_add/float32", suite="planted", level=1, runner="tests.fake:strided_add",
            dtype="float32", ops=("aten::add_.Tensor",))


def _strided_sample() -> dict:
    base = torch.arange(40.0)
    a = base[2:].as_strided((3, 4), (1, 6), 3)  # offset, transposed-like strides
    b = base[5:17].view(3, 4)  # overlaps a's storage: aliasing
    return {"args": [a, b], "kwargs": {}, "describe": {"sample": 7}}


@pytest.fixture
def script(tmp_path, monkeypatch):
    def build(case, manifest, record, sample=None):  # noqa: ANN001,ANN202
        return ReproSpec("torch.Tensor.add_", [_strided_sample()], 1e-5, 1e-6, kind="inplace")

    monkeypatch.setitem(repro_builders.BY_RUNNER, "tests.fake:*", build)
    folder = write_repro(ReproTarget(CASE, "cpu", cpu_manifest(), None, None, tmp_path / "repro"))
    return folder / "repro.py"


def test_the_script_rebuilds_strides_offsets_and_aliasing(script):
    ns = runpy.run_path(str(script), run_name="repro")
    (saved,) = torch.load(script.parent / "inputs.pt", weights_only=False)
    a, b = ns["place"](saved["args"], "cpu")
    ref = _strided_sample()["args"]
    assert a.stride() == (1, 6) and a.storage_offset() == ref[0].storage_offset() == 3
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()  # still one storage
    assert a.untyped_storage().data_ptr() != saved["args"][0].untyped_storage().data_ptr()  # a fresh copy
    assert torch.equal(a, ref[0]) and torch.equal(b, ref[1])
    assert saved["describe"]["args"][0] == "float32[3, 4] strides=[1, 6] offset=3"
    with pytest.raises(SystemExit) as done:  # CPU against CPU: the in-place op agrees, aliasing included
        runpy.run_path(str(script), run_name="__main__")
    assert done.value.code == 0


def test_only_cases_with_a_builder_and_a_value_oracle_advertise_a_script():
    opinfo = Case(id="opinfo/mul/float32/forward", suite="opinfo", level=2, runner="torchcts.cases.opinfo.run:run")
    assert has_script(opinfo)
    assert not has_script(Case(**{**opinfo.__dict__, "oracle": "property:random"}))
    assert not has_script(Case(id="strides/noncontig/transposed/mul/float32", suite="strides", level=3,
                               runner="torchcts.cases.suites.strides:noncontig"))


def test_repro_line_names_the_manifest_level_and_sample():
    spec = Run.from_json({"device": {"type": "sim"}, "manifest": {"semantic_level": 3}, "validation": False})
    record = CaseRecord.from_json({"id": "opinfo/mul/float32/noncontiguous", "level": 5, "status": "failed",
                                   "info": {"sample_index": 1}})
    line = record_repro(record, spec, "my dir/manifest.py")
    assert line == ("torchcts run --device sim --manifest 'my dir/manifest.py' "
                    "--case opinfo/mul/float32/noncontiguous --level 5 --sample 1")
    assert record_repro(CaseRecord(id="x/y", level=1), spec, None) == "torchcts run --device sim --case x/y"


def test_repro_run_accepts_a_results_folder(tmp_path):
    run = tmp_path / "results" / "20260101T000000Z-aaaaaa"
    run.mkdir(parents=True)
    rundir.write_json_atomic(run / rundir.RUN_JSON, {"name": run.name})
    rundir.point_latest(tmp_path / "results", run)
    assert rundir.resolve_run(str(tmp_path / "results"), tmp_path / "elsewhere") == run
    assert rundir.resolve_run(str(run)) == run


def test_relative_error_is_meaningful_when_expected_is_zero():
    m = find_mismatch(torch.tensor([3.2e-4, 1.0]), torch.tensor([0.0, 1.0]), Tolerance(1e-5, 1e-6))
    assert m is not None and m.max_rel_error is None and m.max_abs_error == pytest.approx(3.2e-4)
    text = m.describe()
    assert "e+308" not in text and "every differing element expects 0, the largest |expected| is 1" in text
    m = find_mismatch(torch.tensor([3.2e-4, 2.0]), torch.tensor([0.0, 1.0]), Tolerance(1e-5, 1e-6))
    assert m.max_rel_error == pytest.approx(1.0)  # over the elements that expect a non-zero value


def test_layouts_are_named_when_strides_shape_or_dtype_differ():
    x = torch.randn(3, 4)
    m = find_mismatch(x.t().contiguous() + 1, x.t(), Tolerance(1e-5, 1e-6))
    assert "got float32[4, 3] strides [3, 1], expected float32[4, 3] strides [1, 4]" in m.describe()
    m = find_mismatch(torch.zeros(2, 3), torch.zeros(3, 2), Tolerance(1e-5, 1e-6))
    assert m.what == "shape mismatch" and "got float32[2, 3] strides [3, 1], expected float32[3, 2]" in m.describe()


FAILED = CaseRecord.from_json({"id": "opinfo/mul/float32/noncontiguous", "suite": "opinfo", "status": "failed",
          "dtype": "float32", "kind": "noncontiguous", "ops": ["aten::mul"], "level": 5, "op": "mul",
          "message": "values differ: 4/5 elements differ, max abs error 3.2e-4, no rel error (every differing element "
                     "expects 0)", "mismatch": {"max_abs_error": 3.2e-4, "mismatched": 4, "total": 5},
          "info": {"op": "mul", "variant": "", "sample_index": 1,
                   "sample": "(Tensor[5] float32 strides=(2,) offset=1, Tensor[] float32)"}})


def test_a_failure_shows_op_dtype_and_sample_everywhere(tmp_path):
    lines = details(FAILED)
    assert lines == ["op mul (aten::mul), dtype float32, kind noncontiguous",
                     "sample 1: (Tensor[5] float32 strides=(2,) offset=1, Tensor[] float32)"]
    run = Run.from_json({"name": "r", "device": {"type": "sim"}, "gate": "g", "status": "complete",
                                "totals": {"failed": 1}})
    summary = render_markdown(run, [FAILED])
    page = render_html(run, [FAILED])
    rundir.write_run(tmp_path, run)
    (tmp_path / "cases.jsonl").write_text(json.dumps(FAILED.to_json()) + "\n")
    out = io.StringIO()
    print_scorecard(tmp_path, run, out)
    for text in (summary.replace("\\", ""), page, out.getvalue()):  # Markdown escapes [ and ]
        assert all(line in text for line in lines), text
    assert "n/a (expected 0)" in page and "e+308" not in page


def test_the_script_measures_a_difference_as_the_record_does(tmp_path):
    """pytorch_ocl's sigmoid of int32 into a float32 out= gave NaNs: the record said "max abs error
    inf", the repro script its own copy's "nan". The script now runs the oracle's metrics.py source."""
    from torchcts.results.repro.body import BODY
    from torchcts.results.repro.script import shared_source

    (tmp_path / "body.py").write_text(shared_source() + BODY)
    script = runpy.run_path(str(tmp_path / "body.py"), {"ATOL": 1e-5, "RTOL": 1.3e-6, "HOST": "host", "FORMAT": "f"})
    pairs = [(torch.tensor([0.5, float("nan"), 0.25]), torch.tensor([0.5, 0.27, 0.0])),
             (torch.tensor([1.0, float("inf"), 3.0]), torch.tensor([1.0, 2.0, 3.5])),
             (torch.tensor([1e3 + 1e-3, 1e-4]), torch.tensor([1e3, 0.0])),  # the larger difference within tolerance
             (torch.tensor([1 + 2j, 3 - 1j]), torch.tensor([1 + 2j, 3 + 1j]))]
    for actual, expected in pairs:
        record = find_mismatch(actual, expected, Tolerance(1e-5, 1.3e-6)).describe()
        said = script["compare"](actual, expected, "output")
        assert re.search(r"max abs error (\S+),", record)[1] == re.search(r"max abs error (\S+),", said)[1], (record, said)
        rel = re.search(r"max rel error (\S+) ", record)
        assert (rel[1] if rel else "n/a") == re.search(r"max rel error (\S+) ", said)[1], (record, said)
        assert record.split(" elements differ")[0] in said


def test_the_script_copies_a_sample_as_the_run_did(tmp_path):
    """The script rebuilt every input over a flat copy of its storage (so a view at an offset kept it)
    where the run's copy did not: a layout the run never sent could pass or fail there alone. It now
    runs the OpInfo suite's own copier (cases/opinfo/copier.py)."""
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.cases.opinfo.samples import copy_sample
    from torchcts.results.repro.body import BODY
    from torchcts.results.repro.script import shared_source

    (tmp_path / "body.py").write_text(shared_source() + BODY)
    script = runpy.run_path(str(tmp_path / "body.py"), {"ATOL": 0.0, "RTOL": 0.0, "KIND": "call", "HOST": "host", "FORMAT": "f",
                                                         "MEMORY_FORMATS": ()})
    base = torch.arange(24.0)
    alone = torch.arange(10.0)[2:8]  # a view at an offset that shares with nothing: copied plainly by the run
    inputs = [base[3:9], base.view(4, 6).t(), base[::2], torch.randn(3, dtype=torch.complex64).conj(), alone]
    out = base[:6]  # shares the storage of the first three
    sample = SampleInput(inputs[0], args=tuple(inputs[1:]), kwargs={"out": out})
    run = copy_sample(sample, "cpu")
    args, kwargs = script["place"](([sample.input, *sample.args], dict(sample.kwargs)), "cpu")
    for mine, theirs in zip([run.input, *run.args, run.kwargs["out"]], [*args, kwargs["out"]], strict=True):
        assert (mine.shape, mine.stride(), mine.storage_offset(), mine.dtype) == \
               (theirs.shape, theirs.stride(), theirs.storage_offset(), theirs.dtype)
        assert torch.equal(mine, theirs)
    assert args[0].untyped_storage().data_ptr() == kwargs["out"].untyped_storage().data_ptr()  # aliasing kept
    # an out= kind's destination is sent over its whole storage, at its offset, as out_layouts.on_device does
    from torchcts.cases.opinfo import out_layouts

    dest = out_layouts.destinations(torch.empty(2, 3), "offset")
    outs = runpy.run_path(str(tmp_path / "body.py"), {"KIND": "out", "HOST": "host", "FORMAT": "f", "MEMORY_FORMATS": (),
                                                       "OP": torch.add})
    _, kwargs, _ = outs["call"]({"args": [torch.ones(2, 3), 1.0], "kwargs": {"out": dest}}, "cpu")
    run_dest = out_layouts.on_device(dest, "cpu")
    assert kwargs["out"].storage_offset() == run_dest.storage_offset() == dest.storage_offset() > 0
    assert kwargs["out"].untyped_storage().nbytes() == run_dest.untyped_storage().nbytes()


@pytest.mark.parametrize("edit", [{"drop": "capabilities"}, {"add": "a_newer_key"}])
def test_a_run_whose_claims_are_incomplete_writes_no_script(workdir, cli, capsys, edit):
    """The repro script runs with the run's claims (model/run.py types them with defaults for what
    an older run lacks): claims missing a key Manifest needs, or holding one it has no field for,
    write no script that would run with claims of nothing; one line, exit 2."""
    from helpers.crafted import case_json, failed, fake_run

    case = "operators/elementwise/add/float32"
    run_dir = fake_run(workdir, "r", [failed(case, "boom")], plan=[case_json(case)])
    data = json.loads((run_dir / "run.json").read_text())
    data["manifest"].pop(edit.get("drop", ""), None)
    if "add" in edit:
        data["manifest"][edit["add"]] = 1
    (run_dir / "run.json").write_text(json.dumps(data))
    assert cli(["repro", case, "--run", str(run_dir)]) == 2
    assert "r/run.json holds no valid manifest" in capsys.readouterr().err
    assert not (run_dir / "repro").exists()
