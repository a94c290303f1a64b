"""What the Recorder adds to records (ledger by OpInfo name, flaky on rerun) and repro builders."""

from __future__ import annotations

import json
import runpy
import shlex
import sys
import types
from pathlib import Path

import pytest
import torch

from torchcts.cases.repro_builders import builder_for, callable_expression
from torchcts.errors import UsageError
from torchcts.manifest.templates import cpu_manifest
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.results.ledger.annotate import RecordAnnotator
from torchcts.results.records import rundir
from torchcts.results.records.plan import write_plan
from torchcts.results.repro.script import ReproTarget, write_repro

RELU = Case(id="opinfo/nn.functional.relu/float32/forward", suite="opinfo", level=2, runner="torchcts.cases.opinfo:run",
            params={"op": "nn.functional.relu", "dtype": "float32"}, ops=("aten::relu",), dtype="float32", kind="forward")


def _run_dir(tmp_path: Path, entries: list, records: list | None = None) -> Path:
    run = {"name": "r1", "started": "2026-11-30T00:00:00Z", "device": {"type": "npu"},
           "manifest": {"expectations": entries}}
    (tmp_path / "run.json").write_text(json.dumps(run))
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records or []))
    write_plan(tmp_path, [RELU])
    return tmp_path


def _failing() -> dict:
    return {"id": RELU.id, "suite": "opinfo", "ops": ["aten::relu"], "dtype": "float32", "kind": "forward",
            "status": "error", "message": "RuntimeError: boom", "exception": "RuntimeError",
            "repro": f"torchcts run --device npu --case {RELU.id}"}


def test_ledger_selector_matches_the_opinfo_name_from_the_plan(tmp_path):
    entries = [{"match": {"op": "nn.functional.*"}, "status": "xfail", "reason": "r", "signature": "RuntimeError"}]
    run_dir = _run_dir(tmp_path, entries)
    annotate = RecordAnnotator(rundir.read_run(run_dir), run_dir)
    out = annotate(CaseRecord.from_json(_failing()))
    assert out.status == "xfailed" and out.op == "nn.functional.relu"
    # a path the scrubber would hide is quoted (records.py: shell_path): the words are what count
    assert shlex.split(out.repro_script) == ["torchcts", "repro", RELU.id, "--run", str(run_dir)]


def test_a_rerun_pass_after_a_failure_is_flaky(tmp_path):
    first = {**_failing(), "signature": "RuntimeError: boom"}
    run_dir = _run_dir(tmp_path, [], records=[first])
    annotate = RecordAnnotator(rundir.read_run(run_dir), run_dir, attempt=2)
    passed = {k: v for k, v in _failing().items() if k not in ("message", "exception", "repro")}
    out = annotate(CaseRecord.from_json({**passed, "status": "passed"}))
    assert out.status == "flaky" and out.attempt == 2
    assert out.first_failure["signature"] == "RuntimeError: boom" and out.repro == first["repro"]
    again = annotate(CaseRecord.from_json(_failing()))
    assert again.status == "error" and again.attempt == 2


def test_callable_expressions_resolve_to_the_same_object():
    for fn in (torch.add, torch.Tensor.add_, torch.nn.functional.relu, torch.special.erf, torch.linalg.norm):
        expr = callable_expression(fn)
        assert expr is not None and eval(expr, {"torch": torch}) is fn, fn  # noqa: S307
    assert callable_expression(lambda x: x) is None


def test_opinfo_repro_script_runs_the_real_sample_and_passes_on_a_correct_device(tmp_path):
    """Through the suite's real materialize(): the script's inputs are the case's own sample."""
    from torchcts.cases.opinfo import materialize

    case = Case(**{**RELU.__dict__, "params": {"op": "nn.functional.relu", "variant": "", "kind": "forward",
                                               "dtype": "float32"}})
    record = CaseRecord.from_json({"id": RELU.id, "status": "failed", "message": "values differ",
                                   "info": {"sample_index": 1}})
    folder = write_repro(ReproTarget(case, "cpu", cpu_manifest(), record, "r1", tmp_path / "repro"))
    text = (folder / "repro.py").read_text()
    assert "OP = torch.nn.functional.relu" in text and "import torchcts" not in text
    _, _, args, _ = materialize(case.params, 1, "float32")
    saved = torch.load(folder / "inputs.pt", weights_only=False)[0]["args"][0]
    assert torch.equal(saved, args[0]) and saved.numel() > 1
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(folder / "repro.py"), run_name="__main__")
    assert done.value.code == 0


def test_opinfo_without_an_importable_callable_or_without_a_builder_is_a_clear_usage_error(monkeypatch):
    import torchcts.cases.opinfo.confined  # noqa: F401 - imported before the package is replaced below
    import torchcts.cases.opinfo.samples  # noqa: F401

    def materialize(params, index, dtype, device=None, **_kwargs):  # confined=: special_values
        return "lambda", (lambda x: x.relu()), (torch.ones(2),), {}

    monkeypatch.setitem(sys.modules, "torchcts.cases.opinfo", types.SimpleNamespace(materialize=materialize))
    with pytest.raises(UsageError, match="no importable name"):
        builder_for(RELU)(RELU, cpu_manifest(), None)
    other = Case(id="strides/clone/float32", suite="strides", level=5, runner="m:f")
    with pytest.raises(UsageError, match="no standalone repro builder"):
        builder_for(other)
