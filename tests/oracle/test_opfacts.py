"""Op facts (issue 42 item 2): one registry of what is known about an op, one name resolver.

Every fact has a known kind, a reason and a source; an OpInfo name, `name.variant` and the aten
spellings reach the same fact; the most specific selector decides; conditions (dtypes, case kind,
aten spelling, a sample predicate) hold where they say; and the suites' lookups answer as the
tables they replaced did (the expected values below are those tables' answers).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from torchcts.cases.explore import switches, values
from torchcts.cases.opinfo.strengthen import strengthener
from torchcts.oracle.conditioning import GROUPINGS, running_stats
from torchcts.oracle.exactness import EXACT, NOT_EXACT, exactness_of
from torchcts.oracle.opfacts import FACTS, KINDS, Fact, OpFacts, When, keys
from torchcts.oracle.weak import constant_by_definition, constant_overload


def _op(name: str, variant: str = "") -> SimpleNamespace:
    return SimpleNamespace(name=name, variant_test_name=variant)


# --- the registry ----------------------------------------------------------------------------------

def test_every_fact_has_a_known_kind_a_reason_a_source_and_an_op() -> None:
    assert FACTS.facts
    for fact in FACTS.facts:
        assert fact.kind in KINDS, fact
        assert fact.reason.strip() and fact.source.strip(), fact
        assert fact.ops and all(isinstance(op, str) and op.strip() for op in fact.ops), fact
    assert {f.kind for f in FACTS.facts} == set(KINDS)  # no kind without a fact: each is asked somewhere


def test_an_unknown_kind_or_a_fact_without_a_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown op fact kind"):
        OpFacts([Fact("exactish", ("abs",), "why", "where")])
    with pytest.raises(ValueError, match="no reason"):
        OpFacts([Fact("exact", ("abs",), " ", "where")])
    with pytest.raises(KeyError):
        FACTS.get("exactish", "abs")


# --- the one resolver ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, variant, aten, expected", [
    ("div", "floor_rounding", False, ("div.floor_rounding", "div")),
    ("linalg.norm", "", False, ("linalg.norm",)),
    ("aten::abs_.default", "", False, ("abs_.default", "abs_", "abs")),
    ("aten::gather", "", False, ("gather",)),
    ("new_full.out", "", True, ("new_full.out", "new_full")),
    ("aten::__and__.Tensor", "", False, ("__and__.Tensor", "__and__")),  # a dunder is no in-place form
])
def test_keys_most_specific_first(name: str, variant: str, aten: bool, expected: tuple[str, ...]) -> None:
    assert keys(name, variant, aten) == expected


def test_the_key_styles_of_one_op_reach_the_same_fact() -> None:
    abs_fact = FACTS.find("exact", "abs")
    assert abs_fact is not None
    assert FACTS.find("exact", "aten::abs_") is abs_fact
    assert FACTS.find("exact", "aten::abs.default") is abs_fact
    assert FACTS.find("exact", "abs_", aten=True) is abs_fact
    fill = FACTS.find("constant", "fill")
    assert fill is not None and FACTS.find("constant", "aten::fill_.Scalar") is fill
    assert FACTS.find("constant", "fill_.Tensor", aten=True) is fill
    zero_grad = FACTS.find("zero_gradient", "div", "trunc_rounding")
    assert zero_grad is not None and FACTS.find("zero_gradient", "div.trunc_rounding") is zero_grad
    assert FACTS.find("zero_gradient", "div") is None  # the op's true division has a gradient


def test_the_most_specific_selector_decides() -> None:
    assert FACTS.get("exact", "round") is not None
    assert FACTS.get("exact", "round", "decimals_3") is None  # a "not" fact of the variant
    assert FACTS.get("exact", "round", "some_new_variant") is not None  # no fact of the variant: the op's
    assert FACTS.has("seeded_deterministic", "nn.functional.feature_alpha_dropout", "without_train")
    assert not FACTS.has("seeded_deterministic", "nn.functional.feature_alpha_dropout", "with_train")


def test_patterns_are_less_specific_than_names_and_the_first_matching_one_answers() -> None:
    facts = OpFacts([Fact("properties_only", ("*rand*",), "random", "test", "random"),
                     Fact("properties_only", ("randperm*",), "a permutation", "test", "a permutation"),
                     Fact("properties_only", ("randint",), "its own", "test", "its own")])
    assert facts.get("properties_only", "randperm") == "random"  # the first pattern added that matches
    assert facts.get("properties_only", "randint") == "its own"  # a name beats every pattern
    assert facts.get("properties_only", "abs") is None
    assert FACTS.get("generated_category", "convolution_backward") == "backward"  # *backward* before *conv*
    assert FACTS.get("generated_category", "convolution") == "conv" and FACTS.get("generated_category", "abs") is None


# --- conditions ------------------------------------------------------------------------------------

def test_conditions_hold_where_they_say() -> None:
    assert FACTS.get("exact", "abs", dtype="float32") is not None
    assert FACTS.get("exact", "abs", dtype="complex64") is None  # |z| is a hypot
    assert FACTS.get("exact", "abs") is not None  # an unknown dtype: the exclusion does not apply
    assert FACTS.has("constant", "signbit", dtype="uint8") and not FACTS.has("constant", "signbit", dtype="int8")
    assert not FACTS.has("constant", "signbit")  # an unknown dtype: a fact of some dtypes does not hold
    assert FACTS.has("constant", "zero", aten=True) and not FACTS.has("constant", "zero")  # the aten spelling only
    assert FACTS.get("no_cpu_reference", "linalg.eig", case_kind="special_values")
    assert FACTS.get("no_cpu_reference", "linalg.eig", case_kind="explore") is None


def test_a_sample_predicate_and_added_facts() -> None:
    facts = OpFacts([Fact("near_zero", ("my_op",), "tiny inputs", "test", when=When(sample=lambda s: s > 0)),
                     Fact("switch_points", ("my_op",), "ours", "test", {"mode": (0,)})])
    assert facts.has("near_zero", "my_op", sample=1) and not facts.has("near_zero", "my_op", sample=-1)
    assert facts.has("near_zero", "my_op")  # no sample given: the predicate is not asked
    facts.add(Fact("switch_points", ("my_op",), "a backend's", "test", {"mode": (1,), 2: (3,)}))
    assert [f.value for f in facts.find_all("switch_points", "my_op")] == [{"mode": (0,)}, {"mode": (1,), 2: (3,)}]


def test_add_switch_points_registers_facts_read_with_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(switches, "FACTS", OpFacts(FACTS.facts))
    assert switches.own_switches("grid_sampler_3d") == {1: (0, 1), 2: (0, 1, 2)}
    switches.add_switch_points("grid_sampler_3d", 1, [2])
    switches.add_switch_points("grid_sampler_3d", "align_corners", [True])
    assert switches.own_switches("grid_sampler_3d") == {1: (0, 1, 2), 2: (0, 1, 2), "align_corners": (True,)}
    assert FACTS.get("switch_points", "grid_sampler_3d") == {1: (0, 1), 2: (0, 1, 2)}  # the copy took them


# --- the lookups answer as the old tables did --------------------------------------------------------

def test_exactness_answers_as_the_table_did() -> None:
    sort = exactness_of("sort", dtype="complex64")
    assert sort is not None and sort.outputs == (0,) and not sort.signed_zero
    assert exactness_of("nextafter") is EXACT["nextafter"] and EXACT["nextafter"].signed_zero
    assert exactness_of("aten::abs_") is EXACT["abs"] and exactness_of("aten::gather") is EXACT["gather"]
    assert exactness_of("aten::cumsum") is None and exactness_of("min", "reduction_no_dim") is EXACT["min"]
    assert NOT_EXACT == {"round.decimals_0", "round.decimals_3", "round.decimals_neg_3"}
    assert "round.decimals_3" not in EXACT and len(EXACT) > 150


@pytest.mark.parametrize("name, variant, answers", [
    # (dtype, backward) for None, bool, uint8, int64, float32, complex64
    ("signbit", "", [False, False, True, False, True, False, False, False, False, False, False, False]),
    ("isnan", "", [False, False, True, False, True, False, True, False, False, False, False, False]),
    ("isreal", "", [False, False, True, False, True, False, True, False, True, False, False, False]),
    ("special.entr", "", [False, False, True, False, False, False, False, False, False, False, False, False]),
    ("round", "decimals_3", [False, True] * 6),
    ("div", "trunc_rounding", [False, True] * 6),
    ("full_like", "", [True, False] * 6),
    ("linalg.norm", "subgradients_at_zero", [True, False] * 6),
    ("abs", "", [False] * 12),
])
def test_constant_results_answer_as_the_tables_did(name: str, variant: str, answers: list[bool]) -> None:
    got = [constant_by_definition(name, d, b, variant)
           for d in (None, "bool", "uint8", "int64", "float32", "complex64") for b in (False, True)]
    assert got == answers


def test_constant_overloads_answer_as_the_table_did() -> None:
    assert constant_overload("aten::zero_") and constant_overload("new_full.out")
    assert constant_overload("aten::_foreach_zero_.default") and constant_overload("aten::fill_.Scalar")
    assert not constant_overload("aten::isnan") and not constant_overload("aten::abs_")


def test_oracle_and_exploration_facts_answer_as_the_tables_did() -> None:
    assert FACTS.get("no_truth", "nextafter") == "its result is the neighbouring value of the input's own dtype"
    assert FACTS.get("no_cpu_reference", "linalg.pinv", "singular", case_kind="explore").startswith("the pseudo")
    assert FACTS.get("matmul_category", "addmm") == "matmul" and FACTS.get("conv_category", "conv2d") == "conv"
    assert FACTS.get("conv_category", "conv2d") and not FACTS.get("matmul_category", "conv2d")
    assert FACTS.has("random", "bernoulli") and FACTS.has("uninitialized", "empty_like")
    assert switches.cpu_unsafe(_op("nn.functional.pad", "replicate_negative")) == {1, "mode"}
    assert switches.cpu_unsafe(_op("nn.functional.embedding_bag")) == {"include_last_offset"}
    assert FACTS.get("cpu_unsafe_variants", "nn.functional.embedding_bag") == {"backward"}
    assert switches.own_switches("grid_sampler_2d") == {1: (0, 1, 2), 2: (0, 1, 2)}
    log1p, meshgrid, bincount = values.policy("log1p"), values.policy("meshgrid"), values.policy("bincount")
    assert log1p.near_zero and log1p.host_operands and not meshgrid.host_operands and not meshgrid.near_zero
    assert {"extremes", "uniform"} <= bincount.excluded and not log1p.excluded
    everything_but_plain = set(values.CLASSES) - {"plain"}
    for name, variant in (("nn.functional.grid_sample", ""), ("linalg.lu_factor", ""), ("norm", "nuc"),
                          ("lu_unpack", ""), ("abs", "")):
        assert (values.policy(name, "", variant).excluded == everything_but_plain) == (name != "abs"), name
    assert values.policy("special.chebyshev_polynomial_t").excluded == {"extremes", "uniform"}
    assert not values.policy("nn.functional.pad", "", "circular").excluded  # "circular" holds no word


def test_generated_suite_facts_answer_as_the_tables_did() -> None:
    assert FACTS.get("no_generated_case", "_assert_async") == "an assertion with no result"
    assert FACTS.get("no_generated_case", "lstm_cell").startswith("CPU kernel of torch 2.7")
    assert FACTS.get("properties_only", "randint_like") == "random"
    assert FACTS.get("properties_only", "scatter_").startswith("duplicate generated indices")
    assert FACTS.get("properties_only", "scatter_add") is None  # adds: compared by value
    assert FACTS.has("integer_only", "bitwise_and") and FACTS.has("integer_only", "__iand__")
    assert not FACTS.has("integer_only", "add")
    assert FACTS.get("generated_category", "_foreach_add") == "elementwise"
    assert FACTS.get("generated_category", "special_erfcx") == "special"
    int_min = {name: values.policy(name).int_min for name in ("floor_divide", "remainder", "lcm", "abs", "add")}
    assert int_min == {"floor_divide": False, "remainder": False, "lcm": False, "abs": True, "add": True}
    kept = {name: values.policy(name).index_args for name in ("scatter_add", "put", "index_copy", "gather", "take")}
    assert kept == {"scatter_add": False, "put": False, "index_copy": False, "gather": True, "take": True}


def test_sample_and_normalisation_facts_answer_as_the_tables_did() -> None:
    assert getattr(strengthener("eq"), "__name__", "") == "_agree"
    assert getattr(strengthener("min", "reduction_no_dim"), "__name__", "") == "_odd_unsigned"
    assert strengthener("round", "decimals_3") is None and strengthener("abs") is None
    assert strengthener("round", "decimals_neg_3") is not None
    assert FACTS.has("device_policy", "nn.functional.linear_cross_entropy")
    stats = running_stats("nn.functional.batch_norm.without_cudnn")
    assert stats is not None and stats.where == (0, 1)
    assert running_stats("nn.functional.layer_norm") is None
    assert set(GROUPINGS) == {"nn.functional.layer_norm", "native_layer_norm", "nn.functional.group_norm",
                              "native_group_norm", "nn.functional.batch_norm", "native_batch_norm",
                              "_native_batch_norm_legit", "_batch_norm_with_update", "nn.functional.instance_norm"}
