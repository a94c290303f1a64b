"""Allowed answers (issue 28, item 2): where PyTorch permits several answers the oracle accepts the
set, each rule narrow (the other answer passes, a wrong one still fails) and with its reason."""

from __future__ import annotations

import re

import pytest
import torch
from helpers.paths import REPO

from torchcts.cases.opinfo.error_types import device_class_errors
from torchcts.cases.opinfo.samples import HOST_ARGS, lookup
from torchcts.oracle.allowed import (
    RULES,
    CompositeRule,
    ErrorTypeRule,
    HostArgument,
    OutCastRule,
    OutputRule,
    accepted_exception,
    host_arguments,
    out_cast_allowed,
    output_alternatives,
)
from torchcts.oracle.compare import find_mismatch
from torchcts.oracle.tolerances import tolerance_for

DOCS = REPO / "docs" / "oracles.md"
KS = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)


def test_every_rule_has_a_name_a_reason_and_a_source_and_is_documented():
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert {type(r) for r in RULES} == {OutputRule, ErrorTypeRule, HostArgument, OutCastRule, CompositeRule}
    text = DOCS.read_text()
    section = text.split("## Allowed answers", 1)[1].split("\n## ", 1)[0]
    for rule in RULES:
        assert len(rule.reason) > 40 and len(rule.source) > 10, rule.name
        assert f"`{rule.name}`" in section, f"docs/oracles.md (Allowed answers) does not name {rule.name}"


def _layer_norm(x: torch.Tensor, composite: bool) -> tuple[torch.Tensor, ...]:
    op = torch.ops.aten.native_layer_norm.default
    args = (x, [x.shape[-1]], None, None, 1e-5)
    return tuple(op.redispatch(KS, *args) if composite else op(*args))


def test_composite_layer_norm_statistics_of_an_empty_low_precision_input_pass():
    for dtype in (torch.float16, torch.bfloat16):
        x = torch.empty(0, 5, dtype=dtype)
        cpu, composite = _layer_norm(x, False), _layer_norm(x, True)
        assert composite[1].dtype == torch.float32 != cpu[1].dtype  # PyTorch's own two answers
        tol = tolerance_for("normalization", str(dtype).removeprefix("torch."))
        assert find_mismatch(composite, cpu, tol) is not None  # without the rule: a false failure
        allowed = output_alternatives("native_layer_norm", x)
        assert find_mismatch(composite, cpu, tol, allowed=allowed) is None
        assert find_mismatch(cpu, cpu, tol, allowed=allowed) is None  # CPU's answer still passes
        # a wrong dtype, or a statistic that is not empty, still fails
        wrong = (composite[0], composite[1].double(), composite[2].double())
        assert find_mismatch(wrong, cpu, tol, allowed=allowed) is not None
        assert find_mismatch((composite[0], torch.zeros(0, 5, 1), composite[2]), cpu, tol, allowed=allowed) is not None
        # the normalised output itself is not covered
        assert find_mismatch((composite[0].float(), *composite[1:]), cpu, tol, allowed=allowed) is not None


def test_layer_norm_rule_does_not_cover_other_inputs_or_ops():
    assert output_alternatives("native_layer_norm", torch.randn(2, 5).half()) is None  # not empty
    assert output_alternatives("native_layer_norm", torch.empty(0, 5)) is None  # float32: one answer
    assert output_alternatives("native_group_norm", torch.empty(0, 5).half()) is None
    x = torch.randn(2, 5).half()
    cpu = _layer_norm(x, False)
    allowed = output_alternatives("native_layer_norm", torch.empty(0, 5).half())
    as_float = (cpu[0], cpu[1].float(), cpu[2].float())
    assert find_mismatch(as_float, cpu, tolerance_for("normalization", "float16"), allowed=allowed) is not None


def test_narrow_copy_error_type_off_the_cpu_is_opinfo_s_expectation():
    off_cpu = device_class_errors(lookup("narrow_copy"))
    assert set(off_cpu) == {1}  # the out-of-range dim; the other error inputs expect one type everywhere
    cpu_type, other, regex = off_cpu[1]
    assert (cpu_type, other) == (RuntimeError, IndexError)
    x = torch.zeros(10, 5, 20)
    try:
        torch.narrow_copy(x, 3, 0, 0)
    except RuntimeError as exc:
        cpu_exc = exc
    try:
        torch.ops.aten.narrow_copy.default.redispatch(KS, x, 3, 0, 0)  # the composite kernel
    except IndexError as exc:
        composite = exc
    assert re.search(regex, str(composite))
    assert accepted_exception(composite, cpu_exc, off_cpu[1]) == "opinfo_error_type_per_device"
    assert accepted_exception(RuntimeError("other"), cpu_exc, off_cpu[1]) == ""  # CPU's type
    assert accepted_exception(IndexError("index 3 is out of bounds"), cpu_exc, off_cpu[1]) is None  # other message
    assert accepted_exception(ValueError(str(composite)), cpu_exc, off_cpu[1]) is None  # other type
    assert accepted_exception(composite, cpu_exc, None) is None  # no OpInfo expectation: CPU's type only


def test_ops_whose_error_inputs_expect_one_type_everywhere_get_no_alternative():
    for name in ("narrow", "index_select", "take"):
        assert device_class_errors(lookup(name)) == {}


# randint_like's tensor `high` overloads (`.Tensor`, `.Tensor_out`) are newer than PyTorch 2.7
HAS_TENSOR_HIGH = hasattr(torch.ops.aten.randint_like, "Tensor")


def test_host_arguments_come_from_the_registry_and_the_schema():
    assert host_arguments("randint_like") == {"high"}
    assert host_arguments("add") == frozenset()
    # positions come from the installed PyTorch's schema: no tensor `high` overload, no position
    packed = {"_pack_padded_sequence": (0,), "_pad_packed_sequence": (0,), "_pack_padded_sequence_backward": (1,),
              "gru": (0,), "rnn_tanh": (0,), "rnn_relu": (0,),  # lengths / batch_sizes (no OpInfo of these names)
              "_reshape_from_tensor": (0,)}
    assert HOST_ARGS == {"tensor_split": (0,), **({"randint_like": (0,)} if HAS_TENSOR_HIGH else {}), **packed}
    # out1, the batch_sizes _pack_padded_sequence.out returns, is a keyword: no sample position
    assert host_arguments("_pack_padded_sequence") == {"lengths", "out1"} and host_arguments("gru") == {"batch_sizes"}


@pytest.mark.skipif(not HAS_TENSOR_HIGH, reason="randint_like has no tensor `high` overload in this PyTorch")
def test_generated_suite_keeps_randint_like_high_on_the_host():
    from torchcts.cases.context import CaseContext
    from torchcts.cases.schema.run import to_device
    from torchcts.manifest.templates import validation_manifest

    ctx = CaseContext(device=torch.device("meta"), manifest=validation_manifest())
    schema = torch.ops.aten.randint_like.Tensor_out._schema
    args, kwargs = to_device(ctx, schema, [torch.zeros(3), torch.tensor(5)], {"out": torch.zeros(3)})
    assert args[0].device.type == "meta" and kwargs["out"].device.type == "meta"
    assert args[1].device.type == "cpu"
    assert ctx.info["host_arguments"] == ["high"]
    # any other op: every tensor moves
    ctx = CaseContext(device=torch.device("meta"), manifest=validation_manifest())
    args, _ = to_device(ctx, torch.ops.aten.add.Tensor._schema, [torch.zeros(3), torch.tensor(5)], {})
    assert {a.device.type for a in args} == {"meta"} and "host_arguments" not in ctx.info


def test_all_any_dims_out_may_write_the_safely_cast_result_where_cpu_raises():
    from torchcts.cases.suites.out_variants import _allowed, _call

    x = torch.rand(4, 5)
    like = torch.ops.aten.all.dims(x, None)
    assert out_cast_allowed("all.dims_out", torch.bool, torch.float32) == "reduction_out_safe_cast"
    assert out_cast_allowed("all.all_out", torch.bool, torch.float32) is None  # CPU's kernel only: one answer
    assert out_cast_allowed("all.dims_out", torch.float32, torch.int64) is None  # not a safe cast
    rule, other = _allowed("all.dims_out", like)["wrong_dtype"]
    assert rule == "reduction_out_safe_cast"
    composite = _call(lambda *a, out: torch.ops.aten.all.dims_out.redispatch(KS, *a, None, out=out), [x],
                      torch.zeros(like.shape, dtype=torch.float32))
    tol = tolerance_for("elementwise", "float32")
    assert find_mismatch(composite, other(), tol) is None
    wrong = {**composite, "values": 1 - composite["values"]}
    assert find_mismatch(wrong, other(), tol) is not None
    assert _allowed("add.out", torch.ones(2)) == {}
