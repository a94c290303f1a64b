"""Truth beyond CPU (issue 28 items 3 and 5): ulps, the judgement against the float64 truth both
ways, the record's `precision` and report.html's precision profile (docs/oracles.md)."""

from __future__ import annotations

import math

import pytest
import torch

from torchcts.cases.opinfo.samples import lookup, selected_samples
from torchcts.cases.opinfo.truth import truth_of, why_no_truth
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import Status
from torchcts.oracle.precision import COND_FACTOR, WORSE_FACTOR, WORSE_FLOOR_ULPS, Precision
from torchcts.oracle.tolerances import tolerance_for
from torchcts.oracle.truth import Truth, errors, judge, ulp
from torchcts.results.reports.html import render_html
from torchcts.results.reports.html_precision import render_precision

F32 = tolerance_for("elementwise", "float32")


def test_ulp_at_normal_subnormal_and_zero():
    t = torch.tensor([1.0, 1.5, 2.0, -3.0, 0.75, 0.0, 1e-40, 2.0**-126], dtype=torch.float64)
    got = ulp(t, torch.float32).tolist()
    assert got[:5] == [2.0**-23, 2.0**-23, 2.0**-22, 2.0**-22, 2.0**-24]
    assert got[5] == got[6] == 2.0**-149  # at 0 and below smallest_normal: the subnormal spacing
    assert got[7] == 2.0**-149  # smallest_normal * eps
    assert ulp(torch.tensor([1.0], dtype=torch.float64), torch.float16).item() == 2.0**-10
    assert ulp(torch.tensor([1.0], dtype=torch.float64), torch.bfloat16).item() == 2.0**-7
    assert ulp(torch.tensor([0.0], dtype=torch.float64), torch.float16).item() == 2.0**-24
    # complex: the component dtype's spacing at the modulus
    assert ulp(torch.tensor([3 + 4j], dtype=torch.complex128), torch.complex64).item() == 2.0**-21


def test_errors_at_inf_nan_and_overflow():
    truth = torch.tensor([1.0, float("inf"), float("nan"), 1e39, 1e39, 2.0, 2.0], dtype=torch.float64)
    value = torch.tensor([1.0 + 2**-22, float("inf"), float("nan"), float("inf"), 3e38, float("nan"), float("inf")],
                         dtype=torch.float64)
    e = errors(value, truth, torch.float32)
    assert e.ulps[0].item() == 2.0  # two float32 ulps above 1
    # the same non-finite value as the truth (1e39 overflows float32 to inf): no error
    assert e.ulps[1].item() == e.ulps[2].item() == e.ulps[3].item() == 0.0
    assert math.isinf(e.ulps[4].item())  # finite where the truth is not finite in float32
    assert math.isinf(e.ulps[5].item()) and math.isinf(e.ulps[6].item())  # non-finite where the truth is finite
    assert e.off_scale.tolist() == [False, False, False, False, True, True, True]
    assert e.rel[0].item() == pytest.approx(2.0**-22) and math.isnan(e.rel[1].item())


def _truth(value: torch.Tensor, sensitivity: torch.Tensor | None = None) -> Truth:
    return Truth(value=value, sensitivity=sensitivity if sensitivity is not None else torch.zeros_like(value))


def test_device_more_accurate_than_cpu_passes_outside_the_cpu_tolerance():
    truth = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)
    device = truth.float()  # correctly rounded
    cpu = device.clone()
    cpu[1] = cpu[1] + 1e-4  # CPU 1e-4 off: far outside the float32 tolerance of 1.3e-5 there
    assert judge(device, cpu, Truth(), F32, strict=True)[0] is not None  # without the truth: failed
    mismatch, precision = judge(device, cpu, _truth(truth), F32, strict=True)
    assert mismatch is None and precision.rescued == 1
    assert precision.device_ulp_vs_truth <= 0.5 < precision.cpu_ulp_vs_truth
    # a device as far off as CPU, the other way, is no farther from the truth: rescued too
    other = device.clone()
    other[1] = other[1] - 1e-4
    assert judge(other, cpu, _truth(truth), F32, strict=True)[0] is None
    # where CPU is NaN, a finite device value must also be close to the truth to be rescued
    nan_cpu = device.clone()
    nan_cpu[1] = float("nan")
    assert judge(device, nan_cpu, _truth(truth), F32, strict=True)[0] is None
    garbage = device.clone()
    garbage[1] = 7.0
    assert judge(garbage, nan_cpu, _truth(truth), F32, strict=True)[0] is not None
    # farther from the truth than CPU: the tolerance's verdict stands, with both errors in the metrics
    worse = device.clone()
    worse[1] = worse[1] + 3e-4
    mismatch, _ = judge(worse, cpu, _truth(truth), F32, strict=True)
    assert mismatch is not None and mismatch.what == "values differ"
    assert mismatch.extra["precision"]["device_ulp_vs_truth"] > mismatch.extra["precision"]["cpu_ulp_vs_truth"]


def test_device_much_less_accurate_fails_inside_the_tolerance():
    x = torch.linspace(-3, 3, 101)
    truth = torch.sin(x.double())
    cpu = torch.sin(x)
    device = torch.round(cpu * 2**16) / 2**16  # absolute 2^-17: inside atol 1e-5 everywhere
    assert judge(device, cpu, Truth(), F32, strict=True)[0] is None  # the tolerance alone accepts it
    mismatch, precision = judge(device, cpu, _truth(truth), F32, strict=True)
    assert mismatch is not None and mismatch.what.startswith("much less accurate than CPU")
    assert precision.worse > 0 and precision.device_ulp_vs_truth > WORSE_FLOOR_ULPS
    assert mismatch.extra["device_ulps"] > max(WORSE_FACTOR * mismatch.extra["cpu_ulps"], WORSE_FLOOR_ULPS)
    # not for reductions and composites (strict=False), nor without a sensitivity
    assert judge(device, cpu, _truth(truth), F32, strict=False)[0] is None
    assert judge(device, cpu, Truth(value=truth), F32, strict=True)[0] is None


def test_a_few_ulps_worse_than_cpu_or_an_ill_conditioned_sample_passes():
    x = torch.linspace(0.5, 3, 50)
    truth = torch.exp(x.double())
    cpu = torch.exp(x)
    device = cpu * (1 + 16 * 2**-24)  # ~8-16 ulps: below WORSE_FLOOR_ULPS
    assert judge(device, cpu, _truth(truth), F32, strict=True)[0] is None
    far = cpu * (1 + 100 * 2**-24)
    assert judge(far, cpu, _truth(truth), tolerance_for("reduction", "float32"), strict=True)[0] is not None
    # the sample's sensitivity (cancellation) widens the room: 100 ulps, sensitivity 20 ulps
    sens = 20 * ulp(truth, torch.float32)
    assert 100 <= COND_FACTOR * 20
    assert judge(far, cpu, _truth(truth, sens), tolerance_for("reduction", "float32"), strict=True)[0] is None


def test_flushing_subnormal_results_to_zero_is_left_to_the_tolerance():
    x = torch.tensor([1e-3, 2e-3, 3e-3], dtype=torch.float16)
    y = torch.tensor([1e-3, 2e-3, 3e-3], dtype=torch.float16)
    truth = x.double() * y.double()  # 1e-6 ... 9e-6: subnormal in float16 (below 6.1e-5)
    cpu = x * y
    flushed = torch.zeros_like(cpu)  # FTZ: inside atol 1e-5, hundreds of subnormal ulps off
    tol = tolerance_for("elementwise", "float16")
    assert judge(flushed, cpu, Truth(), tol, strict=True)[0] is None
    mismatch, precision = judge(flushed, cpu, _truth(truth), tol, strict=True)
    assert mismatch is None and precision.device_ulp_vs_truth > WORSE_FLOOR_ULPS
    # the same kind of error on normal results (1e-4: 5e-6 is ~80 ulps there, inside atol) fails
    normal = torch.tensor([1.0e-4, 1.5e-4, 2.0e-4], dtype=torch.float16)
    off = (normal.float() + 5e-6).half()
    mismatch, _ = judge(off, normal, _truth(normal.double()), tol, strict=True)
    assert mismatch is not None and mismatch.what.startswith("much less accurate")


def test_pytorch_decomposition_with_cancellation_passes():
    """addcmul's Python decomposition rounds twice: 57 ulps where its terms cancel (sample 10),
    CPU's kernel 0.3; the sample's sensitivity gives it room, and a 2^-17 sin does not get it."""
    from torch._decomp import decomposition_table

    op, decomp = lookup("addcmul"), decomposition_table[torch.ops.aten.addcmul.default]
    for _, s in selected_samples(op, torch.float32, None, None, device=torch.device("cpu")):
        cpu, dev = op.op(s.input, *s.args, **s.kwargs), decomp(s.input, *s.args, **s.kwargs)
        truth = truth_of(op, op.op, s, torch.float32, "elementwise")
        assert truth.value is not None and truth.sensitive is not None
        mismatch, _ = judge(dev, cpu, truth, F32, strict=True)
        assert mismatch is None, mismatch.what


def test_no_truth_where_widening_changes_the_op():
    op = lookup("nextafter")
    sample = next(iter(selected_samples(op, torch.float32, 1, None, device=torch.device("cpu"))))[1]
    assert "own dtype" in why_no_truth(op, sample, torch.float32, "elementwise")
    add = lookup("add")
    sample = next(iter(selected_samples(add, torch.float64, 1, None, device=torch.device("cpu"))))[1]
    assert "no dtype wider" in why_no_truth(add, sample, torch.float64, "elementwise")
    sample32 = next(iter(selected_samples(add, torch.float32, 1, None, device=torch.device("cpu"))))[1]
    assert why_no_truth(add, sample32, torch.float32, "linalg")  # signs and phases
    got = truth_of(add, add.op, sample32, torch.float32, "elementwise")
    assert got.missing is None and got.value.dtype == torch.float64
    # an integer output leaf (max's indices) is compared exactly, its values leaf gets the truth
    mx = lookup("max", "reduction_with_dim")
    s = next(iter(selected_samples(mx, torch.float32, 1, None, device=torch.device("cpu"))))[1]
    truth = truth_of(mx, mx.op, s, torch.float32, "reduction")
    cpu = mx.op(s.input, *s.args, **s.kwargs)
    mismatch, precision = judge(cpu, cpu, truth, F32, strict=False)
    assert mismatch is None and precision.truth == "float64" and precision.samples == 1


def test_precision_round_trips_and_reads_untrusted_fields():
    p = Precision(truth="float64", samples=3, max_ulp_vs_cpu=2.0, device_ulp_vs_truth=2.5, cpu_ulp_vs_truth=0.5,
                  device_rel_vs_truth=3e-7, cpu_rel_vs_truth=6e-8, ulp_over_cpu=2.0, rescued=1)
    data = p.to_json()
    assert Precision.from_json(data) == p
    rec = CaseRecord(id="opinfo/add/float32/forward", status=Status.PASSED, op="add", dtype="float32", precision=data)
    again = CaseRecord.from_json(rec.to_json())
    assert again.precision == data and again.to_json() == rec.to_json()
    bad = Precision.from_json({"truth": 3, "device_ulp_vs_truth": "x", "cpu_ulp_vs_truth": float("nan"),
                               "rescued": -1, "worse": True, "samples": 2})
    assert bad == Precision(samples=2)
    assert CaseRecord.from_json({"id": "x", "status": "passed", "precision": [1]}).precision == {"value": "[1]"}
    merged = Precision(device_ulp_vs_truth=1.0, worse=1).merge(Precision(device_ulp_vs_truth=5.0, samples=2))
    assert merged.device_ulp_vs_truth == 5.0 and merged.worse == 1 and merged.samples == 2


def test_report_has_a_precision_profile_worst_first():
    def rec(op: str, dev: float, cpu: float, worse: int = 0) -> CaseRecord:
        p = Precision(truth="float64", samples=1, device_ulp_vs_truth=dev, cpu_ulp_vs_truth=cpu,
                      ulp_over_cpu=dev - cpu, max_ulp_vs_cpu=dev, worse=worse)
        return CaseRecord(id=f"opinfo/{op}/float32/forward", suite="opinfo", op=op, dtype="float32",
                          status=Status.FAILED if worse else Status.PASSED, precision=p.to_json())

    records = [rec("exp", 0.5, 0.5), rec("sin", 9000.0, 0.3, worse=12), rec("tanh", 3.0, 0.5),
               CaseRecord(id="opinfo/add/float64/forward", op="add", dtype="float64", status=Status.PASSED,
                          precision=Precision(no_truth="no dtype wider than float64 on CPU").to_json())]
    body = render_precision(records)
    assert body.index("<code>sin</code>") < body.index("<code>tanh</code>") < body.index("<code>exp</code>")
    assert "class='failed'" in body and "class='worse'" in body and "no dtype wider than float64" in body
    page = render_html(Run.from_json({"name": "r", "device": {"type": "sim"}}), records)
    assert "<section id='precision'><h2>Precision profile</h2>" in page
    assert render_precision([CaseRecord(id="x", status=Status.PASSED)]) == ""


def test_clean_cpu_forward_case_records_its_precision(tmp_path):
    from helpers.runs import latest_run, records, run_cli

    r = run_cli("run", "--validation", "--case", "opinfo/exp/float32/forward", "--no-isolation", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (rec,) = [x for x in records(latest_run(tmp_path)) if x["status"] != "filtered"]
    p = rec["precision"]
    # CPU against CPU: every sample's result is identical, so the truth could change no verdict and
    # was not computed (the profile shows "= CPU")
    assert rec["status"] == "passed" and p["max_ulp_vs_cpu"] == 0.0 and p["identical"] >= 1
    assert "truth" not in p and p["samples"] == 0


def test_the_truth_is_computed_only_for_a_result_that_differs_from_cpu():
    from torchcts.cases.context import CaseContext
    from torchcts.manifest.templates import validation_manifest

    calls = []
    expected = torch.tensor([0.5, 1.5, -2.0, float("nan")])

    def truth() -> Truth:
        calls.append(1)
        return Truth(value=expected.double())

    ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest())
    ctx.assert_close(expected.clone(), expected, truth=truth)
    assert calls == [] and ctx.verdict.precision.identical == 1 and ctx.verdict.precision.truth is None
    one_ulp = expected.clone()
    one_ulp[0] = torch.nextafter(one_ulp[0], torch.tensor(1.0))
    ctx.assert_close(one_ulp, expected, truth=truth)
    assert calls == [1] and ctx.verdict.precision.truth == "float64" and ctx.verdict.precision.identical == 1
    assert ctx.verdict.precision.device_ulp_vs_truth == 1.0


def test_the_sensitivity_is_measured_only_where_the_rule_may_fail():
    measured = []
    truth_value = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)

    def measure() -> torch.Tensor:
        measured.append(1)
        return torch.zeros_like(truth_value)

    cpu = truth_value.float()
    near = cpu.clone()
    near[1] = torch.nextafter(near[1], torch.tensor(9.0))  # 1 ulp: inside every bound
    assert judge(near, cpu, Truth(value=truth_value, measure=measure), F32, strict=True)[0] is None
    assert measured == []
    far = cpu.clone()
    far[1] = far[1] + 40 * torch.finfo(torch.float32).eps * 2  # 40 ulps of 2.0: past 32 ulps, inside the tolerance
    mismatch, _ = judge(far, cpu, Truth(value=truth_value, measure=measure), F32, strict=True)
    assert measured == [1] and mismatch is not None and mismatch.what.startswith("much less accurate")
