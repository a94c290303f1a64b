"""Observed dispatch coverage: what a case's record lists, what `coverage report RUN` counts from it,
the report.html section, and evidence selecting the observed surfaces."""

from __future__ import annotations

import json

import pytest
import torch
from helpers.crafted import tiny_coverage_run

from torchcts.cases import observe
from torchcts.cases.context import CaseContext
from torchcts.engine.runner import run_case
from torchcts.manifest.templates import validation_manifest
from torchcts.model.case import Case


def _run(case: Case) -> CaseContext:
    ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest(), validation=True)
    run_case(case, ctx)
    return ctx


def _case(suite: str = "observedprobe", case_id: str = "observedprobe/tan/float32") -> Case:
    return Case(case_id, suite, 1, "helpers.observed_cases:tan_and_backward", {"dtype": "float32"},
                ops=("aten::tan",), dtype="float32")


def test_record_lists_device_overloads_with_backward_kernels_not_cpu_work():
    ctx = _run(_case())
    got = set(ctx.verdict.dispatched)
    assert {"aten::tan", "aten::tanh", "aten::tanh_backward", "aten::_to_copy"} <= got
    # the CPU reference (sin/cos/div, pow), the CPU input (randn) and the comparison are TorchCTS's work
    assert not {"aten::sin", "aten::cos", "aten::div.Tensor", "aten::pow.Tensor_Scalar", "aten::randn",
                "aten::isclose", "aten::sub.Tensor", "aten::abs"} & got, got
    assert ctx.verdict.dispatched == sorted(got) and ctx.verdict.dispatch_unobserved is None


def test_unobserved_cases_say_why_and_observation_can_be_switched_off(monkeypatch):
    ctx = _run(_case("compiler", "compiler/tan/float32"))
    assert ctx.verdict.dispatched is None and "torch.compile" in ctx.verdict.dispatch_unobserved
    monkeypatch.setenv(observe.ENV, "0")
    ctx = _run(_case())
    assert ctx.verdict.dispatched is None and ctx.verdict.dispatch_unobserved == f"{observe.ENV}=0"


def test_matrix_rank_out_is_unobserved_because_observing_changes_its_result(monkeypatch):
    """PyTorch's composite linalg_matrix_rank out= kernel skips writing `out` under any dispatch mode."""
    case = Case("opinfo/linalg.matrix_rank/float32/out", "opinfo", 3, "torchcts.cases.opinfo.run:run",
                {"op": "linalg.matrix_rank", "variant": "", "kind": "out", "dtype": "float32"}, dtype="float32")
    assert _run(case).verdict.dispatch_unobserved is not None  # passes: no OracleMismatch
    monkeypatch.setattr(observe, "UNOBSERVED", {})  # without the entry, the verdict net still catches it
    ctx = _run(case)
    assert "changed this case's result" in ctx.verdict.dispatch_unobserved and "observer_changed_result" in ctx.info


def _probe(body: str) -> Case:
    return Case(f"observedprobe/{body}/float32", "observedprobe", 1, f"helpers.observed_cases:{body}",
                {"dtype": "float32"}, ops=("aten::neg",), dtype="float32")


def test_a_failure_only_the_observer_causes_passes_with_the_reason_recorded():
    """The observer is ours: it must never fail a correct backend (complex linalg_pinv under any mode)."""
    ctx = _run(_probe("fails_only_observed"))
    assert ctx.verdict.dispatched is None and "changed this case's result" in ctx.verdict.dispatch_unobserved
    assert "OracleMismatch" in ctx.info["observer_changed_result"]


def test_a_backend_failure_still_fails_and_a_nondeterministic_one_is_not_forgiven():
    from helpers import observed_cases

    from torchcts.oracle.compare import OracleMismatch

    with pytest.raises(OracleMismatch):
        _run(_probe("fails_always"))
    observed_cases.CALLS.clear()
    ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest(), validation=True)
    with pytest.raises(OracleMismatch):  # failed observed, passed unobserved, passed observed: a flake
        run_case(_probe("fails_once"), ctx)
    assert observed_cases.CALLS == [True, False, True]
    assert "nondeterministic" in ctx.info and ctx.verdict.dispatched and "aten::neg" in ctx.verdict.dispatched


def test_unobserved_block_restores_the_observer_and_is_a_noop_without_one():
    with observe.unobserved():  # no observer active
        torch.ones(1)
    x = torch.ones(3)
    with observe.DispatchObserver("cpu") as mode:
        with observe.unobserved():
            torch.exp(x)
        torch.neg(x)
    assert mode.names() == ["aten::neg"]


def test_observer_dispatch_is_not_wrapped_in_dynamo_disable():
    """PyTorch wraps a mode's __torch_dispatch__ in torch._dynamo.disable unless the mode opts out:
    that imports dynamo at the first observed op of every worker (~2 s) and slows every op."""
    assert not hasattr(observe.DispatchObserver.__torch_dispatch__, "__wrapped__")
    assert observe.DispatchObserver._should_skip_dynamo() is False


def test_surface_suites_cpu_side_is_not_observed():
    """The CPU side of cases/overloads.py (inputs, the reference, out= sized by the functional sibling)
    and of the generated suite (inputs made on CPU) is TorchCTS's work: on --device cpu, where the
    observer cannot tell the two apart, only the device side's overloads are recorded."""
    from torchcts.cases.overloads import mirror, run_overloads
    from torchcts.cases.schema.run import run_surface

    ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest())

    def ones(arg, device):
        if arg.name == "self":
            return torch.ones(3, device=device)
        raise KeyError(arg.name)

    calls: list[torch.device] = []

    def check(dev):  # the CPU reference takes abs, the device side neg twice: the same values
        calls.append(dev)
        return torch.ones(3, device=dev).abs() if len(calls) == 1 else torch.ones(3, device=dev).neg().neg()

    with observe.DispatchObserver("cpu") as mode:
        run_overloads(ctx, [("exp", "out")], ones)
        mirror(ctx, {"check": check})
        run_surface(ctx, "aten::_logcumsumexp", torch.float32)
    names = mode.names()
    assert {"aten::exp.out", "aten::neg", "aten::_logcumsumexp"} <= set(names), names
    assert "aten::exp" not in names and "aten::abs" not in names, names  # sibling sizing out=; CPU's check
    assert not any(n.startswith("aten::rand") for n in names), names  # the generator's CPU inputs


def test_coverage_report_run_counts_executed_dispatch_and_shows_it_in_report_html(cli, workdir, capsys):
    run = tiny_coverage_run(workdir)
    assert cli(["coverage", "report", "results/latest", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    h = summary["headline"]
    assert h["observed_all"] == 3 and h["pending"] == 1 and h["excluded"] > 0 and h["observed"] == 3
    assert summary["by_kind"]["backward"]["implementable_observed"] == 1
    assert summary["cases"] == {"observed": 2, "unobserved": {"torch.compile traces ...": 1}, "malformed": 1}
    assert summary["by_kernel"]["native"]["observed"] + summary["by_kernel"]["composite_explicit"]["observed"] == 3
    html = (run / "report.html").read_text()
    assert "3 of" in html and "implementable aten overloads observed" in html and "1 cases pending" in html
    assert json.loads((run / "run.json").read_text())["coverage"]["headline"] == h
    # a run folder given directly, as Markdown; --suite makes no sense with RUN
    assert cli(["coverage", "report", str(run)]) == 0
    assert "## By kernel for CPU" in capsys.readouterr().out
    assert cli(["coverage", "report", str(run), "--suite", "core"]) == 2
    # a run still being written is read, never closed or rewritten
    spec = json.loads((run / "run.json").read_text())
    spec.pop("coverage")
    (run / "run.json").write_text(json.dumps({**spec, "status": "running"}))
    assert cli(["coverage", "report", str(run), "--json"]) == 0
    assert "coverage" not in json.loads((run / "run.json").read_text())


def test_coverage_report_run_lists_unobserved_surfaces_with_their_pending_case(cli, workdir, capsys):
    tiny_coverage_run(workdir)
    assert cli(["coverage", "report", "results/latest", "--json"]) == 0
    unobserved = {u["surface"]: u for u in json.loads(capsys.readouterr().out)["unobserved"]}
    assert "aten::add.Tensor" not in unobserved and "aten::_foreach_add.List" not in unobserved
    assert unobserved["aten::nll_loss_forward"]["pending"] == "CPU rejects every input profile"
    assert unobserved["aten::mul.Tensor"]["kind"] == "functional" and "pending" not in unobserved["aten::mul.Tensor"]
    assert cli(["coverage", "report", "results/latest", "--list-unobserved"]) == 0
    text = capsys.readouterr().out
    assert "## Unobserved implementable surfaces" in text
    assert ("| aten::nll_loss_forward | functional | native | pending | pending: CPU rejects the synthesized inputs: "
            "CPU rejects every input profile |") in text
    assert cli(["coverage", "report", "--list-unobserved"]) == 2  # a static plan has no run to list


def test_evidence_default_selection_adds_observed_surfaces(cli, workdir, monkeypatch, capsys):
    from torchcts.cases import registry

    monkeypatch.setitem(registry.SUITES, "observedprobe",
                        registry.Suite("observedprobe", "helpers.observed_cases", "tests: observed dispatch"))
    argv = ["coverage", "collect-backend-evidence", "--store", "ev", "--device", "cpu", "--backend-gate", "cpu",
            "--suite", "observedprobe", "--level", "1", "--run-pending-candidates"]
    assert cli(argv) == 0, capsys.readouterr()
    recs = {r["surface"]: r for r in map(json.loads, (workdir / "ev" / "cpu.jsonl").read_text().splitlines())}
    # declared by the case: aten::tan; observed only: its backward kernel
    assert recs["aten::tan"]["oracles"][0]["dispatched"] is True
    backward = recs["aten::tanh_backward"]
    assert backward["result"]["status"] == "passed" and backward["oracles"][0]["dispatched"] is True
    assert "aten::sin" not in recs  # the CPU reference is not the device's
