"""The suite authoring surface: CaseSet.family makes generated functions reachable by runner name."""

from __future__ import annotations

import sys

from torchcts.cases import api
from torchcts.engine.runner import resolve_runner

SUITE = api.CaseSet("probe")


def _make(op: str) -> None:
    @SUITE.family(f"unary/{op}", qualname=f"unary_{op}", level=2, dtypes=("float32",), ops=(f"aten::{op}",))
    def run(ctx: api.CaseContext, dtype: object) -> str:
        return op


for _op in ("neg", "abs"):
    _make(_op)


def test_each_member_of_a_family_is_its_own_case_and_runner():
    cases = SUITE.cases()
    assert [c.id for c in cases] == ["probe/unary/neg/float32", "probe/unary/abs/float32"]
    assert [c.runner for c in cases] == [f"{__name__}:unary_neg", f"{__name__}:unary_abs"]
    assert [resolve_runner(c)(None, None) for c in cases] == ["neg", "abs"]
    assert sys.modules[__name__].unary_abs is resolve_runner(cases[1])


def test_the_api_module_is_the_whole_authoring_surface():
    for name in ("CaseSet", "CaseContext", "dtype_of", "expect", "expect_raises", "sample", "run_both",
                 "cpu_reference", "FLOATING", "ALL_DTYPES", "NotApplicable"):
        assert name in api.__all__ and hasattr(api, name)
