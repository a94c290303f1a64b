"""Exact results compared bit for bit, and weak comparisons flagged (issue 28 items 1 and 4).

The registry's rules (oracle/exactness.py), the bitwise comparison (sign of zero, any NaN matches
NaN), the weak-reference rules (oracle/weak.py), how a case's record gets both, the reports' counts,
and the sim's 1-ulp faults: each hidden by the dtype's tolerance, each caught by the exact comparison.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from torchcts import compat
from torchcts.cases.context import CaseContext
from torchcts.manifest.templates import validation_manifest
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.oracle import weak
from torchcts.oracle.compare import OracleMismatch, tensor_mismatch
from torchcts.oracle.exactness import EXACT, NOT_EXACT, Exact, exactness_of
from torchcts.oracle.tolerances import EXACT_DTYPES, Tolerance, tolerance_for
from torchcts.results.reports.strength import render_html, render_markdown, strength, weak_lines

F32 = tolerance_for("elementwise", "float32")
EXACT_SIGNED = Tolerance(0.0, 0.0, signed_zero=True)


def _ulp_up(x: torch.Tensor) -> torch.Tensor:
    return torch.nextafter(x, torch.full_like(x, float("inf")))


# --- the registry ---------------------------------------------------------------------------------

def test_every_entry_has_a_reason_and_names_an_op_pytorch_has():
    opinfo = {o.name for o in compat.op_db()} | {f"{o.name}.{o.variant_test_name}" for o in compat.op_db()}
    for name, entry in EXACT.items():
        assert entry.reason, name
        base = name.removesuffix("_")
        assert name in opinfo or hasattr(torch.ops.aten, base) or hasattr(torch.ops.aten, name), name
    assert all(name.split(".")[0] in EXACT for name in NOT_EXACT)


@pytest.mark.parametrize("name", ["clone", "to", "bfloat16", "gather", "index_select", "take", "flip", "roll", "where",
                                  "masked_fill", "cat", "stack", "abs", "neg", "floor", "ceil", "trunc", "round",
                                  "clamp", "maximum", "minimum", "fmax", "fmin", "sort", "topk", "unique",
                                  "max", "amax", "nn.functional.pad"])
def test_exact_by_definition(name):
    variant = "constant" if name == "nn.functional.pad" else ""
    assert exactness_of(name, variant) is not None


@pytest.mark.parametrize("name", ["add", "mul", "sum", "cumsum", "index_add", "scatter_add", "scatter_reduce",
                                  "softmax", "sgn", "mean", "prod"])
def test_arithmetic_is_not_exact(name):
    assert exactness_of(name) is None


def test_variants_aten_names_and_complex_inputs():
    assert exactness_of("round") is not None and exactness_of("round", "decimals_3") is None  # scales by 10**3
    assert exactness_of("nn.functional.pad", "replicate_negative") is None  # not listed: tolerance
    assert exactness_of("aten::gather.default") is EXACT["gather"]
    assert exactness_of("aten::abs_") is EXACT["abs"]  # the in-place form
    assert exactness_of("aten::copy_") is EXACT["copy_"]
    assert exactness_of("aten::cumsum.default") is None and exactness_of("aten::__and__.Tensor") is None
    assert exactness_of("abs", dtype="float32") is not None
    assert exactness_of("abs", dtype="complex64") is None  # |z| is a hypot
    assert exactness_of("neg", dtype="complex64") is not None


def test_values_exact_indices_by_the_integer_rule_and_which_zero_wins_undefined():
    sort = exactness_of("sort")
    assert sort is not None and sort.outputs == (0,) and sort.covers(0) and not sort.covers(1)
    assert not sort.signed_zero and not EXACT["clamp"].signed_zero
    assert EXACT["neg"].signed_zero and EXACT["floor"].signed_zero and EXACT["_to_copy"].signed_zero


def test_integer_and_bool_outputs_always_exact():
    for category in ("elementwise", "reduction", "matmul", "backward"):
        for dtype in EXACT_DTYPES:
            assert tolerance_for(category, dtype).exact, (category, dtype)
    assert not tolerance_for("elementwise", "float32").exact


# --- the bitwise comparison -------------------------------------------------------------------------

def test_one_ulp_passes_the_tolerance_and_fails_exact():
    x = torch.tensor([1.5, -2.25, 3.0e5])
    y = x.clone()
    y[1] = _ulp_up(y[1:2])[0]
    assert tensor_mismatch(y, x, F32) is None  # hidden by tolerance
    m = tensor_mismatch(y, x, EXACT_SIGNED)
    assert m is not None and m.mismatched == 1 and m.first_index == [1] and m.extra["compared"] == "exact"
    assert m.atol == 0 and m.rtol == 0


def test_sign_of_zero():
    pos, neg = torch.tensor([0.0, 1.0]), torch.tensor([-0.0, 1.0])
    m = tensor_mismatch(neg, pos, EXACT_SIGNED)
    assert m is not None and m.what == "sign of zero differs" and m.first_index == [0] and m.mismatched == 1
    assert tensor_mismatch(neg, pos, Tolerance(0.0, 0.0)) is None  # max/min/sort: which zero wins is undefined
    assert tensor_mismatch(neg, pos, F32) is None
    assert tensor_mismatch(neg, neg.clone(), EXACT_SIGNED) is None
    cz, cneg = torch.tensor([complex(1.0, 0.0)]), torch.complex(torch.tensor([1.0]), torch.tensor([-0.0]))
    assert tensor_mismatch(cneg, cz, EXACT_SIGNED) is not None
    # float16 and bfloat16 too; integers have no signed zero
    for dt in (torch.float16, torch.bfloat16):
        assert tensor_mismatch(neg.to(dt), pos.to(dt), EXACT_SIGNED) is not None
    assert tensor_mismatch(torch.tensor([0, 1]), torch.tensor([0, 1]), EXACT_SIGNED) is None


def test_any_nan_matches_nan_whatever_its_payload():
    quiet = torch.tensor([float("nan"), 1.0])
    other = quiet.clone().view(torch.int32)
    other[0] = 0x7FC00123  # another NaN payload
    other = other.view(torch.float32)
    assert torch.isnan(other[0]) and not torch.equal(other.view(torch.int32), quiet.view(torch.int32))
    assert tensor_mismatch(other, quiet, EXACT_SIGNED) is None
    assert tensor_mismatch(torch.tensor([1.0, 1.0]), quiet, EXACT_SIGNED) is not None  # NaN only matches NaN


# --- the case's comparison and its record -------------------------------------------------------------

def _ctx() -> CaseContext:
    return CaseContext(device=torch.device("cpu"), manifest=validation_manifest())


def test_assert_close_exact_fails_a_one_ulp_error_and_records_exactness():
    x = torch.randn(16)
    ctx = _ctx()
    ctx.assert_close(x.clone(), x, exact=EXACT["gather"])
    assert ctx.verdict.exactness == "exact" and ctx.info["tolerance"]["exact"] is True
    with pytest.raises(OracleMismatch):
        ctx.assert_close(_ulp_up(x), x, exact=EXACT["gather"])
    loose = _ctx()
    loose.assert_close(_ulp_up(x), x)  # the same error within the float tolerance
    assert loose.verdict.exactness == "tolerance"
    ints = _ctx()
    ints.assert_close(torch.arange(4), torch.arange(4))
    assert ints.verdict.exactness == "exact"  # integer outputs are always exact


def test_exact_outputs_only_where_the_entry_says():
    values, indices = torch.randn(8).sort()
    entry = Exact("values exact", outputs=(0,))
    ctx = _ctx()
    ctx.assert_close((values.clone(), indices.clone()), (values, indices), exact=entry)
    with pytest.raises(OracleMismatch) as err:
        ctx.assert_close((_ulp_up(values), indices), (values, indices), exact=entry)
    assert err.value.mismatch.path == "[0]"
    other = Exact("first output exact", outputs=(0,))
    ctx.assert_close((values.clone(), _ulp_up(values)), (values, values), exact=other)  # output 1: tolerance
    assert ctx.verdict.exactness == "tolerance"


# --- weak comparisons -------------------------------------------------------------------------------

@pytest.mark.parametrize(("expected", "tol", "reason"), [
    (torch.zeros(0), F32, weak.EMPTY),
    (torch.zeros(5), F32, weak.ZEROS),
    (torch.tensor(0.0), EXACT_SIGNED, weak.ZEROS),
    (torch.full((4, 3), 2.5), EXACT_SIGNED, weak.CONSTANT),
    (torch.full((3,), float("nan")), F32, weak.NAN),
    (torch.tensor([1e-7, -3e-6, 5e-6]), F32, weak.BELOW_ATOL),
    (torch.ones(6, dtype=torch.bool), EXACT_SIGNED, weak.CONSTANT),
    (torch.zeros(6, dtype=torch.bool), EXACT_SIGNED, weak.ZEROS),
    (torch.full((2, 2), 7, dtype=torch.int64), EXACT_SIGNED, weak.CONSTANT),
    (torch.full((3,), complex(1.0, 2.0)), F32, weak.CONSTANT),
])
def test_weak_references(expected, tol, reason):
    assert weak.tensor_weakness(expected, tol) == reason


@pytest.mark.parametrize(("expected", "tol"), [
    (torch.tensor(3.5), F32),  # one element away from zero
    (torch.tensor([0.0, 1.0, 2.0]), F32),
    (torch.tensor([1e-7, -3e-6, 5e-6]), EXACT_SIGNED),  # exact: tiny values still tell
    (torch.tensor([float("nan"), 0.0]), F32),  # zeros would fail at the NaN
    (torch.tensor([1e-7, float("inf")]), F32),
    (torch.tensor([True, False]), EXACT_SIGNED),
])
def test_references_that_tell(expected, tol):
    assert weak.tensor_weakness(expected, tol) is None
    assert weak.tensor_weakness(torch.tensor([0.5, 1.0]).to(torch.float8_e4m3fn), F32) is None  # widened first


def test_a_case_is_weak_only_when_every_comparison_was():
    ctx = _ctx()
    ctx.assert_close(torch.zeros(3), torch.zeros(3))
    assert ctx.verdict.weak == weak.ZEROS
    ctx.assert_close(torch.arange(3.0), torch.arange(3.0))
    assert ctx.verdict.weak is None  # one discriminating comparison is evidence
    factory = _ctx()
    factory.assert_close(torch.ones(4), torch.ones(4), constant=True)  # constant by definition
    assert factory.verdict.weak is None
    nothing = _ctx()
    nothing.assert_close(3, 3)  # no tensor: not judged
    assert nothing.verdict.weak is None and not nothing.verdict.discriminated


def test_record_fields_round_trip_and_reports_count_weak_per_suite():
    recs = [CaseRecord(id=f"opinfo/x{i}", suite="opinfo", status=Status.PASSED, exactness="exact",
                       weak=weak.ZEROS if i < 2 else None) for i in range(8)]
    recs += [CaseRecord(id="dtypes/y", suite="dtypes", status=Status.PASSED, exactness="tolerance"),
             CaseRecord(id="dtypes/z", suite="dtypes", status=Status.FAILED, exactness="exact")]
    data = recs[0].to_json()
    assert data["weak"] == weak.ZEROS and data["exactness"] == "exact"
    assert CaseRecord.from_json(data).to_json() == data
    assert CaseRecord.from_json({**data, "weak": 5}).weak == "5"  # coerced like every text field
    total, suites = strength(recs)
    assert (total.passed, total.weak, total.exact) == (9, 2, 8)
    assert suites["opinfo"].weak_share == 0.25 and suites["dtypes"].weak == 0
    lines = weak_lines(recs)
    assert "2 of 9" in lines[0] and any(line.strip().startswith("opinfo: 2 of 8 (25.0%)") for line in lines)
    assert any("| opinfo | 8 | 2 | 25.0% | 8 |" in line for line in render_markdown(recs))
    html = render_html(recs)
    assert "id='strength'" in html and "opinfo/x0" in html and "opinfo/x5" not in html


# --- the sim's 1-ulp faults: hidden by tolerance, caught exactly ------------------------------------

_FAULT_CHECK = textwrap.dedent("""
    import torch
    import torchcts.sim  # noqa: F401 - the sim device
    from torchcts.oracle.compare import tensor_mismatch
    from torchcts.oracle.exactness import exactness_of
    from torchcts.oracle.tolerances import tolerance_for
    from torchcts.sim import faults

    torch.manual_seed(0)
    x = torch.randn(6, 40)
    CHECKS = {
        "bfloat16_cast_truncates": ("bfloat16", lambda t: t.bfloat16()),
        "sort_key_ulp": ("sort", lambda t: t.sort(1).values),
        "max_dim_tail_ulp": ("max", lambda t: t.max(1).values),
    }
    faults.activate(list(CHECKS))
    for name, (op, fn) in CHECKS.items():
        got, want = fn(x.to("sim")).cpu(), fn(x)
        # the tightest float tolerance there is (elementwise): the fault hides under every category
        tol = tolerance_for("elementwise", str(want.dtype).removeprefix("torch."))
        torch.testing.assert_close(got, want, atol=tol.atol, rtol=tol.rtol)  # hidden by the dtype's tolerance
        assert tensor_mismatch(got, want, tol) is None
        assert not torch.equal(got, want), name
        m = tensor_mismatch(got, want, exactness_of(op).tolerance())
        assert m is not None and m.extra["compared"] == "exact", name
        print(name, "hidden by tolerance, caught exactly", int(m.mismatched))
    print("OK")
""")


def test_one_ulp_faults_pass_a_tolerance_comparison_and_fail_the_exact_one():
    r = subprocess.run([sys.executable, "-c", _FAULT_CHECK], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr
    assert r.stdout.count("caught exactly") == 3


# --- strengthened samples and results constant by definition ----------------------------------------

def _opinfo(name: str, variant: str = ""):
    return next(o for o in compat.op_db() if o.name == name and o.variant_test_name == variant)


@pytest.mark.parametrize(("name", "variant", "dtype"), [
    ("eq", "", torch.float32), ("ne", "", torch.float32), ("isclose", "", torch.float32),
    ("logical_not", "", torch.float32), ("logical_xor", "", torch.float32), ("logical_or", "", torch.float32),
    ("logical_and", "", torch.float32), ("isnan", "", torch.float32), ("isinf", "", torch.float32),
    ("round", "decimals_neg_3", torch.float32),
])
def test_strengthened_samples_tell_a_wrong_result(name, variant, dtype):
    """OpInfo's own samples give these ops one-valued references; rewritten, some sample's does not,
    and the cached sample itself is left alone."""
    from torchcts.cases.opinfo.strengthen import strengthener

    op = _opinfo(name, variant)
    rewrite = strengthener(name, variant)
    assert rewrite is not None
    samples = list(op.sample_inputs("cpu", dtype))
    before = [s.input.clone() for s in samples]
    weak_before = [weak.tensor_weakness(op.op(s.input, *s.args, **s.kwargs), F32) for s in samples]
    strong = [rewrite(s) for s in samples]
    weak_after = [weak.tensor_weakness(op.op(s.input, *s.args, **s.kwargs), F32) for s in strong]
    told_before, told_after = sum(r is None for r in weak_before), sum(r is None for r in weak_after)
    assert told_after > told_before, (name, weak_before, weak_after)
    assert all(torch.equal(b, s.input) or (b.isnan() == s.input.isnan()).all() for b, s in zip(before, samples, strict=True))
    assert strengthener("add") is None


def test_constant_by_definition():
    from torchcts.oracle.weak import constant_by_definition

    assert constant_by_definition("zeros", "float32") and constant_by_definition("full_like", None)
    assert constant_by_definition("isnan", "int64") and not constant_by_definition("isnan", "float32")
    assert constant_by_definition("floor", "float32", backward=True) and not constant_by_definition("floor", "float32")
    assert not constant_by_definition("add", "float32") and not constant_by_definition("add", "float32", backward=True)
