"""The dispatcher-surface suites (docs/coverage.md: foreach, out_variants, special_values,
query_mutation): their overload lists come from this build's dispatcher, and clean cases pass on CPU.

Their planted sim faults are measured in tests/sim/test_sim_faults.py (group "surfaces").
"""

from __future__ import annotations

from pathlib import Path

from helpers.suite_runs import run_clean

from torchcts.cases.overloads import overload_names, qualified, resolve


def _named(module: str) -> set[str]:
    import importlib

    return {op for case in importlib.import_module(f"torchcts.cases.suites.{module}").cases() for op in case.ops}


def test_every_foreach_and_special_overload_of_this_build_is_named() -> None:
    """No hand list to rot: each aten::_foreach_* / aten::special_* overload the dispatcher has is an
    op of a case, so coverage and --op see it; so are the fused optimizer steps this build has."""
    foreach, special = _named("foreach"), _named("special_values")
    for prefix, named in (("_foreach_", foreach), ("special_", special)):
        have = {qualified(n, o) for n, ovs in overload_names(prefix).items() for o in ovs}
        assert have and have <= named, sorted(have - named)[:10]
    fused = {qualified(n, o) for n, ovs in overload_names("_fused_").items() for o in ovs
             if n.rstrip("_") in ("_fused_adam", "_fused_adamw", "_fused_sgd", "_fused_adagrad")}
    assert fused <= foreach, sorted(fused - foreach)


def test_out_and_mutation_suites_name_the_overloads_they_call() -> None:
    out = _named("out_variants")
    # (not sum.IntList_out: its out= takes a dim list, outside the one/two-tensor rule)
    assert {"aten::add.out", "aten::exp.out", "aten::atan2.out"} <= out, out
    assert "aten::exp" in out  # the functional sibling it is compared with
    assert not any("rand" in op or "bernoulli" in op for op in out)  # random ops belong to the rng suites
    qm = _named("query_mutation")
    sets = {qualified("set_", o) for o in ("default", "source_Storage", "source_Storage_storage_offset",
                                            "source_Tensor", "source_Tensor_storage_offset") if resolve("set_", o)}
    assert sets <= qm and {"aten::resize_", "aten::_local_scalar_dense", "aten::t_", "aten::is_set_to"} <= qm


def test_out_checks_call_the_out_overload_where_cpu_cannot_compute_the_functional_form(monkeypatch) -> None:
    """linalg_cholesky of the suite's input (not positive-definite) raises on CPU: each out= check still
    calls its out= on both sides, so the device's out= must raise alike (never only CPU's functional).
    (aten::cholesky, the op this test named first, is gone since PyTorch 2.14.)"""
    import torch

    from torchcts.cases.context import CaseContext
    from torchcts.cases.suites import out_variants
    from torchcts.manifest.templates import validation_manifest

    real, calls = out_variants.resolve, []

    def spy(name: str, overload: str):
        op = real(name, overload)
        return op if overload != "out" else lambda *a, **k: calls.append(k["out"]) or op(*a, **k)

    monkeypatch.setattr(out_variants, "resolve", spy)
    ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest())
    out_variants.out_case(ctx, torch.float32, "linalg_cholesky")
    outs = ("sized", "empty", "wrong_size", "wrong_dtype", "wider_dtype")
    assert ctx.info["checks"] == {"functional": "raises", **dict.fromkeys(outs, "raises")}, ctx.info["checks"]
    assert len(calls) == 2 * len(outs)  # CPU's and the device's call of each check


CLEAN = ("foreach/add/lists/float32", "foreach/pow/lists/int64", "foreach/fused/adamw/step/float32",
         "out_variants/add/out/float32", "out_variants/exp/out/int64", "special_values/erfcx/edges/float32",
         "special_values/zeta/edges/float64", "query_mutation/set_/float32", "query_mutation/resize_/int64",
         "query_mutation/view_mutation/t_/views/float32")


def test_surface_cases_pass_on_cpu_validation(tmp_path: Path) -> None:
    recs = run_clean(tmp_path, CLEAN)
    # the overloads really ran and were compared (not skipped as raising or missing)
    add = recs["foreach/add/lists/float32"]["info"]["overloads"]
    assert add["aten::_foreach_add_.List [layouts]"] == "checked", add
    assert add["aten::_foreach_add.Tensor [mixed_dtypes]"] == "checked", add
    checks = recs["out_variants/add/out/float32"]["info"]["checks"]
    assert checks["wrong_size"] == checks["alias_other"] == "checked" and checks["wrong_dtype"] == "raises", checks
    assert recs["query_mutation/set_/float32"]["info"]["checks"]["storage_offset"] == "checked"
