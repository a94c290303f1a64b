"""Every implementable surface a run did not observe gets one reason from coverage/gaps.py's fixed set."""

from __future__ import annotations

import json
from pathlib import Path

from torchcts.coverage.gaps import GAP_REASONS, Declaring, by_reason, classify, first_error


def _run(root: Path) -> Path:
    """A run whose records give each reason of GAP_REASONS a surface."""
    run = root / "results" / "20260101T000000Z-gaps00"
    run.mkdir(parents=True)
    spec = {"name": run.name, "status": "complete", "device": {"type": "cpu"}, "manifest": {}, "selection": {},
            "validation": True}
    (run / "run.json").write_text(json.dumps(spec))
    recs = [
        # declares sub.Tensor, dispatches add.Tensor only
        {"id": "a/1", "suite": "a", "status": "passed", "ops": ["aten::sub.Tensor"], "dispatched": ["aten::add.Tensor"]},
        # declares div.Tensor, never executed
        {"id": "a/2", "suite": "a", "status": "not_claimed", "ops": ["aten::div.Tensor"]},
        # declares exp (every non-out overload of the packet), executed unobserved
        {"id": "c/1", "suite": "compiler", "status": "passed", "ops": ["aten::exp"],
         "dispatch_unobserved": "torch.compile traces under a dispatch mode differently"},
        {"id": "generated/nll_loss_forward/float32", "suite": "generated", "status": "pending",
         "message": "CPU rejected all 7 generated inputs, so there is no reference "
                    "(first: RuntimeError: multi-target not supported)", "ops": ["aten::nll_loss_forward"]},
    ]
    (run / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (root / "results" / "latest").write_text(run.name + "\n")
    return run


def test_every_unobserved_surface_has_a_reason_grouped_with_counts(cli, workdir, capsys):
    run = _run(workdir)
    assert cli(["coverage", "report", "results/latest", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    gaps = {u["surface"]: u for u in summary["unobserved"]}
    assert len(gaps) == summary["headline"]["implementable"] - summary["headline"]["observed"]
    assert all(u["reason"] in GAP_REASONS and u["detail"] for u in gaps.values())
    assert sum(g["count"] for g in summary["unobserved_by_reason"]) == len(gaps)
    assert gaps["aten::nll_loss_forward"]["reason"] == "pending"
    assert gaps["aten::nll_loss_forward"]["detail"] == ("pending: CPU rejects the synthesized inputs: "
                                                      "RuntimeError: multi-target not supported")
    assert gaps["aten::sub.Tensor"]["reason"] == "not_dispatched" and "a/1" in gaps["aten::sub.Tensor"]["detail"]
    assert gaps["aten::div.Tensor"]["reason"] == "not_executed" and "not_claimed 1" in gaps["aten::div.Tensor"]["detail"]
    assert gaps["aten::exp"]["reason"] == "dispatch_unobserved" and "torch.compile" in gaps["aten::exp"]["detail"]
    assert "aten::exp.out" in gaps and gaps["aten::exp.out"]["reason"] != "dispatch_unobserved"  # packet: no out=
    assert gaps["aten::_pin_memory"]["reason"] == "unsafe" and "pinned" in gaps["aten::_pin_memory"]["detail"]
    assert gaps["aten::set.source_Storage_out"]["reason"] == "no_generator"
    assert gaps["aten::mul.Tensor"]["reason"] == "not_in_run"  # another suite's case declares it, not in this run
    # the groups are in report.html (from run.json) and the Markdown, every gap listed with its reason
    html = (run / "report.html").read_text()
    assert "id='coverage-gaps'" in html and "<td>not_dispatched</td>" in html
    assert cli(["coverage", "report", str(run), "--list-unobserved"]) == 0
    text = capsys.readouterr().out
    assert f"## Why {len(gaps)} implementable surfaces were not observed" in text
    assert "| aten::sub.Tensor | functional | native | not_dispatched | declared by a/1 but not dispatched" in text


def _row(case_id: str, status: str = "passed", observed: bool = True, why: str = "") -> Declaring:
    return Declaring(case_id, status, status == "passed", observed, why)


def test_classify_takes_the_first_reason_that_holds():
    never = lambda surface: None  # noqa: E731
    assert classify("aten::x", "CPU rejected (first: ValueError: bad\nmore)", [_row("a")], never) == (
        "pending", "pending: CPU rejects the synthesized inputs: ValueError: bad")
    rows = [_row("u", observed=False, why="compiled"), _row("o"), _row("n", "not_applicable", False)]
    assert classify("aten::x", None, rows, never)[0] == "not_dispatched"
    assert classify("aten::x", None, rows[:1], never) == ("dispatch_unobserved",
                                                       "declared by u, whose dispatch was not observed: compiled")
    assert classify("aten::x", None, rows[2:], never)[0] == "not_executed"
    assert classify("aten::x", None, [], lambda s: "unsafe: reads a file")[0] == "unsafe"
    assert classify("aten::x", None, [], lambda s: "unsupported: argument source")[0] == "no_generator"
    assert classify("aten::x", None, [], never)[0] == "not_in_run"
    many = [_row(f"c/{i}") for i in range(5)]
    assert classify("aten::x", None, many, never)[1] == "declared by c/0, c/1, c/2 and 2 more but not dispatched in this run"


def test_first_error_and_grouping():
    assert first_error("no parenthesis here") == "no parenthesis here"
    assert first_error("CPU rejected all 2 (first: RuntimeError: a (b))") == "RuntimeError: a (b)"
    groups = by_reason([{"surface": "s1", "reason": "unsafe"}, {"surface": "s2", "reason": "pending"},
                        {"surface": "s3", "reason": "unsafe"}])
    assert [(g["reason"], g["count"]) for g in groups] == [("pending", 1), ("unsafe", 2)]
    assert groups[1]["surfaces"] == ["s1", "s3"] and groups[1]["meaning"] == GAP_REASONS["unsafe"]
