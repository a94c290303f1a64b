"""`coverage collect-backend-evidence` on CPU: records, appends, exit status, usage errors, faults."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from torchcts.backends import gates
from torchcts.evidence import promoted
from torchcts.evidence.verify import verify_store

COLLECT = ["coverage", "collect-backend-evidence", "--store", "ev"]


def _records(store: Path, gate: str = "cpu") -> list[dict]:
    return [json.loads(line) for line in (store / f"{gate}.jsonl").read_text().splitlines()]


def test_collect_cpu_appends_anonymous_records(cli, workdir, capsys):
    argv = [*COLLECT, "--device", "cpu", "--backend-gate", "cpu", "--surface", "aten::add.Tensor",
            "--surface", "aten::copy_", "--require-oracle-results", "--fail-on-oracle-failure"]
    assert cli(argv) == 0, capsys.readouterr()
    store = workdir / "ev"
    recs = _records(store)
    assert [r["surface"] for r in recs] == ["aten::add.Tensor", "aten::copy_"]
    add = recs[0]
    assert add["result"]["status"] == "passed" and add["gate"] == "cpu" and add["run_status"] == "complete"
    assert add["registration"]["kernel"] == "native" and add["kind"] == "functional"
    oracles = {o["id"]: o for o in add["oracles"]}
    assert oracles["operators/elementwise/add"]["promoted"]
    # the OpInfo oracle covers it too, pending until promoted
    assert "opinfo/add/forward" in oracles and not oracles["opinfo/add/forward"]["promoted"]
    assert add["intent"][:4] == ["coverage", "collect-backend-evidence", "--store", "ev"]
    source = json.loads((store / "sources.jsonl").read_text())
    assert add["source"] == source["id"] and source["torch"] == torch.__version__
    assert not {"host", "hostname", "user", "cwd", "env"} & set(source)
    assert str(workdir) not in (store / "cpu.jsonl").read_text()
    # a second collection appends (never rewrites) and the store stays valid
    before = (store / "cpu.jsonl").read_text()
    assert cli([*COLLECT, "--device", "cpu", "--backend-gate", "cpu", "--surface", "aten::neg"]) == 0
    after = (store / "cpu.jsonl").read_text()
    assert after.startswith(before) and len(after.splitlines()) == 3
    assert len((store / "sources.jsonl").read_text().splitlines()) == 2
    assert verify_store(store) == []


def test_default_selection_is_bounded_and_covered(cli, workdir, capsys):
    # oracles not yet promoted are pending: without --run-pending-candidates they give no result
    assert cli([*COLLECT, "--device", "cpu", "--backend-gate", "cpu", "--require-oracle-results"]) == 1
    assert cli([*COLLECT, "--device", "cpu", "--backend-gate", "cpu", "--require-oracle-results",
                "--run-pending-candidates"]) == 0
    recs = [r for r in _records(workdir / "ev") if r["result"]["status"] != "skipped"]
    assert 5 <= len(recs) <= 400
    assert all(r["result"]["status"] == "passed" for r in recs)
    assert "aten::zeros" in {r["surface"] for r in recs}


def test_surface_without_oracle_fails_require(cli, workdir, capsys):
    argv = [*COLLECT, "--device", "cpu", "--backend-gate", "cpu", "--surface", "aten::_cudnn_rnn"]
    assert cli(argv) == 0
    assert cli([*argv, "--require-oracle-results"]) == 1
    assert "no oracle result for aten::_cudnn_rnn" in capsys.readouterr().out
    assert _records(workdir / "ev")[0]["result"] == {"status": "skipped", "reason": "no TorchCTS case covers this surface"}


def test_pending_candidates_skip_unless_asked(cli, workdir, monkeypatch, capsys):
    monkeypatch.setattr(promoted, "PROMOTED", frozenset())
    argv = [*COLLECT, "--device", "cpu", "--backend-gate", "cpu", "--surface", "aten::neg", "--require-oracle-results"]
    assert cli(argv) == 1
    rec = _records(workdir / "ev")[-1]
    assert rec["result"]["status"] == "skipped" and "--run-pending-candidates" in rec["result"]["reason"]
    assert cli([*argv, "--run-pending-candidates"]) == 0
    rec = _records(workdir / "ev")[-1]
    assert rec["result"]["status"] == "passed" and rec["oracles"][0]["promoted"] is False


def test_gate_the_build_cannot_serve_is_not_applicable_never_passed(cli, workdir, monkeypatch, capsys):
    monkeypatch.setitem(gates.GATES, "cpu", dataclasses.replace(gates.GATES["cpu"], build_gap=lambda: "planted gap"))
    argv = [*COLLECT, "--device", "cpu", "--backend-gate", "cpu", "--surface", "aten::add.Tensor"]
    assert cli(argv) == 0
    rec = _records(workdir / "ev")[0]
    assert rec["result"] == {"status": "not_applicable", "reason": "gate cpu: planted gap"} and rec["oracles"] == []
    assert cli([*argv, "--require-oracle-results"]) == 1


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--device", "cuda", "--backend-gate", "cuda+rocm"], "not available in this build"),
        (["--device", "mps", "--backend-gate", "cuda"], "contradicts --device mps"),
        (["--device", "cpu", "--backend-gate", "rocm"], "contradicts --device cpu"),
        (["--validation", "--device", "cpu", "--backend-gate", "cpu"], "never backend evidence"),
        (["--device", "cpu", "--backend-gate", "cpu", "--surface", "aten::nope_nope"], "matches no aten overload"),
        (["--backend-gate", "cpu"], "--device is required"),
    ],
)
def test_usage_errors_write_nothing(cli, workdir, capsys, extra, message):
    assert cli([*COLLECT, *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (workdir / "ev").exists()


def test_seed_command_on_cpu_only_build_is_clean_usage_error(tmp_path):
    from helpers.runs import run_cli

    r = run_cli("coverage", "collect-backend-evidence", "--store", "evidence/backends", "--device", "cuda",
                "--backend-gate", "cuda+rocm", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "cuda" in r.stderr
    assert not (tmp_path / "evidence").exists()


def test_broken_backend_is_recorded_failed_with_metrics(cli, workdir, monkeypatch, capsys):
    """Planted fault: device-to-host copies of floating tensors come back off by one."""
    real_cpu = torch.Tensor.cpu

    def broken_cpu(self, *a, **k):
        out = real_cpu(self, *a, **k)
        return out + 1 if out.is_floating_point() and out.numel() else out

    monkeypatch.setattr(torch.Tensor, "cpu", broken_cpu)
    argv = [*COLLECT, "--device", "cpu", "--backend-gate", "cpu", "--surface", "aten::copy_", "--surface", "aten::neg"]
    assert cli(argv) == 0  # failures are recorded; exit 1 only when asked
    assert cli([*argv, "--fail-on-oracle-failure"]) == 1
    out = capsys.readouterr().out
    assert "FAILED aten::copy_" in out and "oracle failed for aten::copy_" in out
    recs = {r["surface"]: r for r in _records(workdir / "ev")[-2:]}
    bad = recs["aten::copy_"]["result"]
    assert bad["status"] == "failed" and "operators/core/copy_roundtrip" in bad["reason"]
    assert bad["metrics"]["max_abs_error"] == pytest.approx(1.0, rel=1e-2) and bad["metrics"]["mismatched"] >= 1
    assert recs["aten::neg"]["result"]["status"] == "passed"  # neg never copies back with .cpu()


def test_interrupted_collection_keeps_finished_surfaces(cli, workdir, monkeypatch, capsys):
    from torchcts.evidence.oracles import OracleRunner

    real = OracleRunner.surface_result
    calls = []

    def interrupt_second(self, cases, *rest):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, cases, *rest)

    monkeypatch.setattr(OracleRunner, "surface_result", interrupt_second)
    argv = [*COLLECT, "--device", "cpu", "--backend-gate", "cpu", "--surface", "aten::neg", "--surface", "aten::abs"]
    assert cli(argv) == 130
    recs = _records(workdir / "ev")
    assert [(r["surface"], r["run_status"]) for r in recs] == [("aten::abs", "interrupted")]
    assert verify_store(workdir / "ev") == []


def test_oracle_id_drops_the_dtype_anywhere():
    from torchcts.evidence.oracles import oracle_id
    from torchcts.model.case import Case

    assert oracle_id(Case("opinfo/add/float32/forward", "opinfo", 2, "m:f", dtype="float32")) == "opinfo/add/forward"
    assert oracle_id(Case("operators/core/zeros/int8", "operators", 1, "m:f", dtype="int8")) == "operators/core/zeros"
    assert oracle_id(Case("operators/core/registration", "operators", 1, "m:f")) == "operators/core/registration"
