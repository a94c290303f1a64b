"""The `field` suite (issue 50 item 1): one case per real report of a backend bug.

Framework: ids name the class and the report, `cite=` travels Case -> CaseRecord -> cases.jsonl ->
summary.md and report.html (linked only when it is a plain http(s) URL), the package gathers every
module in it, `--suite field` and `--op` select its cases. Detection: planted sim faults of the
reports' classes that a field case catches (the runs are subprocesses: the sim renames PrivateUse1).
"""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest
from helpers.runs import latest_run, records, run_cli

from torchcts.cases.registry import KNOWN_SUITE_NAMES, SUITES, suite_cases
from torchcts.engine.selection import user_selects
from torchcts.engine.selftest import ENV, SIM_MANIFEST
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.selection import Selection
from torchcts.model.status import Status
from torchcts.results.reports.failure import cite_url, details
from torchcts.results.reports.html_failures import failure_row
from torchcts.results.reports.summary import render_markdown

ID = re.compile(r"field/[A-Z]{1,2}[0-9]{1,2}/[A-Za-z0-9_.-]+-[A-Za-z0-9_.-]+-[0-9]+(/[A-Za-z0-9_.-]+)*")
CITE = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(issues|pull)/[0-9]+")


@pytest.fixture(scope="module")
def field_cases() -> list[Case]:
    return suite_cases("field")


def test_field_is_a_registered_suite():
    assert "field" in SUITES and "field" in KNOWN_SUITE_NAMES
    assert SUITES["field"].module == "torchcts.cases.suites.field"


def test_every_id_names_its_class_and_the_report_it_cites(field_cases):
    assert len(field_cases) >= 45
    assert len({c.cite for c in field_cases}) >= 30  # distinct reports
    assert len({c.kind for c in field_cases}) >= 16  # classes (V1..V16 at least)
    for case in field_cases:
        assert ID.fullmatch(case.id), case.id
        assert case.cite and CITE.fullmatch(case.cite), (case.id, case.cite)
        cls, report = case.id.split("/")[1:3]
        owner_repo, number = report.rsplit("-", 1)
        # the id's report is the cited one: owner-repo-number <-> github.com/owner/repo/.../number
        owner, repo, kind, num = case.cite.removeprefix("https://github.com/").split("/")
        assert (f"{owner}-{repo}", number) == (owner_repo, num), case.id
        assert case.kind == cls and case.suite == "field" and 2 <= case.level <= 8
        assert case.ops, f"{case.id} declares no op: --op could not select it"
    assert len({c.id for c in field_cases}) == len(field_cases)


def test_cite_round_trips_case_record_and_jsonl():
    case = Case(id="field/V5/pytorch-pytorch-1/float32", suite="field", level=2, runner="m:f",
                cite="https://github.com/pytorch/pytorch/issues/1")
    assert Case.from_json(case.to_json()) == case
    uncited = Case(id="operators/x", suite="operators", level=1, runner="m:f")
    assert "cite" not in uncited.to_json() and Case.from_json(uncited.to_json()) == uncited
    rec = CaseRecord.from_case(case, status=Status.FAILED, message="differs")
    assert rec.cite == case.cite
    back = CaseRecord.from_text(rec.to_text())
    assert back.cite == case.cite and back.to_json() == rec.to_json()
    assert back.internal("judging", ValueError("x")).cite == case.cite  # an internal error keeps it
    # a case without a citation writes no key; a garbled one is coerced to text, never a crash
    plain = CaseRecord.from_case(Case(id="operators/x", suite="operators", level=1, runner="m:f"))
    assert "cite" not in plain.to_json()
    assert CaseRecord.from_json({"id": "a", "status": "failed", "cite": ["x"]}).cite == '["x"]'


def _failed(cite: str) -> CaseRecord:
    return CaseRecord(id="field/V5/pytorch-pytorch-143976/float32", suite="field", level=2, kind="V5",
                      status=Status.FAILED, message="values differ", cite=cite,
                      repro="torchcts run --device sim --case field/V5/pytorch-pytorch-143976/float32")


def test_summary_and_report_link_a_failing_field_case():
    url = "https://github.com/pytorch/pytorch/issues/143976"
    md = render_markdown(Run(name="r"), [_failed(url)])
    assert f"replays the report: <{url}>" in md
    row = failure_row(_failed(url), scripts=())
    assert f"href='{url}'" in row and "replays the report" in row
    assert f"replays the report {url}" in details(_failed(url))  # the console's lines


@pytest.mark.parametrize("bad", ["javascript:alert(1)", "https://x.org/a'onmouseover='b", "https://x.org/<b>",
                                 "http://x y"])
def test_an_unsafe_cite_is_shown_as_text_never_linked(bad):
    assert cite_url(_failed(bad)) is None
    row = failure_row(_failed(bad), scripts=())
    assert "<a " not in row and "<b>b" not in row and "onmouseover='" not in row
    assert f"<{bad}>" not in render_markdown(Run(name="r"), [_failed(bad)])


def test_the_package_gathers_every_module_it_holds(monkeypatch):
    """A new module in the package is picked up with no edit elsewhere; one without cases() is an error."""
    import torchcts.cases.suites.field as field
    from torchcts.cases.api import CaseSet

    before = {c.id for c in field.cases()}
    extra = types.ModuleType("torchcts.cases.suites.field.zz_probe")
    probe = CaseSet("field")

    @probe.case("V1/example-repo-7", level=2, ops=("aten::add",), cite="https://github.com/example/repo/issues/7")
    def zz_probe(ctx):  # pragma: no cover - never run
        """never run"""

    extra.cases = probe.cases
    found = field.modules()
    monkeypatch.setattr(field, "modules", lambda: sorted([*found, extra.__name__]))
    monkeypatch.setitem(sys.modules, extra.__name__, extra)
    ids = {c.id for c in field.cases()}
    assert ids == before | {"field/V1/example-repo-7"}
    del extra.cases
    with pytest.raises(TypeError, match="defines no cases"):
        field.cases()


def test_modules_lists_the_package_sorted():
    import torchcts.cases.suites.field as field

    names = field.modules()
    assert "torchcts.cases.suites.field.values" in names and names == sorted(names)


def test_suite_and_op_select_field_cases(field_cases):
    """`--suite field` takes every field case and nothing else; `--op` reaches a field case through its
    declared ops (aten names, overloads and the plain name), as for any suite."""
    others = [c for c in suite_cases("operators")[:50]]
    suite = Selection(suites=["field"])
    assert all(user_selects(c, suite, 1, 8) for c in field_cases)
    assert not any(user_selects(c, suite, 1, 8) for c in others)
    by_op = {c.id for c in field_cases if user_selects(c, Selection(ops=["nextafter"]), 1, 8)}
    assert by_op >= {"field/V6/pytorch-pytorch-124985/float32", "field/V7/pytorch-pytorch-150027/float32",
                     "field/V7/pytorch-pytorch-190740/bfloat16"}
    assert all("aten::nextafter" in c.ops for c in field_cases if c.id in by_op)
    assert {c.id for c in field_cases if user_selects(c, Selection(ops=["aten::mm"]), 1, 8)} >= {
        "field/V4/pytorch-pytorch-193487/float32", "field/V3/ROCm-rocBLAS-340/float16"}
    # levels: a level-8 case (a 100 MB argsort) stays out of a default level-2 run
    assert not any(user_selects(c, Selection(), 1, 2) for c in field_cases if c.level == 8)


# The field suite's planted faults (torchcts/sim/faults_field.py), each the bug of one report, and the
# field case that replays that report.
FIELD_FAULTS = {
    "mm_long_k_overread": "field/V4/pytorch-pytorch-193487/float32",
    "pow_float16_ulp": "field/V2/microsoft-DirectML-370/float16",
    "index_select_int32_first_32": "field/V3/torch-spyre-torch-spyre-3851/float16",
}
# Field cases of other reports that the same faults also break (their reports' root cause is the
# planted bug's), each with the fault that breaks it: MPS gradients wrong past 32K rows (#177116) run
# a Linear weight gradient as an mm with K = 32,776.
ALSO_CAUGHT = {"field/A1/pytorch-pytorch-177116/float32": "mm_long_k_overread"}


def test_field_faults_are_caught_by_a_plain_op_run_where_opinfo_is_not(tmp_path: Path):
    """A user's plain `--op` run of the three ops (every suite, every level) on the sim with the three
    report-shaped faults planted: the field cases fail, each by its own fault, and every OpInfo case of
    the same ops and dtypes passes (past OpInfo's sizes, inside the float16 tolerance, behind an int32
    index longer than its samples'). The failing records cite their reports, summary.md and report.html
    link them."""
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--no-isolation", "--level", "8",
                "--op", "mm", "--op", "pow", "--op", "index_select", "--dtype", "float32", "--dtype", "float16",
                "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path, env={ENV: ",".join(FIELD_FAULTS)})
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    run = latest_run(tmp_path)
    recs = {rec["id"]: rec for rec in records(run)}
    failed = {i for i, rec in recs.items() if rec["status"] in ("failed", "error", "crashed")}
    assert failed == set(FIELD_FAULTS.values()) | set(ALSO_CAUGHT)
    opinfo = [rec for rec in recs.values() if rec["id"].startswith("opinfo/")]
    assert len(opinfo) >= 15 and all(rec["status"] in ("passed", "not_applicable", "pending") for rec in opinfo)
    assert sum(rec["status"] == "passed" for rec in opinfo) >= 15
    summary, html = (run / "summary.md").read_text(), (run / "report.html").read_text()
    for case in FIELD_FAULTS.values():
        cite = recs[case]["cite"]
        assert CITE.fullmatch(cite) and cite.rsplit("/", 1)[1] == case.split("/")[2].rsplit("-", 1)[1]
        assert f"replays the report: <{cite}>" in summary
        assert f"href='{cite}'" in html


def test_the_clean_sim_passes_what_the_faults_fail(tmp_path: Path):
    """The same three cases pass on the clean sim: the faults, not the cases, make them fail."""
    selection = [a for case in FIELD_FAULTS.values() for a in ("--case", case)]
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--no-isolation", *selection,
                "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = records(latest_run(tmp_path))
    assert {rec["id"]: rec["status"] for rec in recs} == dict.fromkeys(FIELD_FAULTS.values(), "passed")
    assert all(json.dumps(rec).count("github.com") == 1 for rec in recs)  # the cite, once


def test_expect_identical_is_bit_for_bit():
    """The field cases' exact comparison: NaN equals NaN, a one-ulp difference fails where any float
    tolerance would pass, -0.0 against 0.0 fails only when the sign is defined, dtype and shape must match."""
    import torch

    from torchcts.cases.api import expect_identical
    from torchcts.oracle.compare import OracleMismatch

    x = torch.tensor([1.0, float("nan"), -0.0], dtype=torch.float16)
    expect_identical(x.clone(), x, "same")
    expect_identical(torch.tensor([1.0, float("nan"), 0.0], dtype=torch.float16), x, "zeros' sign not asked")
    signed = "signed: sign of zero differs: 1/3 elements differ.*first at index \\[2\\]: got 0.0, expected -0.0"
    with pytest.raises(OracleMismatch, match=signed):
        expect_identical(torch.tensor([1.0, float("nan"), 0.0], dtype=torch.float16), x, "signed", signed_zero=True)
    with pytest.raises(OracleMismatch, match="one ulp: values differ.*first at index \\[0\\]: got 1.0009765625, expected 1.0"):
        expect_identical(torch.nextafter(x, torch.full_like(x, 2.0)), x, "one ulp")
    with pytest.raises(OracleMismatch, match="dtype: dtype mismatch; got float32\\[3\\].*expected float16\\[3\\]"):
        expect_identical(x.float(), x, "dtype")
