"""show-skips' summary and summary.md's "Not claimed or not applicable" section (results/reports/skips.py)."""

from __future__ import annotations

from torchcts.engine.selection import claim_decision
from torchcts.manifest.templates import cpu_manifest
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord, skip_record
from torchcts.model.run import Run
from torchcts.results.reports.skips import render_markdown, render_text, summarize
from torchcts.results.reports.summary import render_markdown as summary_md


def _case(id: str, dtype: str | None = "float32", requires: tuple[str, ...] = (), na: str | None = None,
          suite: str = "opinfo") -> Case:
    return Case(id=id, suite=suite, level=2, runner="m:f", ops=(f"aten::{id.split('/')[1]}",), dtype=dtype,
                requires=requires, not_applicable=na)


def _records() -> list[dict]:
    manifest = cpu_manifest()
    manifest.capabilities = {**manifest.capabilities, "compile": False, "rng": False}
    cases = [
        _case("opinfo/add/complex32/forward", "complex32"),
        _case("opinfo/mul/complex32/forward", "complex32"),
        _case("compiler_ops/add/float32", requires=("compile",), suite="compiler_ops"),
        _case("rng/rand/float32", requires=("rng", "compile|streams"), suite="rng"),
        _case("opinfo/t/uint16/forward", "uint16", na="t is not supported for uint16 on CPU (the oracle)"),
        _case("opinfo/cdist/uint32/forward", "uint32", na="cdist is not supported for uint32 on CPU (the oracle)"),
        _case("opinfo/add/float32/forward"),  # runs
    ]
    decisions = [claim_decision(c, manifest) for c in cases]
    return [skip_record(d.case, d.status, d.reason) for d in decisions if d.status != "run"] + [
        CaseRecord(id="opinfo/add/float32/forward", status="passed")]


def test_counts_per_dtype_capability_reason_and_op() -> None:
    s = summarize(_records())
    assert s.by_status == {"not_claimed": 4, "not_applicable": 2}
    assert s.by_dtype == {"complex32": 2}
    # a case missing two capabilities counts for each; an any-of group reads as one
    assert s.by_capability == {"compile": 1, "rng": 1, "compile or streams": 1}
    # one rule excluding many ops is one reason line, also for a one-letter op name
    assert s.by_reason == {("not_applicable", "{op} is not supported for {dtype} on CPU (the oracle)"): 2}
    assert s.by_op["add"] == 2 and s.total == 6


def test_text_and_markdown_show_the_same_rows() -> None:
    records = _records()
    text = "\n".join(render_text(summarize(records)))
    assert "     2  complex32" in text and "ops with the most skipped cases" in text
    md = "\n".join(render_markdown(records))
    assert "| complex32 | 2 |" in md and "| compile or streams | 1 |" in md
    assert "6 cases did not run (4 not_claimed, 2 not_applicable)" in md


def test_reason_rows_name_their_placeholders_and_one_case() -> None:
    """issue 30: raw {op}/{dtype} read as a template bug; a row shows <op>, <dtype> and an example."""
    records = _records()
    text = "\n".join(render_text(summarize(records)))
    assert "{op}" not in text and "{dtype}" not in text
    assert "not_applicable: <op> is not supported for <dtype> on CPU (the oracle); e.g. t, uint16" in text
    md = "\n".join(render_markdown(records))
    assert "{op}" not in md and ("| not_applicable: \\<op\\> is not supported for \\<dtype\\> on CPU (the oracle); "
                                 "e.g. t, uint16 | 2 |") in md


def test_summary_md_has_the_section_near_the_top_and_none_when_all_ran() -> None:
    run = Run.from_json({"name": "r", "device": {"type": "cpu"}, "status": "complete"})
    md = summary_md(run, _records())
    assert md.index("## Not claimed or not applicable") < md.index("## By level")
    assert "Not claimed or not applicable" not in summary_md(run, [CaseRecord(id="a/b", status="passed")])


def test_markdown_escapes_record_text() -> None:
    bad = CaseRecord(id="x/y", status="not_applicable", message="<script>|`x`")
    md = "\n".join(render_markdown([bad]))
    assert "<script>" not in md and "\\|" in md
