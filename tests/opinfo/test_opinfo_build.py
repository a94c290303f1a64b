"""The opinfo case list, the metadata-based categories and oracles, sample helpers and materialize."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from torchcts.cases.opinfo import materialize
from torchcts.cases.opinfo.build import build_cases, op_cases
from torchcts.cases.opinfo.samples import (
    copy_sample,
    describe_sample,
    generate,
    inject_special_values,
    load_op_db,
    lookup,
    select_samples,
)
from torchcts.manifest.templates import validation_manifest
from torchcts.oracle.categories import RANDOM_OPS, SEEDED_BUT_DETERMINISTIC, oracle_for, tolerance_category
from torchcts.oracle.conditioning import GROUPINGS
from torchcts.oracle.tolerances import CATEGORIES


@pytest.fixture(scope="module")
def op_db():
    return load_op_db()


@pytest.fixture(scope="module")
def all_cases(op_db):
    return build_cases(op_db)


def by_id(cases):
    return {c.id: c for c in cases}


def test_ids_unique_params_json_and_levels(all_cases):
    ids = [c.id for c in all_cases]
    assert len(ids) == len(set(ids))
    cases = by_id(all_cases)
    fwd = cases["opinfo/add/float32/forward"]
    assert fwd.level == 2 and fwd.requires == ("inference",) and fwd.oracle == "cpu"
    assert json.loads(json.dumps(dict(fwd.params))) == {"op": "add", "variant": "", "kind": "forward", "dtype": "float32"}
    assert cases["opinfo/add/float32/inplace"].level == 3
    assert cases["opinfo/add/float32/out"].ops == ("aten::add.out",)
    assert cases["opinfo/add/float32/backward"].requires == ("autograd|training",)
    assert cases["opinfo/add/float32/backward"].level == 4
    assert cases["opinfo/add/float32/special_values"].requires == ("inference", "ieee754")
    assert cases["opinfo/add/float32/noncontiguous"].level == 5
    # families are level 5 whatever the kind
    assert cases["opinfo/linalg.det/float32/forward"].level == 5
    assert cases["opinfo/fft.fft/complex64/forward"].level == 5
    # variants are part of the id
    assert "opinfo/max.reduction_with_dim/float32/forward" in cases
    # integers get no backward or special values
    assert "opinfo/add/int64/backward" not in cases and "opinfo/add/int64/special_values" not in cases


def test_every_kind_is_generated(all_cases):
    kinds = {c.kind for c in all_cases}
    assert kinds == {"forward", "method", "inplace", "out", "errors", "backward", "noncontiguous", "special_values",
                     "explore", "agree"}


def test_unsupported_dtypes_are_not_applicable_not_missing(op_db):
    cases = by_id(op_cases(lookup("bitwise_not")))
    na = cases["opinfo/bitwise_not/float32/forward"]
    assert na.not_applicable and "not supported for float32 on CPU" in na.not_applicable
    assert cases["opinfo/bitwise_not/int32/forward"].not_applicable is None


def test_build_is_deterministic_and_does_not_run_ops(op_db, monkeypatch):
    op = lookup("add")

    def boom(*a, **k):
        raise AssertionError("an op ran at collection")

    monkeypatch.setattr(op, "op", boom)
    monkeypatch.setattr(op, "sample_inputs_func", boom)
    first = [c.to_json() for c in op_cases(op)]
    assert first == [c.to_json() for c in op_cases(op)]


def test_tolerance_category_from_metadata(op_db):
    expected = {
        "add": "elementwise", "sin": "elementwise", "sum": "reduction", "mm": "matmul",
        "nn.functional.conv2d": "conv", "linalg.svd": "linalg", "svd": "linalg", "fft.fft": "fft",
        "special.erfcx": "special", "masked.sum": "reduction",
    }
    for name, cat in expected.items():
        assert tolerance_category(lookup(name)) == cat, name
    assert {tolerance_category(op) for op in op_db} <= set(CATEGORIES)
    # the normalisation category is exactly the ops whose conditioning we know how to compute
    # (older PyTorch lacks some of them, e.g. native_group_norm's OpInfo before 2.13)
    names = {op.name for op in op_db}
    assert {op.name for op in op_db if tolerance_category(op) == "normalization"} == set(GROUPINGS) & names
    assert {"native_layer_norm", "nn.functional.batch_norm", "nn.functional.group_norm"} <= set(GROUPINGS) & names


def test_random_registry_covers_every_seeded_op(op_db):
    """OpInfo wraps random ops in wrapper_set_seed: each such op is in RANDOM_OPS or allowlisted."""
    for op in op_db:
        names = set(getattr(getattr(op.op, "__code__", None), "co_names", ()))
        if "wrapper_set_seed" in names and (op.name, op.variant_test_name) not in SEEDED_BUT_DETERMINISTIC:
            assert op.name in RANDOM_OPS or oracle_for(op) != "cpu", op.name
    assert oracle_for(lookup("bernoulli")) == "property:random"
    assert oracle_for(lookup("empty_like")) == "property:uninitialized"
    assert oracle_for(lookup("add")) == "cpu"


def test_copy_sample_is_independent_and_follows_device_kwarg():
    op = lookup("add")
    sample = next(iter(op.sample_inputs("cpu", torch.float32)))
    copy = copy_sample(sample, "cpu")
    assert copy.input is not sample.input and torch.equal(copy.input, sample.input)
    copy.input.add_(1)
    assert not torch.equal(copy.input, sample.input)
    factory = next(iter(lookup("ones").sample_inputs("cpu", torch.float32)))
    assert copy_sample(factory, torch.device("meta")).kwargs["device"] == torch.device("meta")


def test_select_samples_and_description():
    op = lookup("add")
    assert [i for i, _ in select_samples(generate(op, torch.float32), 3, None)] == [0, 1, 2]
    [(i, fourth)] = select_samples(generate(op, torch.float32), None, 4)
    assert i == 4 and torch.equal(fourth.input, list(generate(op, torch.float32))[4].input)
    sample = torch.testing._internal.opinfo.core.SampleInput(torch.zeros(4, 6)[:, ::2], args=(2.5,), kwargs={"alpha": 2})
    text = describe_sample(sample)
    assert text == "(Tensor[4, 3] float32 strides=(6, 2), 2.5, alpha=2)"


def test_special_values_injection_is_deterministic():
    sample = torch.testing._internal.opinfo.core.SampleInput(torch.zeros(10), args=(torch.ones(1), torch.arange(3)))
    new, changed = inject_special_values(sample)
    assert changed == 2  # both float tensors, not the int one
    x = new.input
    assert torch.isnan(x[1]) and torch.isnan(x[8]) and x[3] == float("inf") and x[5] == float("-inf")
    assert torch.isnan(new.args[0][0]) and torch.equal(new.args[1], torch.arange(3))
    assert torch.equal(sample.input, torch.zeros(10))  # the original is untouched


def test_materialize_returns_the_exact_cpu_call():
    params = {"op": "add", "variant": "", "kind": "forward", "dtype": "float32"}
    desc, fn, args, kwargs = materialize(params, 2, "float32")
    assert "torch.add" in desc and "sample 2" in desc
    torch.rand(3)  # the global generator's state must not matter
    sample = list(generate(lookup("add"), torch.float32))[2]
    torch.testing.assert_close(fn(*args, **kwargs), lookup("add").op(sample.input, *sample.args, **sample.kwargs))
    _, fn, args, kwargs = materialize({**params, "kind": "inplace"}, 0)
    assert fn(*args, **kwargs) is args[0]
    _, fn, args, kwargs = materialize({**params, "kind": "out"}, 0)
    assert fn(*args, **kwargs) is kwargs["out"]


def test_validation_claims_run_every_kind(all_cases):
    from torchcts.engine.selection import select
    from torchcts.model.selection import Selection

    result = select(all_cases, validation_manifest(), Selection(level=5, ops=["add"], dtypes=["float32"]))
    assert {c.kind for c in result.to_run} >= {"forward", "method", "inplace", "out", "backward", "noncontiguous",
                                               "special_values"}


def test_copy_sample_keeps_aliasing_strides_and_grad():
    from torch.testing._internal.opinfo.core import SampleInput

    x = torch.arange(6.0)
    w = torch.ones(2, 3).t().requires_grad_(True)
    sample = SampleInput(x, args=(x[::2], w), kwargs={"out": x[:3]})
    c = copy_sample(sample, "cpu")
    assert c.input.data_ptr() != x.data_ptr() and torch.equal(c.input, x)
    ptr = c.input.untyped_storage().data_ptr()
    assert c.args[0].untyped_storage().data_ptr() == ptr == c.kwargs["out"].untyped_storage().data_ptr()
    assert c.args[0].stride() == (2,) and c.args[1].stride() == (1, 3)
    assert c.args[1].requires_grad and c.args[1].is_leaf


def test_an_unknown_case_kind_is_our_error_not_a_quiet_not_applicable(op_db):
    """A case built with a kind the runner lacks must fail loudly (status error), never skip."""
    from torchcts.cases.context import CaseContext
    from torchcts.cases.opinfo.kinds import KINDS
    from torchcts.cases.opinfo.run import run
    from torchcts.model.case import NotApplicable

    ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest())
    assert "bogus" not in KINDS
    with pytest.raises(ValueError, match="unknown opinfo case kind 'bogus'") as info:
        run(ctx, op="abs", kind="bogus", dtype=torch.float32)
    assert not isinstance(info.value, NotApplicable)


def test_a_noncontiguous_sample_is_described_as_the_device_gets_it(op_db):
    """What a failure record names is the transformed (non-contiguous) layout, not the plain sample."""
    from torchcts.cases.context import CaseContext
    from torchcts.cases.opinfo.run import run

    described: list[str] = []

    class Watching(CaseContext):
        def assert_close(self, *args, **kwargs):  # the record's sample at the moment of comparison
            described.append(self.info["sample"])
            super().assert_close(*args, **kwargs)

    ctx = Watching(device=torch.device("cpu"), manifest=validation_manifest(), max_samples=2)
    run(ctx, op="mul", kind="noncontiguous", dtype=torch.float32)
    assert described and all("strides=" in text for text in described), described
    assert ctx.info["samples_run"] == len(described)


def test_the_runner_widens_only_normalization_samples_by_their_conditioning(op_db):
    """The functional kinds compare a normalisation sample with its conditioned absolute floor (recorded);
    any other op gets none."""
    from torchcts.cases.context import CaseContext
    from torchcts.cases.opinfo.run import run

    floors = {}
    for op in ("nn.functional.layer_norm", "add"):
        ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest(), max_samples=2)
        run(ctx, op=op, kind="forward", dtype=torch.float32)
        floors[op] = ctx.info.get("conditioned_atol")
    assert floors["nn.functional.layer_norm"] > 0 and floors["add"] is None, floors


@pytest.mark.main_only  # measured on the main PyTorch; older OpInfo databases lack some of these cases
def test_slow_case_reasons_name_real_cases():
    """Each reason in cases/opinfo/slow.py is for a case this PyTorch's OpInfo suite has (a renamed
    op would leave a reason for nothing and a slow case without one)."""
    from torchcts.cases.opinfo.slow import SLOW_CASES
    from torchcts.cases.registry import suite_cases

    ids = {c.id for c in suite_cases("opinfo")}
    assert SLOW_CASES and all(case_id in ids and len(why) > 40 for case_id, why in SLOW_CASES.items())


def test_every_kind_is_run_by_a_function_that_exists():
    """The registry (cases/opinfo/kinds.py) names each kind's runner as text: a rename in run.py would
    otherwise surface only when such a case runs."""
    import importlib

    from torchcts.cases.opinfo.kinds import KINDS

    for kind in KINDS.values():
        for path in filter(None, (kind.runs, kind.runner)):
            module, _, name = path.partition(":")
            assert callable(getattr(importlib.import_module(module), name)), (kind.name, path)


def test_explore_checks_exactly_the_kinds_the_registry_marks_explored(op_db):
    """An op with every form, every capability claimed: explore's checks are the registry's explored
    kinds, no more (a kind marked explored without a check would be a KeyError) and no fewer."""
    from torchcts.cases.context import CaseContext
    from torchcts.cases.explore.run import variants
    from torchcts.cases.opinfo.kinds import KINDS
    from torchcts.cases.opinfo.samples import lookup

    ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest())
    found = variants(ctx, lookup("add"), torch.float32)
    assert set(found) == {k.name for k in KINDS.values() if k.explored} == {"forward", "inplace", "out", "backward"}
    unclaimed = dataclasses.replace(validation_manifest(), capabilities={
        **validation_manifest().capabilities, "autograd": False, "training": False})
    assert "backward" not in variants(CaseContext(device=torch.device("cpu"), manifest=unclaimed),
                                      lookup("add"), torch.float32)
