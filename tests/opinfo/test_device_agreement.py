"""The OpInfo suite's `agree` kind (issue 50 item 3): an op's forms agree with each other on the device.

The rule (bit for bit where the dispatcher's tables show one kernel, else within the tolerance) is
unit-tested here; the planted faults (sim/faults_agree.py), each one form an ulp off its twin and so
within CPU's tolerance, must be caught by a plain `--op` run through the agree case alone; the clean
sim and the CPU validation must pass the kind for a representative selection of ops.
"""

from __future__ import annotations

import json

import pytest
import torch
from helpers import command_server
from helpers.runs import latest_run, records, run_cli

from torchcts.cases.opinfo import kernels
from torchcts.cases.opinfo.build import op_cases
from torchcts.cases.opinfo.kernels import kernel_of, rule
from torchcts.cases.opinfo.kinds import KINDS
from torchcts.cases.opinfo.samples import lookup
from torchcts.cases.repro_builders import builder_for, has_script
from torchcts.engine.selftest import SIM_MANIFEST, fault_catalog, run_one
from torchcts.errors import UsageError

FAULTS = {f["name"]: f for f in fault_catalog() if f["catches"] and f["catches"][0].endswith("/agree")}
FAILURES = ("failed", "error", "crashed", "timeout")
# A selection across the op families: elementwise (binary, unary, where), reductions, scans,
# contractions, linalg, indexing, activations, sorting.
OPS = ("add", "mul", "div", "pow", "tanh", "exp", "abs", "clamp", "where", "sum", "mean", "max", "cumsum",
       "softmax", "matmul", "addmm", "linalg.svd", "index_add", "sort", "nn.functional.relu")


# --- the rule -------------------------------------------------------------------------------------

def test_one_structured_kernel_is_bit_for_bit():
    # CPU's codegen builds tanh and tanh_ from tanh.out's structured kernel
    assert rule(["aten::tanh"], ["aten::tanh.out"], "CPU").bitwise
    assert rule(["aten::add.Tensor"], ["aten::add_.Tensor"], "CPU").bitwise
    # a backend registering only the out= kernel: the functional and in-place forms call it
    found = rule(["aten::sum.dim_IntList"], ["aten::sum.IntList_out"], "PrivateUse1")
    assert found.bitwise and "aten::sum.IntList_out" in found.why
    assert rule(["aten::tanh"], ["aten::tanh"], "PrivateUse1").bitwise  # the method: the same overload


def test_two_kernels_or_unsure_is_within_the_tolerance():
    # index_select's CPU kernels are two functions (not structured)
    found = rule(["aten::index_select"], ["aten::index_select.out"], "CPU")
    assert not found.bitwise and "different kernels" in found.why
    # one kernel, but a reason its bits may differ
    assert not rule(["aten::tanh"], ["aten::tanh.out"], "CPU", same_layout=False).bitwise
    assert not rule(["aten::tanh"], ["aten::tanh.out"], "CPU", repeats=False).bitwise
    assert not rule(["aten::add.Tensor"], ["aten::add.out"], "CPU", nondeterministic="atomics").bitwise
    assert not rule([], ["aten::tanh.out"], "CPU").bitwise
    # the second device call behind `repeats` is asked only where everything else says bit for bit
    asked: list[int] = []
    assert not rule(["aten::index_select"], ["aten::index_select.out"], "CPU",
                    repeats=lambda: asked.append(1) or True).bitwise and not asked
    assert not rule(["aten::tanh"], ["aten::tanh.out"], "CPU", repeats=lambda: asked.append(1) or False).bitwise
    assert asked == [1]


def test_a_backend_kernel_of_its_own_counts_apart():
    """pytorch_ocl registers tanh, tanh_ and tanh.out for PrivateUse1: three functions, which may round
    differently and still all be right, so their forms agree within the tolerance only."""
    kernel_of.cache_clear()
    assert rule(["aten::tanh_"], ["aten::tanh.out"], "PrivateUse1").bitwise
    lib = torch.library.Library("aten", "IMPL")
    try:
        lib.impl("tanh_", lambda x: x, "PrivateUse1")
        kernel_of.cache_clear()
        found = rule(["aten::tanh_"], ["aten::tanh.out"], "PrivateUse1")
        assert not found.bitwise and "aten::tanh_ (PrivateUse1 kernel)" in found.why
    finally:
        lib._destroy()
        kernel_of.cache_clear()
    assert kernels.device_key("cpu") == "CPU" and kernels.device_key("sim") == "PrivateUse1"


# --- the cases ------------------------------------------------------------------------------------

def test_agree_cases_are_built_where_an_op_has_a_second_form():
    assert (KINDS["agree"].level, KINDS["agree"].requires) == (3, ("inference",))
    cases = {c.id: c for c in op_cases(lookup("tanh"))}
    case = cases["opinfo/tanh/float32/agree"]
    assert case.level == 3 and case.runner == "torchcts.cases.opinfo.agree:run" and case.not_applicable is None
    assert {c.kind for c in op_cases(lookup("linalg.svd")) if c.kind == "agree"} == {"agree"}
    assert all(c.level == 5 for c in op_cases(lookup("linalg.svd")) if c.kind == "agree")
    # random values: a property oracle, nothing to agree on
    assert not [c for c in op_cases(lookup("normal")) if c.kind == "agree"]
    # no script compares two forms: the record's repro line reruns the sample
    assert not has_script(case)
    with pytest.raises(UsageError, match="compares the op's forms with each other"):
        builder_for(case)


# --- the planted faults ---------------------------------------------------------------------------

def test_agree_faults_are_registered():
    assert set(FAULTS) == {"tanh_inplace_ulp", "mean_out_reciprocal"}
    for f in FAULTS.values():
        assert f["suite"] == "opinfo" and f["level"] == KINDS["agree"].level and f["op"], f


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(FAULTS))
def test_plain_op_run_catches_the_fault_through_agree_alone(name, tmp_path):
    """`torchcts run --device sim --manifest <sim> --op OP` with the fault planted (every suite and
    kind at the sim's level): the agree case fails, naming the two forms, the bit-for-bit rule, the
    error and the sample; every other case passes, the op's method, in-place and out= kinds (CPU
    within the tolerance) included: the sweep against CPU misses the fault."""
    fault = FAULTS[name]
    out = run_one(name, ["--op", fault["op"]], tmp_path / "results", fault=name, catches=tuple(fault["catches"]),
                  stop_first=False, case_timeout=300, run_timeout=900, isolation=False, launch=command_server.launch)
    assert out.returncode == 1 and out.planned > 0, out
    recs = [json.loads(line) for line in (latest_run(tmp_path) / "cases.jsonl").open()]
    status = {r["id"]: r["status"] for r in recs}
    failing = [r for r in recs if r["status"] in FAILURES]
    assert [r["id"] for r in failing] == list(fault["catches"]), [(r["id"], r.get("message")) for r in failing]
    base = fault["catches"][0].rsplit("/", 1)[0]
    kinds = {"forward", "method", "out", *(("inplace",) if name == "tanh_inplace_ulp" else ())}  # mean has no mean_
    assert {status[f"{base}/{kind}"] for kind in kinds} == {"passed"}
    rec = failing[0]
    info = rec["info"]
    assert info["agree_rule"].startswith("bit for bit") and " vs " in info["agree_pair"]
    mismatch = rec["mismatch"]
    assert 0 < mismatch["max_abs_error"] < 1e-6 and mismatch["max_rel_error"] < 1.3e-6  # inside CPU's tolerance
    assert info["sample"] and f"--case {rec['id']} --sample {info['sample_index']}" in info["repro"]


# --- no false failure -----------------------------------------------------------------------------

@pytest.mark.timeout(900)
@pytest.mark.parametrize("device", ["sim", "validation"])
def test_clean_device_passes_the_agree_kind(device, tmp_path):
    where = ["--validation"] if device == "validation" else ["--device", "sim", "--manifest", str(SIM_MANIFEST)]
    ops = [a for op in OPS for a in ("--op", op)]
    r = run_cli("run", *where, "--suite", "opinfo", *ops, "--case", "opinfo/*/agree", "--no-isolation",
                "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = records(latest_run(tmp_path))
    assert {rec["status"] for rec in recs} <= {"passed", "not_claimed", "not_applicable"}
    passed = [rec for rec in recs if rec["status"] == "passed"]
    assert len(passed) > 0.8 * len(recs) and {rec["info"]["op"] for rec in passed} >= set(OPS) - {"linalg.svd"}
    rules = [why for rec in passed for why in rec["info"]["agree_rules"].values()]
    # both rules were exercised: bit for bit (one kernel) and within the tolerance (the decomposition,
    # an in-place form against the functional one)
    assert any(why.startswith("bit for bit") for why in rules) and any(why.startswith("within") for why in rules)
    assert any("decomposition" in form for rec in passed for form in rec["info"]["agree_rules"])
    if device == "sim":  # the sim claims no complex32: not_claimed, as every kind's
        assert {rec["status"] for rec in recs if rec["id"] == "opinfo/add/complex32/agree"} == {"not_claimed"}


def test_a_disagreement_says_which_form_differs_from_cpu():
    """deg2rad of int32 on pytorch_ocl: the decomposition answered CPU's 0.1047, the functional form
    0.0 (unpromoted), and the message read the right one as "got", the wrong one as "expected". It
    names both sides now, and which of them CPU's answer for the same pair disagrees with."""
    from torchcts.cases.context import CaseContext
    from torchcts.cases.opinfo.agree import _Agree
    from torchcts.cases.opinfo.kernels import Rule
    from torchcts.manifest.templates import validation_manifest
    from torchcts.oracle.mismatch import OracleMismatch

    op = lookup("deg2rad")
    agree = _Agree(CaseContext(device=torch.device("cpu"), manifest=validation_manifest()), op, torch.float32)
    sample = next(iter(op.sample_inputs("cpu", torch.float32)))
    right = torch.deg2rad(sample.input)
    wrong = right + 1
    within = Rule(False, "within the tolerance")
    for first, second, named in ((wrong, right, "the functional form differs"),
                                 (right, wrong, "the Tensor method differs"),
                                 (wrong, wrong + 1, "both differ")):
        with pytest.raises(OracleMismatch) as caught:
            agree._compare("method", sample, first, second, within, lambda: (right, right.clone()))
        message = str(caught.value)
        assert "got: the Tensor method's, expected: the functional form's" in message, message
        assert f"{named} from CPU's answer" in message, message
