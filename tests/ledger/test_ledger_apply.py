"""The expectations ledger: matching, signatures, the end-of-run report, the strict gate, validation."""

from __future__ import annotations

import datetime as dt

import pytest

from torchcts.manifest.expectations import validate_entries
from torchcts.manifest.validate import validate
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.results.ledger.apply import apply, gate_failures, ledger_report
from torchcts.results.ledger.match import matches, registry_problems

TODAY = dt.date(2026, 11, 30)


def rec(case_id: str, status: str, message: str = "", **extra) -> CaseRecord:
    suite, *_rest = case_id.split("/")
    parts = case_id.split("/")
    return CaseRecord.from_json({"id": case_id, "suite": suite, "ops": [f"aten::{parts[2]}"], "dtype": parts[-1],
            "kind": parts[1], "status": status, "message": message, **extra})


MISMATCH = {"mismatch": {"what": "values differ", "max_abs_error": 1.0}}
MISSING = "NotImplementedError: Could not run 'aten::sub.Tensor' with arguments from the 'npu' backend."
ADD_F32 = "operators/elementwise/add/float32"
SUB_F16 = "operators/elementwise/sub/float16"


def entry(match, signature=None, **kw) -> dict:
    e = {"match": match, "status": "xfail", "reason": "known", "tracker": "BUG-1", **kw}
    if signature is not None:
        e["signature"] = signature
    return e


def test_matching_failure_with_same_signature_is_xfailed_with_reason_and_tracker():
    r = apply(rec(ADD_F32, "failed", "values differ: 3/4 elements differ", **MISMATCH), [entry(ADD_F32, "mismatch")], TODAY)
    assert r.status == "xfailed"
    assert r.expectation["reason"] == "known" and r.expectation["tracker"] == "BUG-1"
    assert r.expectation["original_status"] == "failed"
    assert r.signature == "mismatch: values differ"


def test_failure_with_a_different_signature_still_fails_with_a_note():
    e = entry({"op": "add", "dtype": "float32"}, "RuntimeError: device lost*")
    r = apply(rec(ADD_F32, "failed", "values differ", **MISMATCH), [e], TODAY)
    assert r.status == "failed"
    assert "RuntimeError: device lost*" in r.expectation["note"] and "mismatch: values differ" in r.expectation["note"]


def test_pass_of_an_expected_failure_is_xpassed_and_listed_for_removal():
    records = [apply(rec(ADD_F32, "passed"), [entry("operators/elementwise/add/*")], TODAY)]
    assert records[0].status == "xpassed"
    report = ledger_report([entry("operators/elementwise/add/*")], records, TODAY)
    assert report["xpassed"] == [{"id": ADD_F32, "entry": 0}]


def test_missing_kernel_signature_forms_all_match_the_raw_error():
    r = rec(SUB_F16, "error", MISSING, exception="NotImplementedError")
    for sig in ("missing_kernel", "missing_kernel: aten::sub*", "error", "NotImplementedError",
                {"exception": "NotImplementedError", "message": "Could not run 'aten::sub.Tensor'*"}):
        assert apply(r, [entry(SUB_F16, sig)], TODAY).status == "xfailed", sig
    assert apply(r, [entry(SUB_F16, "mismatch")], TODAY).status == "error"
    assert apply(r, [entry(SUB_F16, "missing_kernel: aten::add*")], TODAY).status == "error"


def test_error_signature_ignores_numbers_addresses_and_names():
    e = entry("operators/*", "RuntimeError: stream 7 failed at 0xdeadbeef on 'npu:1'")
    r = rec(ADD_F32, "error", "RuntimeError: stream 2 failed at 0x7f00aa on 'npu:0'", exception="RuntimeError")
    assert apply(r, [e], TODAY).status == "xfailed"


def test_known_crash_without_signature_forgives_only_a_crash_or_timeout():
    e = entry(ADD_F32, status="known_crash")
    assert apply(rec(ADD_F32, "crashed", "worker exited with signal 11"), [e], TODAY).status == "xfailed"
    assert apply(rec(ADD_F32, "timeout", "exceeded 300 s"), [e], TODAY).status == "xfailed"
    assert apply(rec(ADD_F32, "failed", "values differ", **MISMATCH), [e], TODAY).status == "failed"


def test_known_crash_ids_name_the_cases_to_isolate():
    from torchcts.results.ledger.apply import known_crash_ids

    entries = [entry(ADD_F32), entry("operators/elementwise/*", status="known_crash")]
    cases = [rec(i, "passed").selector_view() for i in (ADD_F32, SUB_F16, "operators/core/zeros/float32")]
    assert known_crash_ids(entries, cases) == {SUB_F16}


def test_expired_and_unmatched_entries_are_reported_and_fail_only_a_strict_run():
    entries = [
        entry("operators/elementwise/sub/*", "missing_kernel", expires="2026-01-01"),  # expired, still applies
        entry({"op": "abs", "dtype": "float64"}),  # matches no selected case
    ]
    records = [apply(rec(SUB_F16, "error", MISSING, exception="NotImplementedError"), entries, TODAY),
               apply(rec(ADD_F32, "passed"), entries, TODAY)]
    assert records[0].status == "xfailed" and records[0].expectation["expired"] is True
    report = ledger_report(entries, records, TODAY)
    assert [x["entry"] for x in report["expired"]] == [0]
    assert [x["entry"] for x in report["unmatched"]] == [1]
    run = {"totals": {"passed": 1, "xfailed": 1}, "ledger": report}
    assert gate_failures(Run.from_json(run)) == []
    strict = gate_failures(Run.from_json({**run, "strict_expectations": True}))
    assert any("expired" in s for s in strict) and any("unmatched" in s for s in strict)
    # issue 40: an entry naming only cases the selection left out (engine/selection.py) is counted apart
    focused = ledger_report(entries, records, TODAY, outside=[1])
    assert focused["unmatched"] == [] and focused["outside_selection"] == 1
    assert gate_failures(Run(totals=run["totals"], ledger=focused, strict_expectations=True)) == \
        [s for s in strict if "unmatched" not in s]


def test_unexpired_entry_on_its_expiry_day_is_not_expired():
    report = ledger_report([entry(ADD_F32, expires="2026-11-30")], [rec(ADD_F32, "passed")], TODAY)
    assert report["expired"] == []


def test_flaky_fails_only_a_strict_run_and_real_failures_always_fail():
    assert gate_failures(Run(totals={"passed": 3, "flaky": 1})) == []
    assert gate_failures(Run(totals={"flaky": 1}, strict_expectations=True)) == ["1 flaky"]
    assert gate_failures(Run(totals={"xpassed": 2}, strict_expectations=True)) == ["2 xpassed (strict expectations)"]
    assert gate_failures(Run(totals={"failed": 1, "xfailed": 4})) == ["1 failed"]


def test_first_matching_entry_decides():
    entries = [entry(ADD_F32, "RuntimeError"), entry("operators/*", "mismatch")]
    r = apply(rec(ADD_F32, "failed", "values differ", **MISMATCH), entries, TODAY)
    assert r.status == "failed" and r.expectation["entry"] == 0


def test_selector_fields():
    r = rec(ADD_F32, "failed")
    assert matches({"match": {"op": "aten::add", "suite": "operators", "kind": "elementwise"}}, r.selector_view())
    assert matches({"match": {"dtype": ["float16", "float"]}}, r.selector_view())  # alias
    assert not matches({"match": {"op": "add", "dtype": "float16"}}, r.selector_view())
    assert matches({"match": {"case": "operators/*/add/*"}}, r.selector_view())


@pytest.mark.parametrize("bad, expected", [
    ({"match": {"opp": "add"}}, "unknown selector key 'opp'"),
    ({"match": {"dtype": "float33"}}, "unknown dtype 'float33'"),
    ({"match": {"suite": "nosuch"}}, "unknown suite 'nosuch'"),
    ({"signature": "mismatched"}, "unknown signature bucket 'mismatched': did you mean 'mismatch'?"),
    ({"signature": "timeuot: x"}, "unknown signature bucket 'timeuot: x': did you mean 'timeout'?"),
    ({"signature": {"exc": "RuntimeError"}}, "signature must be"),
    ({"expires": "next year"}, "expires must be a date"),
    ({"status": "skip"}, "status must be one of"),
])
def test_structural_problems_name_the_key_path(bad, expected):
    problems = validate_entries([{**entry(ADD_F32), **bad}])
    assert any(expected in p and "expectations[0]" in p for p in problems), problems


def test_accepted_signature_forms():
    for sig in ("mismatch", "crash", "RuntimeError", "_LinAlgError", "missing_kernel: aten::sub*",
                "RuntimeError: boom*", "*: device lost", {"exception": "RuntimeError"}):
        assert validate_entries([entry(ADD_F32, sig)]) == [], sig


def test_manifest_normalises_torch_dtypes_and_toml_dates():
    import torch

    raw = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
           "capabilities": {c: False for c in ("inference", "training", "rng", "device_api", "multi_device")},
           "expectations": [entry({"op": "add", "dtype": torch.float16}, expires=dt.date(2027, 1, 1))]}
    manifest, problems = validate(raw)
    assert problems == []
    assert manifest.expectations[0]["match"]["dtype"] == "float16"
    assert manifest.expectations[0]["expires"] == "2027-01-01"


def test_registry_check_flags_matches_that_name_no_case():
    entries = [entry(ADD_F32), entry({"op": "add", "dtype": "float32"}), entry("operators/elementwise/nosuchop/*"),
               entry({"op": "nosuchop"}), entry("opinfo-typo/*")]
    problems = registry_problems(entries)
    assert len(problems) == 3
    assert "expectations[2].match" in problems[0] and "expectations[3].match" in problems[1]
    assert "expectations[4].match" in problems[2]


def test_check_manifest_reports_a_selector_matching_no_op(tmp_path, monkeypatch, capsys, cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "torchcts.toml").write_text(
        'manifest_version = 1\ndevice_name = "cpu"\n'
        '[supported_dtypes]\nfloat32 = true\n'
        '[capabilities]\ninference = true\ntraining = false\nrng = false\ndevice_api = false\nmulti_device = false\n'
        '[[expectations]]\nmatch = { op = "nosuchop", dtype = "float32" }\nstatus = "xfail"\nreason = "r"\n'
        '[[expectations]]\nmatch = "operators/elementwise/add/float32"\nstatus = "xfail"\nreason = "r"\n'
        'expires = 2027-06-30\nsignature = "mismatch"\n'
    )
    assert cli(["check-manifest", "--no-import"]) == 2
    err = capsys.readouterr().err
    assert "expectations[0].match" in err and "names no known case" in err
    assert "expectations[1]" not in err


def test_compiled_ledger_picks_the_first_entry_across_globs_and_selectors():
    from torchcts.results.ledger.match import LedgerMatcher

    entries = [entry("operators/elementwise/mul/*"), entry({"op": "add", "dtype": "float16"}),
               entry("operators/*/add/*"), entry({"op": "add"}), entry("operators/*")]
    m = LedgerMatcher(entries)
    assert m.first(rec(ADD_F32, "passed").selector_view()) == 2
    assert m.first(rec("operators/elementwise/add/float16", "passed").selector_view()) == 1
    assert m.first(rec("operators/core/zeros/float32", "passed").selector_view()) == 4
    assert m.first(rec("other/elementwise/add/float32", "passed").selector_view()) == 3
    assert m.first(rec("other/x/y/float32", "passed").selector_view()) is None
    # entries 0 and 3 never decide for these records: reported unmatched (dead or shadowed)
    recs = [apply(rec(i, "passed"), entries, TODAY) for i in (ADD_F32, "operators/core/zeros/float32")]
    assert [x["entry"] for x in ledger_report(entries, recs, TODAY)["unmatched"]] == [0, 1, 3]


def test_a_records_ledger_note_reads_typed_and_round_trips():
    """A record's `expectation` (results/ledger/note.py, issue 52 item 1): what the ledger writes reads
    back equal and writes the same JSON; a crafted one reads field by field, a wrong type as unset."""
    from torchcts.results.ledger.note import LedgerNote

    note = LedgerNote(entry=2, status="known_failure", reason="r", tracker="https://t/1", expired=True,
                      original_status="failed")
    data = note.to_json()
    assert data == {"entry": 2, "status": "known_failure", "reason": "r", "tracker": "https://t/1", "expired": True,
                    "original_status": "failed"}  # expires unset: not written, as the ledger always wrote it
    assert LedgerNote.from_json(data) == note and LedgerNote.from_json(data).to_json() == data
    crafted = LedgerNote.from_json({"entry": True, "note": 5, "expired": "yes"})
    assert crafted is not None and (crafted.entry, crafted.note, crafted.expired) == (None, None, False)
    assert not crafted.names_entry_of([{}]) and LedgerNote(entry=0).names_entry_of([{}])
    assert not LedgerNote(entry=1).names_entry_of([{}]) and LedgerNote.from_json(None) is None
