"""Surfaces from the dispatcher: kinds from schemas, kernels per dispatch key, the case-op rule."""

from __future__ import annotations

import pytest
import torch

from torchcts.coverage.mapping import build_coverage, resolve_op, select_surfaces
from torchcts.coverage.report import family
from torchcts.coverage.surfaces import KINDS, all_surfaces, registration
from torchcts.errors import UsageError
from torchcts.model.case import Case


def kinds() -> dict[str, str]:
    return {s.name: s.kind for s in all_surfaces()}


def test_inventory_is_every_aten_overload_of_the_dispatcher():

    names = {n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    surfaces = all_surfaces()
    assert {s.name for s in surfaces} == names
    assert len(surfaces) > 1000
    assert all(s.kind in KINDS for s in surfaces)
    # every kind is populated in a real build
    assert {s.kind for s in surfaces} == set(KINDS)


@pytest.mark.parametrize(
    "name,kind",
    [
        ("aten::add.Tensor", "functional"),
        ("aten::add.out", "out"),
        ("aten::sort.values", "out"),
        ("aten::add_.Tensor", "in-place"),
        ("aten::__iand__.Tensor", "in-place"),
        ("aten::_foreach_add_.List", "in-place"),
        ("aten::view", "view"),
        ("aten::transpose.int", "view"),
        ("aten::split.Tensor", "view"),
        ("aten::zeros", "factory"),
        ("aten::empty.memory_format", "factory"),
        ("aten::zeros_like", "factory"),
        ("aten::convolution_backward", "backward"),
        ("aten::randn", "rng"),
        ("aten::uniform_", "rng"),
        ("aten::bernoulli.p", "rng"),
        ("aten::size.int", "query"),
        ("aten::is_nonzero", "query"),
    ],
)
def test_surface_kind_from_schema(name, kind):
    assert kinds()[name] == kind


def test_registration_native_composite_missing():
    assert registration("aten::add.Tensor", "CPU")["kernel"] == "native"
    assert "CPU" in registration("aten::add.Tensor", "CPU")["keys"]
    assert registration("aten::linalg_norm", "CPU")["kernel"] == "composite_implicit"
    assert registration("aten::zeros", "CPU")["kernel"] == "composite_explicit"
    # a key this build has no kernels for (CUDA on the CPU wheel, XPU on a CUDA wheel): add.out
    # has neither a kernel nor a composite one there

    absent = "XPU" if torch.backends.cuda.is_built() else "CUDA"
    assert registration("aten::add.out", absent)["kernel"] == "missing"


def test_composite_wrapper_of_a_missing_kernel_is_missing():
    """A generated composite out= wrapper calls its functional op: CUDA-only there means missing on CPU."""
    reg = registration("aten::_masked_scale.out", "CPU")
    assert reg["kernel"] == "missing" and reg["calls_missing"] == "aten::_masked_scale"
    assert registration("aten::convolution_overrideable", "CPU")["kernel"] == "missing"  # raises until registered
    assert registration("aten::zeros.out", "CPU")["kernel"] in ("native", "composite_explicit")
    assert "calls_missing" not in registration("aten::zeros", "CPU")
    # a wrapper of a wrapper: the out= calls the functional op, whose composite kernel calls the
    # in-place op, which has no CPU kernel (a pending generated case before, counted implementable).
    # Which ops form such a chain follows the installed torch (2.15 gave _philox_normal_ a CPU kernel):
    # the chains are found, not named, and each must read missing; every release has some.
    chains = {s.name: registration(s.name, "CPU") for s in all_surfaces() if s.kind == "out"}
    chains = {name: reg for name, reg in chains.items() if " -> " in (reg.get("calls_missing") or "")}
    assert chains and all(reg["kernel"] == "missing" for reg in chains.values())
    name, reg = next(iter(chains.items()))
    functional = name.removesuffix(".out")
    assert reg["calls_missing"] == f"{functional} -> {functional}_"
    assert registration("aten::_resize_output.out", "CPU")["kernel"] == "missing"
    assert registration("aten::add.out", "CPU")["kernel"] == registration("aten::abs.out", "CPU")["kernel"] == "native"


def test_case_op_rule():
    assert set(resolve_op("aten::add")) == {"aten::add.Tensor", "aten::add.Scalar"}  # out= excluded
    # a random op's out= overload is kind rng, not out: naming the packet still does not cover it
    assert "aten::bernoulli.out" not in resolve_op("aten::bernoulli") and "aten::bernoulli.p" in resolve_op("aten::bernoulli")
    assert resolve_op("aten::add.out") == ["aten::add.out"]
    assert resolve_op("aten::abs") == ["aten::abs"]
    assert "aten::add_.Tensor" not in resolve_op("add")
    assert resolve_op("linalg.norm") and all(s.startswith("aten::linalg_norm") for s in resolve_op("linalg.norm"))
    assert resolve_op("nn.functional.relu") == ["aten::relu"]
    assert resolve_op("no_such_op_anywhere") == []


def test_build_coverage_maps_cases_and_reports_unmapped():
    cases = [
        Case("s/a/float32", "s", 1, "m:f", ops=("aten::add.Tensor",), dtype="float32"),
        Case("s/b", "s", 1, "m:f", ops=("aten::add", "no_such_op_anywhere")),
        Case("s/c", "s", 2, "m:f", params={"op": "sin"}),
    ]
    cov = build_coverage(cases)
    assert cov.cases_by_surface["aten::add.Tensor"] == ["s/a/float32", "s/b"]
    assert cov.cases_by_surface["aten::add.Scalar"] == ["s/b"]
    assert cov.cases_by_surface["aten::sin"] == ["s/c"]
    assert "aten::add.out" not in cov.cases_by_surface
    assert cov.unmapped == {"no_such_op_anywhere": ["s/b"]}


def test_select_surfaces():
    assert select_surfaces(["aten::add.Tensor"]) == ["aten::add.Tensor"]
    assert "aten::add.out" in select_surfaces(["add"])  # an op selects all its overloads
    assert set(select_surfaces(["aten::add_.*"])) == {"aten::add_.Tensor", "aten::add_.Scalar"}
    with pytest.raises(UsageError, match="matches no aten overload"):
        select_surfaces(["aten::definitely_not_an_op"])


@pytest.mark.parametrize(
    "op,fam",
    [("aten::_foreach_add_", "foreach"), ("aten::linalg_svd", "linalg"), ("aten::special_erf", "special"),
     ("aten::max_pool2d_with_indices_backward", "max_pool2d_with_indices"), ("aten::add_", "add")],
)
def test_family(op, fam):
    assert family(op) == fam
