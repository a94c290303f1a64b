"""Issue 30 item 3: the op that failed is the op named.

Suites prepare inputs on CPU, so a device missing abs fails abs's own cases and no case that only
made its inputs non-negative with it; where a case needs a second device op (`ctx.helper_op`), its
record names that op (`failed_op`) and triage counts the failure under it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.paths import TESTS
from helpers.runs import latest_run, run_cli

from torchcts.cases.context import CaseContext
from torchcts.manifest.templates import validation_manifest
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.results.records import rundir
from torchcts.results.triage.clusters import clusters, op_of, render_text

# Cases that used abs on the device to prepare their inputs before issue 30 (pow's exponent, fmod's
# integer divisor, polar's magnitude), the case of abs itself, and two that declare a helper op.
PREPARED = ("mixed_dtypes/pair/pow/others/float32", "mixed_dtypes/pair/fmod/others/int32",
            "dtypes/complex/polar/complex64")
OWN = "operators/elementwise/abs/float32"
HELPER, WRONG = "helper_op/neg_of_abs/float32", "helper_op/wrong_helper_value/float32"

MANIFEST = """\
import os, runpy, torchcts

_sim = runpy.run_path(os.path.join(os.path.dirname(torchcts.__file__), "sim", "manifest.py"))["manifest"]
manifest = {**_sim, "backend_import": "helpers.BROKEN", "expectations": []}
"""


def _run_without(root: Path, broken: str, cases: tuple[str, ...]) -> Path:
    """One in-process run of cases on the sim with tests/helpers/BROKEN imported: the run's folder."""
    (root / "manifest.py").write_text(MANIFEST.replace("BROKEN", broken))
    env = {"TORCHCTS_EXTRA_SUITES": "helper_op=helpers.helper_op_suite",
           "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    args = [a for case in cases for a in ("--case", case)]
    r = run_cli("run", "--device", "sim", *args, "--no-isolation", "--", "-q", "-p", "no:cacheprovider",
                cwd=root, env=env)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    return latest_run(root)


@pytest.fixture(scope="module")
def broken_abs_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CaseRecord]:
    """One in-process run on a sim without abs (tests/helpers/sim_abs_broken.py): its records by id."""
    run = _run_without(tmp_path_factory.mktemp("no_abs"), "sim_abs_broken", (*PREPARED, OWN, HELPER, WRONG))
    return {rec.id: rec for rec in rundir.read_records(run)} | {"summary.md": (run / "summary.md").read_text()}


def test_a_gap_in_abs_fails_only_abs(broken_abs_run):
    for case in PREPARED:  # inputs made on CPU: abs never ran on the device
        assert broken_abs_run[case].status == Status.PASSED, (case, broken_abs_run[case].message)
    own = broken_abs_run[OWN]
    assert own.status == Status.ERROR and "aten::abs has no kernel" in own.message
    assert own.failed_op is None and op_of(own) == "aten::abs"  # the op under test: no helper named


def test_a_helper_ops_failure_names_that_op(broken_abs_run):
    rec = broken_abs_run[HELPER]
    assert rec.status == Status.ERROR and rec.ops == ["aten::neg"] and rec.failed_op == "aten::abs"
    wrong = broken_abs_run[WRONG]
    assert wrong.status == Status.FAILED and wrong.failed_op == "aten::planted_helper"
    # triage counts each under the op that failed, and the reports say it was a helper op
    failing = [r for r in broken_abs_run.values() if isinstance(r, CaseRecord)]
    by_op = {op for c in clusters(failing) for op in c.ops}
    assert by_op == {"aten::abs", "aten::planted_helper"}
    assert "aten::neg" not in render_text(failing)
    assert "failed in aten::abs, a helper op (not the op under test)" in broken_abs_run["summary.md"]


def test_a_gap_in_sum_fails_no_other_ops_backward(tmp_path):
    """Backward cases used to sum the weighted outputs on the device: a device without sum failed
    (or, crashing there, crashed) every op's backward and explore case, named as that op."""
    cases = ("opinfo/sin/float32/backward", "opinfo/abs/float32/explore", "opinfo/sum/float32/forward")
    records = {rec.id: rec for rec in rundir.read_records(_run_without(tmp_path, "sim_sum_broken", cases))}
    for case in cases[:2]:
        assert records[case].status == Status.PASSED, (case, records[case].message)
    assert records[cases[2]].status == Status.ERROR and "has no kernel" in records[cases[2]].message


def test_failed_op_round_trips_and_follows_the_exception():
    rec = CaseRecord(id="s/c", status=Status.ERROR, failed_op="aten::abs")
    assert CaseRecord.from_json(rec.to_json()) == rec and rec.to_json()["failed_op"] == "aten::abs"
    assert CaseRecord.from_json({"id": "x", "status": "error", "failed_op": 3}).failed_op == "3"  # coerced
    ctx = CaseContext(device=None, manifest=validation_manifest())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError) as helper:
        with ctx.helper_op("aten::abs"):
            raise RuntimeError("no kernel")
    try:
        raise ValueError("the case's own check") from helper.value
    except ValueError as chained:
        assert ctx.verdict.failed_op_of(chained) == "aten::abs"  # raised from the helper's failure
    assert ctx.verdict.failed_op_of(RuntimeError("the op under test")) is None  # another exception: not the helper's


def test_opinfos_output_helper_runs_on_a_cpu_copy(tmp_path):
    """Issue 40 item 4: OpInfo's output_process_fn_grad (the sign-fixing abs of an SVD's factors) was
    applied to the device's output, so a device whose abs fails (OpenReg's wants contiguous input)
    failed svd and linalg.svd forward and backward; the decomposition itself was right."""
    cases = ("opinfo/linalg.svd/float32/forward", "opinfo/svd/float32/backward", "opinfo/abs/float32/forward")
    records = {rec.id: rec for rec in rundir.read_records(_run_without(tmp_path, "sim_abs_broken", cases))}
    for case in cases[:2]:
        assert records[case].status == Status.PASSED, (case, records[case].message)
    assert records[cases[2]].status == Status.ERROR  # abs itself still fails: the planted gap is real
