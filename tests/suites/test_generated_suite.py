"""The generated suite (cases/schema/) and the reviewed exclusion list (cases/surface_exclusions.py).

Small and in-process: the plan is built from a fake "other suites" list, and a few cases run on
CPU. The sim fault only the generated suite catches is in tests/sim/test_sim_faults.py ("generated").
"""

from __future__ import annotations

import pytest
import torch
from helpers.runs import latest_run, records, run_cli

from torchcts.cases.context import CaseContext
from torchcts.cases.schema import build, synth
from torchcts.cases.schema.run import run_surface
from torchcts.cases.surface_exclusions import EXCLUDED, excluded_reason
from torchcts.manifest.templates import validation_manifest
from torchcts.model.case import Case, NotApplicable, Pending
from torchcts.model.status import FAILURES, PASSING, STATUSES
from torchcts.oracle.mismatch import OracleMismatch


@pytest.fixture(scope="module")
def planned() -> tuple[dict[str, Case], dict[str, str]]:
    named = Case("x/abs", "x", 1, "m:f", ops=("aten::abs",))  # names abs's packet: not its out=
    cases, skipped = build.plan([named])
    return {c.id: c for c in cases}, skipped


def test_exclusions_have_reasons_and_match_families():
    assert all(isinstance(r, str) and len(r) > 10 for r in EXCLUDED.values())
    for name in ("aten::cudnn_convolution.out", "aten::miopen_rnn", "aten::miopen_batch_norm.out",
                 "aten::mkldnn_linear", "aten::_mps_convolution", "aten::fbgemm_linear_fp16_weight",
                 "aten::quantize_per_tensor", "aten::q_scale", "aten::_cufft_clear_plan_cache"):
        assert excluded_reason(name), name
    assert "cuDNN" in excluded_reason("aten::cudnn_convolution")
    for name in ("aten::add.Tensor", "aten::abs", "aten::conv2d", "aten::var", "aten::_foreach_add.List"):
        assert excluded_reason(name) is None, name


def test_plan_generates_the_remaining_surfaces(planned):
    cases, skipped = planned
    assert "generated/abs/float32" not in cases and "generated/_cdist_forward/float32" in cases  # packet != out=
    assert not any("cudnn" in i for i in cases) and any(v.startswith("excluded: cudnn_") for v in skipped.values())
    assert all(c.level == build.LEVEL and c.suite == "generated" and c.ops == (c.params["overload"],)
               for c in cases.values())
    assert cases["generated/bitwise_and.Tensor/int64"].dtype == "int64"  # integer-only ops
    assert cases["generated/bernoulli.p/float32"].params["check"] == "properties"
    assert cases["generated/bernoulli.p/float32"].requires == ("rng",)
    again, _ = build.plan([Case("x/abs", "x", 1, "m:f", ops=("aten::abs",))])
    assert [c.id for c in again] == list(cases)  # ids are stable: overload name + dtype


def test_overloads_declared_but_never_dispatched_get_a_case_anyway():
    """A packet name (OpInfo's clamp_max) declares clamp_max.out, which its samples never call
    (cases/schema/unreached.py, measured in a level-8 run): the generated suite still checks it."""
    from torchcts.cases.schema.unreached import UNREACHED

    named = [Case("opinfo/clamp_max/float32/forward", "opinfo", 1, "m:f", ops=("aten::clamp_max", "aten::clamp_max_")),
             Case("x/clamp_min_out", "x", 1, "m:f", ops=("aten::clamp_min.out", "aten::clamp_min.Tensor_out"))]
    ids = {c.id for c in build.plan(named)[0]}
    assert {"generated/clamp_max/float32", "generated/clamp_max.out/float32", "generated/clamp_max_/float32",
            "generated/clamp_min.out/float32"} <= ids
    assert "generated/clamp_min.Tensor_out/float32" not in ids  # named and not in UNREACHED: covered
    assert "aten::clamp_min.out" in UNREACHED and "aten::clamp_min.Tensor_out" not in UNREACHED
    surfaces = {s.name for s in build.aten_surfaces()}
    assert set(UNREACHED) <= surfaces  # no typo (every entry is an overload of this build)


def _ctx() -> CaseContext:
    return CaseContext(device=torch.device("cpu"), manifest=validation_manifest())


def test_cases_run_against_cpu_and_pend_without_a_reference():
    run_surface(_ctx(), "aten::abs.out", torch.float32)
    run_surface(_ctx(), "aten::_cdist_forward", torch.float32, category="matmul")
    with pytest.raises(Pending, match="CPU rejected all"):  # mask: one entry per row of weight, no recipe
        run_surface(_ctx(), "aten::_rowwise_prune", torch.float32)


def test_a_wrong_device_result_fails(monkeypatch):
    """The device side's output goes through the oracle: inputs shifted by 1 on the way are caught."""
    from torchcts.cases.schema import run as run_mod

    real = run_mod._to
    monkeypatch.setattr(run_mod, "_to", lambda v, d: real(v, d) + 1 if isinstance(v, torch.Tensor) else real(v, d))
    with pytest.raises(OracleMismatch):
        run_surface(_ctx(), "aten::_logcumsumexp", torch.float32)


def test_device_inputs_are_made_for_the_accepted_profile_only(monkeypatch):
    """CPU rejects gather's first profile (float indices): only the accepted one's inputs reach the
    device. An in-place op's device inputs are made afresh, not CPU's (which its call overwrote)."""
    from torchcts.cases.schema import run as run_mod

    real, moved = run_mod._to, []
    monkeypatch.setattr(run_mod, "_to", lambda v, d: moved.append(v) or real(v, d))
    ctx = _ctx()
    run_surface(ctx, "aten::gather", torch.float32)
    assert "int64 indices" in ctx.info["sample"]
    assert [v.dtype for v in moved if isinstance(v, torch.Tensor)] == [torch.float32, torch.int64]
    run_surface(_ctx(), "aten::exp_", torch.float32)


def test_synth_sizes_and_out_profiles():
    schema = torch.ops.aten.upsample_nearest2d.out._schema
    args, kwargs = synth.build_args(schema, "x", 0, torch.float32, synth.Profile((1, 2, 3, 3), False), "cpu")
    assert args[1] == [3, 3] and kwargs["out"].numel() == 0
    assert any(p.out_dtype == "int64" for p in synth.profiles(torch.ops.aten.max.dim_max._schema))


@pytest.mark.parametrize("overload, recipe", [
    ("aten::slow_conv_dilated2d", "conv2d"), ("aten::convolution_backward", "conv2d"),
    ("aten::nll_loss_forward", "nll_loss"), ("aten::upsample_nearest2d.vec", "upsample2d"),
    ("aten::select_backward", "select"), ("aten::_native_multi_head_attention", "attention"),
    # issue 32 item 6: pending in the level-8 run of every dtype until these recipes
    ("aten::gru.input", "gru"), ("aten::gru.data", "gru"), ("aten::rnn_tanh.input", "rnn"), ("aten::rnn_relu.data", "rnn"),
    ("aten::_upsample_nearest_exact1d.vec", "upsample1d"), ("aten::_upsample_bicubic2d_aa.vec", "upsample2d"),
    ("aten::_upsample_nearest_exact3d.vec", "upsample3d"), ("aten::_convolution_mode", "convolution_mode"),
    ("aten::_pack_padded_sequence", "pack_padded_sequence"), ("aten::_pack_padded_sequence.out", "pack_padded_sequence"),
    ("aten::_pack_padded_sequence_backward", "pack_padded_sequence_backward"),
    ("aten::_pad_packed_sequence", "pad_packed_sequence"),
    ("aten::clip_", "clamp_bound"), ("aten::clip_.Tensor", "clamp_bound"),
    ("aten::float_power.Scalar_out", "float_power_out"), ("aten::orgqr", "orgqr"),
    ("aten::embedding_backward", "embedding_backward"), ("aten::trace_backward", "trace_backward"),
    ("aten::value_selecting_reduction_backward", "value_selecting_reduction_backward"), ("aten::_pad_enum", "pad"),
    ("aten::nuclear_norm.dim_out", "nuclear_norm"), ("aten::affine_grid_generator_backward", "affine_grid"),
    ("aten::unflatten_dense_tensors", "unflatten_dense_tensors"), ("aten::_reshape_from_tensor", "reshape_from_tensor"),
    ("aten::_grouped_mm", "grouped_mm"),
    # overloads of unreached.py: inputs CPU accepts that give a result other than all zeros or a constant
    ("aten::clamp.out", "clamp_bound"), ("aten::clamp_max.out", "clamp_one_bound"), ("aten::clamp_min.out", "clamp_one_bound"),
    ("aten::clamp_max_", "clamp_one_bound"), ("aten::bitwise_right_shift.Tensor_Scalar", "shift"),
    ("aten::floor_divide.Scalar", "floor_divide"), ("aten::eq_.Scalar", "eq_scalar"), ("aten::isin.Tensor_Scalar", "isin"),
    ("aten::isin.Scalar_Tensor", "isin"), ("aten::glu.out", "glu"), ("aten::view_as_complex_copy", "view_as_complex"),
    ("aten::view_as_real_copy.out", "complex"), ("aten::bincount.out", "bincount"),
])
def test_family_recipes_give_inputs_cpu_accepts(overload, recipe):
    """These families pended (CPU rejected every single-shape profile); their recipe's arguments agree."""
    if not hasattr(torch.ops.aten, overload.split("::")[1].split(".")[0]):
        pytest.skip(f"{overload} is newer than PyTorch {torch.__version__}")
    ctx = _ctx()
    dtype = torch.int64 if "shift" in overload else torch.float32  # integer-only (op facts: integer_only)
    run_surface(ctx, overload, dtype, category="conv" if "conv" in overload else "reduction")
    assert ctx.info["sample"].startswith(f"{overload} with recipe {recipe},"), ctx.info["sample"]
    if recipe in NOT_WEAK:  # recipes made so the result tells a right answer from zeros or a constant
        assert ctx.verdict.weak is None, (overload, ctx.verdict.weak)


NOT_WEAK = frozenset({"clamp_bound", "clamp_one_bound", "shift", "floor_divide", "eq_scalar", "isin", "bincount"})


def test_packed_sequence_lengths_and_batch_sizes_stay_on_the_host():
    """PyTorch requires them on the CPU for every device (oracle/allowed.py: HostArgument)."""
    from torchcts.cases.schema.run import to_device

    ctx = CaseContext(device=torch.device("meta"), manifest=validation_manifest())
    schema = torch.ops.aten._pack_padded_sequence.default._schema
    args, _ = to_device(ctx, schema, [torch.zeros(3, 2, 2), torch.tensor([3, 2]), False], {})
    assert args[0].device.type == "meta" and args[1].device.type == "cpu" and ctx.info["host_arguments"] == ["lengths"]
    schema = torch.ops.aten.gru.data._schema
    args, _ = to_device(ctx, schema, [torch.zeros(3, 2), torch.tensor([2, 1]), torch.zeros(1, 2, 2)], {})
    assert [a.device.type for a in args] == ["meta", "cpu", "meta"]


def test_recipes_are_named_once_and_each_matches_an_aten_op():
    from torchcts.cases.schema import recipes

    assert len({r.name for r in recipes.RECIPES}) == len(recipes.RECIPES)
    bases = {s.base for s in build.aten_surfaces()}
    for r in recipes.RECIPES:
        if r.name == "grouped_mm" and not hasattr(torch.ops.aten, "_grouped_mm"):
            continue  # newer than PyTorch 2.7
        assert any(recipes.recipe_for(b) is r for b in bases), r.name  # no typo, not shadowed by an earlier one


def test_out_dtypes_like_the_functional_sibling():
    """max.dim_max writes values and indices: one dtype for every out fits neither; the sibling's result does."""
    schema = torch.ops.aten.max.dim_max._schema
    assert synth.sibling_of(schema) is torch.ops.aten.max.dim
    _, kwargs = synth.build_args(schema, "x", 0, torch.float32, synth.Profile((3, 3), False, "like"), "cpu")
    assert (kwargs["max"].dtype, kwargs["max_values"].dtype) == (torch.float32, torch.int64)
    assert kwargs["max"].shape == (3,)
    run_surface(_ctx(), "aten::max.dim_max", torch.float32)


def test_pending_is_visible_never_a_pass_never_a_failure(tmp_path):
    info = STATUSES["pending"]
    assert "pending" not in PASSING and "pending" not in FAILURES and not info.executed
    r = run_cli("run", "--validation", "--level", "8", "--no-isolation", "--case", "generated/_rowwise_prune/float32",
                "--case", "generated/_cdist_forward/float32", "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    status = {rec["id"]: rec["status"] for rec in records(latest_run(tmp_path))}
    assert status == {"generated/_rowwise_prune/float32": "pending", "generated/_cdist_forward/float32": "passed"}
    assert "pending" in (latest_run(tmp_path) / "summary.md").read_text()


def test_an_overload_cpu_has_no_kernel_for_is_not_applicable_not_pending():
    """No input will ever give a reference (a CUDA-only kernel): nothing for the generator to do
    later, so no `pending` that asks for a recipe."""
    with pytest.raises(NotApplicable, match="CPU has no kernel for aten::_efficient_attention_backward") as caught:
        run_surface(_ctx(), "aten::_efficient_attention_backward", torch.float32)
    assert not isinstance(caught.value, Pending)
    # an entry point only out-of-tree backends implement stays a gap to fill, not "lacks it"
    with pytest.raises(Pending, match="CPU rejected all"):
        run_surface(_ctx(), "aten::convolution_overrideable", torch.float32)


def test_a_generated_case_follows_the_dtype_claim(monkeypatch):
    """pytorch_ocl claims float32 alone and refuses complex64 and float16 tensors themselves: `_conj`
    of complex inputs and `_cast_Half` were its errors. An input or CPU result of an unclaimed dtype is
    not_claimed, as in every OpInfo kind (an empty one holds no value: batch norm's uint8 reserve);
    the device's refusal of what CPU computes in an unclaimed dtype is too, and a wrong answer
    fails whatever CPU computed through."""
    import dataclasses

    from torchcts.cases.schema import run as run_mod
    from torchcts.model.case import NotClaimed

    floats = dataclasses.replace(validation_manifest(), supported_dtypes={"float32": True})

    def ctx() -> CaseContext:
        return CaseContext(device=torch.device("cpu"), manifest=floats, case=Case("generated/x", "generated", 8, "m:f"))

    for overload, dtype in (("aten::_conj", "complex64"), ("aten::_cast_Half", "float16"),
                            ("aten::view_as_real_copy", "complex64")):
        with pytest.raises(NotClaimed, match=f"unclaimed dtype {dtype}"):
            run_surface(ctx(), overload, torch.float32)
    run_surface(ctx(), "aten::_batch_norm_with_update_functional", torch.float32)
    run_surface(ctx(), "aten::linalg_pinv.out_rcond_tensor", torch.float32, category="linalg")
    real = run_mod._to
    refusing = run_mod.overload_of("aten::linalg_pinv.out_rcond_tensor")

    def device_call(*args, **kwargs):  # the device's inputs carry a mark; CPU's run as usual
        if any(getattr(a, "on_device", False) for a in args):
            raise RuntimeError("Unsupported data type:Double")
        return refusing(*args, **kwargs)

    device_call._schema = refusing._schema
    monkeypatch.setattr(run_mod, "_to", lambda v, d: _marked(real(v, d)))
    monkeypatch.setattr(run_mod, "overload_of", lambda name: device_call)
    with pytest.raises(NotClaimed, match="the device raised where CPU computes in the unclaimed dtype float64"):
        run_surface(ctx(), "aten::linalg_pinv.out_rcond_tensor", torch.float32, category="linalg")
    with pytest.raises(RuntimeError, match="Double"):  # float64 claimed: the refusal is the device's error
        run_surface(_ctx(), "aten::linalg_pinv.out_rcond_tensor", torch.float32, category="linalg")


def _marked(value):
    if isinstance(value, torch.Tensor):
        value.on_device = True
    return value


def test_a_message_names_the_overload_and_shows_both_sides(monkeypatch):
    """A properties failure shows the device's and CPU's shapes in its message (it read only "shapes,
    dtypes or types differ": pytorch_ocl's scatter out= of shape (0,) for CPU's (2, 3, 3)); a CPU
    without a kernel is named by the case's overload, not its packet (addmm.dtype_out read 'addmm')."""
    from torchcts.cases.schema import run as run_mod

    with pytest.raises(NotApplicable, match=r"CPU has no kernel for aten::_cudnn_ctc_loss\.Tensor "):
        run_surface(_ctx(), "aten::_cudnn_ctc_loss.Tensor", torch.float32)
    real = run_mod._to
    monkeypatch.setattr(run_mod, "_to", lambda v, d: real(v, d)[:1] if isinstance(v, torch.Tensor) and v.dim() else real(v, d))
    with pytest.raises(OracleMismatch, match=r"differ from CPU's: got .*1.*, expected .*3") as caught:
        run_surface(_ctx(), "aten::rand_like", torch.float32, check="properties", why="random")
    assert caught.value.mismatch.first_actual != caught.value.mismatch.first_expected
