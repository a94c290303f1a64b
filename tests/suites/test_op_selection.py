"""One definition of "the cases that exercise op X" (cases/ops.py) for `--op`, the ledger and coverage."""

from __future__ import annotations

import random

import pytest

from torchcts.cases.ops import case_matches_op, case_op_names, case_refs, parse_op
from torchcts.engine.selection import select
from torchcts.errors import UsageError
from torchcts.manifest.templates import validation_manifest
from torchcts.model.case import Case
from torchcts.model.selection import Selection
from torchcts.results.ledger.match import matches


def _case(cid: str, ops=(), **params) -> Case:
    return Case(id=cid, suite=cid.split("/")[0], level=1, runner="m:f", ops=tuple(ops), params=params)


@pytest.fixture(scope="module")
def every_case() -> list[Case]:
    from torchcts.cases.registry import iter_cases

    return list(iter_cases(None))


def _selected(cases: list[Case], *ops: str, **kw) -> set[str]:
    return {d.case.id for d in select(cases, validation_manifest(), Selection(ops=list(ops), level=8, **kw)).decisions}


def test_sample_of_30_ops_selects_every_case_with_an_overload(every_case):
    """For 30 ops: each case whose ops name an overload of the op (aten::X, aten::X.*) or whose
    OpInfo name is X is selected by `--op X` (the strides and dtypes cases tagged aten::X.Tensor too)."""
    want: dict[str, list[Case]] = {}  # op name -> cases whose ops name aten::X or aten::X.*, or OpInfo X
    for c in every_case:
        names = {parse_op(o).name for o in c.ops if o.startswith("aten::")} | {c.params.get("op") or ""}
        for name in names - {""}:
            want.setdefault(name, []).append(c)
    sample = ["mul", "add", "div", "abs", *random.Random(22).sample(sorted(want), 26)]
    for name in sample:
        missed = [c.id for c in want[name] if not case_matches_op(c, [name])]  # user_selects' op rule
        assert not missed, (name, missed[:5])
    assert _selected(every_case, "mul") == {c.id for c in every_case if case_matches_op(c, ["mul"])}


def test_mul_reaches_the_strides_case_at_level_3(every_case):
    got = _selected(every_case, "mul", dtypes=["float32"])
    assert "strides/noncontig/transposed/mul/float32" in got
    assert got >= _selected(every_case, "aten::mul.Tensor", dtypes=["float32"]) - {
        c for c in got if c.startswith("opinfo/mul")}


def test_globs_match_op_names_not_the_namespace(every_case):
    star = _selected(every_case, "*")
    a = _selected(every_case, "a*")
    assert 0 < len(a) < len(star) / 4
    assert all(any(parse_op(n).name.startswith("a") for n in case_op_names(c)) or c.params.get("op", "").startswith("a")
               for c in every_case if c.id in a)
    assert "operators/elementwise/mul/float32" not in a


def test_opinfo_variants_and_aten_overloads():
    floor = _case("opinfo/div.floor_rounding/float32/forward", ["aten::div"], op="div", variant="floor_rounding")
    trunc = _case("opinfo/div.trunc_rounding/float32/forward", ["aten::div"], op="div", variant="trunc_rounding")
    plain = _case("opinfo/mul/float32/forward", ["aten::mul"], op="mul", variant="")
    strided = _case("strides/x/mul/float32", ["aten::mul.Tensor"])
    inplace = _case("operators/aliasing/inplace/mul_/float32", ["aten::mul_"])
    assert case_matches_op(floor, ["div"]) and case_matches_op(trunc, ["div"])
    assert case_matches_op(floor, ["div.floor_rounding"]) and not case_matches_op(trunc, ["div.floor_rounding"])
    assert case_matches_op(trunc, ["aten::div.Tensor_mode"])  # the packet covers every overload
    for case in (plain, strided, inplace):
        assert case_matches_op(case, ["mul"]) and case_matches_op(case, ["aten::mul"])
    assert case_matches_op(plain, ["mul.Tensor"]) and case_matches_op(strided, ["aten::mul.Tensor"])
    assert not case_matches_op(strided, ["mul.Scalar"]) and not case_matches_op(inplace, ["mul.Tensor"])
    assert case_matches_op(inplace, ["mul_"]) and not case_matches_op(plain, ["mul_"])
    assert not case_matches_op(_case("compiler/x", ["compile::unary"]), ["aten::unary"])
    assert case_matches_op(_case("compiler/x", ["compile::unary"]), ["compile::*"])
    assert [str(r) for r in case_refs(floor)] == ["aten::div", "div.floor_rounding"]


def test_the_ledger_uses_the_same_rule():
    strided = _case("strides/x/mul/float32", ["aten::mul.Tensor"])
    record = {**strided.to_json(), "status": "failed"}
    assert matches({"match": {"op": "mul"}}, record)
    assert not matches({"match": {"op": "m*l.Scalar"}}, record)
    assert not matches({"match": {"op": "a*"}}, record)
    floor = _case("opinfo/div.floor_rounding/float32/forward", ["aten::div"], op="div", variant="floor_rounding")
    trunc = _case("opinfo/div.trunc_rounding/float32/forward", ["aten::div"], op="div", variant="trunc_rounding")
    entry = {"match": {"op": "div.floor_rounding"}}
    assert matches(entry, floor.to_json()) and not matches(entry, trunc.to_json())


def test_coverage_reads_the_same_names():
    floor = _case("opinfo/div.floor_rounding/float32/forward", ["aten::div"], op="div", variant="floor_rounding")
    assert case_op_names(floor) == ["aten::div", "div"]


def test_a_selection_of_nothing_is_a_usage_error_with_the_closest_names(every_case):
    with pytest.raises(UsageError, match=r"--op 'mlu'.*closest: .*mul"):
        _selected(every_case, "mlu")
    with pytest.raises(UsageError, match=r"--case 'operators/elementwise/mull/float32'.*closest: operators/elementwise/mul/"):
        select(every_case, validation_manifest(), Selection(cases=["operators/elementwise/mull/float32"]))
    with pytest.raises(UsageError, match="matches no case"):
        select(every_case, validation_manifest(), Selection(ops=["mul"], suites=["opinfo"], level=1))


def test_cli_exits_2_on_a_selection_of_nothing(workdir):
    from helpers.runs import run_cli

    for flag in ("--op", "--case"):
        r = run_cli("run", "--device", "cpu", flag, "nosuch", cwd=workdir)
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"{flag} 'nosuch'" in r.stderr and "run complete" not in r.stdout
        assert not (workdir / "results").exists() or not any((workdir / "results").iterdir())


def test_outside_selection_names_entries_of_left_out_cases_only():
    """Issue 40: a ledger entry naming only cases a focused selection left out is not judged (not
    "unmatched"); an entry naming no case at all stays unmatched (stale)."""
    from torchcts.model.case import Case
    from torchcts.results.ledger.match import outside_selection

    def case(op: str, dtype: str) -> Case:
        return Case(id=f"operators/elementwise/{op}/{dtype}", suite="operators", level=1, runner="m:f",
                    ops=(f"aten::{op}",), dtype=dtype, kind="elementwise")

    entries = [{"match": "operators/elementwise/add/*"}, {"match": {"op": "abs", "dtype": "float64"}},
               {"match": "operators/elementwise/nothing/*"}]
    assert outside_selection(entries, [case("add", "float32")], [case("abs", "float64"), case("abs", "float32")]) == [1]
    assert outside_selection(entries, [case("abs", "float64")], [case("add", "float32")]) == [0]
    assert outside_selection([], [case("add", "float32")], []) == []
