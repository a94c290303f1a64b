"""The `field` suite (issue 50 item 1): one case per real report of a backend bug.

Framework: ids name the class and the report, `cite=` travels Case -> CaseRecord -> cases.jsonl ->
summary.md and report.html (linked only when it is a plain http(s) URL), the package gathers every
module in it, `--suite field` and `--op` select its cases. Detection: planted sim faults of the
reports' classes that a field case catches (the runs are subprocesses: the sim renames PrivateUse1).
"""

from __future__ import annotations

import re
import sys
import types

import pytest

from torchcts.cases.model import Case
from torchcts.cases.registry import KNOWN_SUITE_NAMES, SUITES, suite_cases
from torchcts.results.failure import cite_url, details
from torchcts.results.html_failures import failure_row
from torchcts.results.outcome import RunOutcome
from torchcts.results.records import CaseRecord
from torchcts.results.statuses import Status
from torchcts.results.summary import render_markdown

ID = re.compile(r"field/[A-Z]{1,2}[0-9]{1,2}/[A-Za-z0-9_.-]+-[A-Za-z0-9_.-]+-[0-9]+(/[A-Za-z0-9_.-]+)*")
CITE = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(issues|pull)/[0-9]+")


@pytest.fixture(scope="module")
def field_cases() -> list[Case]:
    return suite_cases("field")


def test_field_is_a_registered_suite():
    assert "field" in SUITES and "field" in KNOWN_SUITE_NAMES
    assert SUITES["field"].module == "torchcts.cases.suites.field"


def test_every_id_names_its_class_and_the_report_it_cites(field_cases):
    assert len(field_cases) >= 1
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
    md = render_markdown(RunOutcome(name="r"), [_failed(url)])
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
    assert f"<{bad}>" not in render_markdown(RunOutcome(name="r"), [_failed(bad)])


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
