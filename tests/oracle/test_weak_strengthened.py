"""Weak passes strengthened (issue 28 item 4, level 8): each strengthening makes its case's reference
discriminate on CPU, and a planted wrong result (one the weak reference would have passed) fails.

Covered: the special_values kind's confined copy (cases/opinfo/confined.py) and its repro, the
special_values suite's softmax-like functions, limits, mixed_dtypes eq, out_variants predicates and
sinc, OpInfo samples of narrow domains (strengthen.py), and what is constant by definition
(oracle/weak.py). A wrong result is planted in the device's half of the comparison (`_Planted`, or
the suite's comparison helper patched), since both halves run on CPU here.
"""

from __future__ import annotations

import contextvars
from typing import Any

import pytest
import torch

from torchcts.cases.context import CaseContext
from torchcts.cases.opinfo import run as opinfo_run
from torchcts.cases.opinfo.confined import candidates, confine
from torchcts.cases.opinfo.samples import lookup
from torchcts.manifest.templates import validation_manifest
from torchcts.oracle import weak
from torchcts.oracle.compare import OracleMismatch
from torchcts.oracle.tolerances import tolerance_for

_ON_CPU: contextvars.ContextVar[bool] = contextvars.ContextVar("on_cpu", default=False)


def _ctx() -> CaseContext:
    return CaseContext(device=torch.device("cpu"), manifest=validation_manifest())


class _Planted:
    """An OpInfo whose 'device' call (every call outside the CPU reference) is `wrong`'s answer."""

    def __init__(self, op: Any, wrong: Any) -> None:
        self._op, self._wrong = op, wrong

    def __getattr__(self, name: str) -> Any:
        return getattr(self._op, name)

    @property
    def op(self) -> Any:
        real = self._op.op

        def call(*args: Any, **kwargs: Any) -> Any:
            out = real(*args, **kwargs)
            return out if _ON_CPU.get() else self._wrong(out)

        return call


@pytest.fixture
def planted(monkeypatch):
    """Mark the runner's CPU references, so a _Planted op answers wrongly only on the 'device'."""
    real = opinfo_run.reference_call  # `reference` calls it too

    def reference_call(*args: Any, **kwargs: Any) -> Any:
        token = _ON_CPU.set(True)
        try:
            return real(*args, **kwargs)
        finally:
            _ON_CPU.reset(token)

    monkeypatch.setattr(opinfo_run, "reference_call", reference_call)


def _nan_everywhere(out: Any) -> Any:
    return torch.utils._pytree.tree_map(lambda t: torch.full_like(t, float("nan")) if isinstance(t, torch.Tensor)
                                        and (t.is_floating_point() or t.is_complex()) else t, out)


# --- special_values: one special value confined to one element ---------------------------------------

@pytest.mark.parametrize(("name", "variant"), [("mm", ""), ("softmax", ""), ("std", ""), ("linalg.solve", ""),
                                               ("dot", "")])
def test_special_values_of_reductions_and_contractions_discriminate(name, variant, planted):
    """Injected every 7 elements, NaN reaches every output of these ops (an all-NaN reference, which
    a backend returning NaN everywhere matches); the confined copy's reference discriminates, so the
    case is not weak, and that backend fails."""
    op = lookup(name, variant)
    ctx = _ctx()
    opinfo_run.run_special(ctx, op, torch.float32)
    assert ctx.verdict.weak is None and ctx.verdict.discriminated
    assert "special_confined" not in ctx.info  # named only while the copy runs
    wrong = _ctx()
    with pytest.raises(OracleMismatch):
        opinfo_run.run_special(wrong, _Planted(op, _nan_everywhere), torch.float32)
    assert "special_confined" in wrong.info  # caught by the confined copy, which the record names


def test_the_all_nan_comparison_is_kept(planted):
    """A backend that drops NaN (returns CPU's result of the sample without the injected values) fails
    the propagation check before the confined copy runs."""
    op = lookup("mm")
    with pytest.raises(OracleMismatch):
        opinfo_run.run_special(_ctx(), _Planted(op, lambda out: torch.nan_to_num(out)), torch.float32)


def test_confined_copies_change_one_element_of_one_tensor():
    op = lookup("mm")
    sample = next(iter(op.sample_inputs("cpu", torch.float32)))
    seen = list(candidates(sample))
    assert [label for label, _ in seen[:3]] == [{"tensor": 0, "value": v} for v in ("inf", "-inf", "nan")]
    assert seen[3][0] == {"tensor": 1, "value": "inf"} and len(seen) == 6
    copy = confine(sample, 1, "-inf")
    assert torch.equal(copy.input, sample.input) and copy.args[0].view(-1)[0] == float("-inf")
    assert int(torch.isinf(copy.args[0]).sum()) == 1 and not torch.isinf(sample.args[0]).any()
    assert confine(sample, 2, "inf") is None and confine(sample, 0, "bogus") is None


def test_repro_replays_the_confined_copy():
    from torchcts.cases.opinfo.repro import materialize

    params = {"op": "mm", "variant": "", "kind": "special_values", "dtype": "float32"}
    _, _, args, _ = materialize(params, 0)
    assert int(torch.isnan(args[0]).sum()) > 1  # the injection, as before
    _, _, args, _ = materialize(params, 0, confined={"tensor": 0, "value": "inf"})
    assert int(torch.isinf(args[0]).sum()) == 1 and not torch.isnan(args[0]).any()
    assert weak.tensor_weakness(torch.mm(*args), tolerance_for("linalg", "float32")) is None


# --- the special_values suite: softmax-like functions reduce one edge per slice -----------------------

@pytest.mark.parametrize("family", ["special_softmax", "special_log_softmax", "special_logsumexp"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_reducing_special_functions_reduce_one_edge_per_slice(family, dtype):
    """Over the column of every edge the NaN reached every output (all NaN); one edge per reduced
    slice leaves the others finite: the reference discriminates and NaN everywhere fails."""
    from torchcts.cases.overloads import resolve
    from torchcts.cases.suites.special_values import EdgeArgs, edges

    op = resolve(family, "default")
    synth = EdgeArgs(dtype, family, binary=False)
    args = {a.name: synth(a, torch.device("cpu")) for a in op._schema.arguments
            if str(a.type) in ("Tensor", "int", "List[int]") and a.name != "out"}
    assert args["self"].shape == (3, edges(dtype).numel())
    torch.testing.assert_close(args["self"][0], edges(dtype), rtol=0, atol=0, equal_nan=True)  # every edge still
    ref = op(**args)
    tol = tolerance_for("special", str(dtype).removeprefix("torch."))
    assert weak.tensor_weakness(ref, tol) is None and bool(ref.isfinite().any()) and bool(ref.isnan().any())
    ctx = _ctx()
    ctx.assert_close(ref.clone(), ref, category="special")
    assert ctx.verdict.weak is None
    with pytest.raises(OracleMismatch):
        _ctx().assert_close(torch.full_like(ref, float("nan")), ref, category="special")


# --- limits: odd products, an absorbing-free first row, marks in `unit` -----------------------------

LIMITS_WEAK = [("prod", "high", "int8"), ("prod", "mixed", "int64"), ("prod", "high", "bool"), ("cumprod", "unit", "int16"),
               ("cumprod", "unit", "bool"), ("amin", "mixed", "uint8"), ("amin", "high", "bool"), ("all", "mixed", "uint8"),
               ("all", "high", "bool"), ("argmax", "unit", "int32")]


@pytest.mark.parametrize(("op", "pattern", "dtype"), LIMITS_WEAK)
def test_limits_references_discriminate(op, pattern, dtype, monkeypatch):
    """These references were zeros or one value in every layout; strengthened, a backend answering
    zeros, or the first element everywhere, fails (planted in run_both's device result)."""
    from torchcts.cases.suites import limits

    dt = getattr(torch, dtype)
    ctx = _ctx()
    limits.reduce_at_limits(ctx, dt, op, pattern)
    assert ctx.verdict.weak is None and ctx.verdict.discriminated
    for wrong in (torch.zeros_like, lambda t: torch.full_like(t, t.reshape(-1)[0].item())):
        def planted(c, fn, t, category="elementwise", _wrong=wrong):
            expected = fn(t)
            c.assert_close(_wrong(expected), expected, category=category)

        monkeypatch.setattr(limits, "run_both", planted)
        with pytest.raises(OracleMismatch):
            limits.reduce_at_limits(_ctx(), dt, op, pattern)


def test_limits_products_still_wrap_and_keep_their_patterns():
    """Odd values keep `high` near the maximum and the product wrapping (an int8 accumulator differs)."""
    from torchcts.cases.suites.limits import LENGTH, strengthened, values

    x = strengthened(values(torch.int8, "high", 3 * LENGTH, 0), "prod", "high", 0)
    assert bool((x % 2 != 0).all()) and int(x.min()) >= 125
    wide, narrow = x[:LENGTH].prod(), x[:LENGTH].prod(dtype=torch.int8)
    assert int(wide) != 0 and int(wide) != int(narrow)
    sums = strengthened(values(torch.int8, "high", 3 * LENGTH, 0), "sum", "high", 0)
    assert torch.equal(sums, values(torch.int8, "high", 3 * LENGTH, 0))  # other ops keep the pattern as it was


# --- mixed_dtypes eq: operands that agree in places ----------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64, torch.float16])
def test_mixed_dtypes_eq_answers_both_ways(dtype, monkeypatch):
    """Random operands of two dtypes are never equal (all False, which zeros match); with every other
    element agreeing the reference holds both answers, and a backend answering False everywhere fails."""
    from torchcts.cases.suites import mixed_dtypes

    ctx = _ctx()
    mixed_dtypes.pairwise(ctx, dtype, "eq")
    assert ctx.verdict.weak is None and ctx.verdict.discriminated

    def planted(c, fn, *args, category="elementwise"):
        expected = fn(*args)
        c.assert_close(torch.zeros_like(expected), expected, category=category)

    monkeypatch.setattr(mixed_dtypes, "run_both", planted)
    with pytest.raises(OracleMismatch):
        mixed_dtypes.pairwise(_ctx(), dtype, "eq")


# --- results constant by definition: aten factories and fills ------------------------------------------

def test_constant_overloads_are_the_factories_and_fills():
    assert all(weak.constant_overload(n) for n in ("aten::_foreach_zero_", "aten::_foreach_zero_.default",
                                                   "new_full.out", "aten::fill.Scalar_out", "_efficientzerotensor",
                                                   "aten::zero_"))
    assert not any(weak.constant_overload(n) for n in ("aten::add.Tensor", "aten::_foreach_add_.List", "eq.Scalar_out",
                                                       "aten::fill_diagonal_", "aten::__irshift__.Scalar"))


def test_foreach_zero_is_judged_constant_but_still_compared():
    """_foreach_zero_'s written lists are zeros by definition: not a weak pass, yet a device that leaves
    a member unwritten still fails (the comparison is unchanged)."""
    from torchcts.cases.overloads import compare_overload, resolve
    from torchcts.cases.suites.foreach import ForeachArgs

    ctx = _ctx()
    op = resolve("_foreach_zero_", "default")
    compare_overload(ctx, op, ForeachArgs(ctx, "_foreach_zero", torch.float32, "dense"))
    assert ctx.verdict.weak is None and not ctx.verdict.discriminated  # not judged: constant by definition
    with pytest.raises(OracleMismatch):
        ctx.assert_close([torch.ones(3)], [torch.zeros(3)], constant=weak.constant_overload(op.name()))


# --- out_variants: float predicates see NaN and infinities, sinc sees zeros ----------------------------

@pytest.mark.parametrize(("case", "dtype"), [("isnan", torch.float32), ("isinf", torch.float32),
                                             ("isneginf", torch.float32), ("sinc", torch.int64),
                                             ("special_sinc", torch.int64)])
def test_out_variants_predicates_and_sinc_discriminate(case, dtype, monkeypatch):
    from torchcts.cases.suites import out_variants

    ctx = _ctx()
    out_variants.out_case(ctx, dtype, case)
    assert ctx.verdict.weak is None and ctx.verdict.discriminated

    def planted(c, checks, category="elementwise", allowed=None, constant=False):
        expected = checks["functional"](torch.device("cpu"))
        c.assert_close(torch.zeros_like(expected), expected, category=category, constant=constant)

    monkeypatch.setattr(out_variants, "mirror", planted)
    with pytest.raises(OracleMismatch):
        out_variants.out_case(_ctx(), dtype, case)


def test_out_variants_float_predicates_of_integers_are_constant_by_definition():
    from torchcts.cases.suites import out_variants

    ctx = _ctx()
    out_variants.out_case(ctx, torch.int64, "isnan")
    assert ctx.verdict.weak is None and not ctx.verdict.discriminated  # all False by definition: not judged


# --- OpInfo samples of integer, bool and complex inputs ------------------------------------------------

def _zeros_or_first(out: Any) -> Any:
    """What a weak reference could not tell: zeros, or the first element everywhere."""
    def wrong(t: torch.Tensor) -> torch.Tensor:
        flat = t.reshape(-1)
        return torch.zeros_like(t) if flat.numel() == 0 or bool(flat[0] != 0) else torch.full_like(t, flat[-1].item())
    return torch.utils._pytree.tree_map(lambda t: wrong(t) if isinstance(t, torch.Tensor) else t, out)


@pytest.mark.parametrize(("name", "variant", "dtype"), [
    ("asin", "", torch.uint8), ("asin", "", torch.bool), ("atanh", "", torch.uint8), ("erfinv", "", torch.bool),
    ("acosh", "", torch.bool), ("isreal", "", torch.complex64), ("min", "reduction_no_dim", torch.uint8),
    ("prod", "", torch.uint8), ("cumprod", "", torch.uint8), ("xlogy", "", torch.bool),
])
def test_opinfo_samples_of_narrow_domains_discriminate(name, variant, dtype, planted):
    """OpInfo keeps these samples in the op's domain, where a bool or uint8 input holds one value (asin:
    all 0), uint8 minima and products were 0 and random complex numbers never real; rewritten
    (strengthen.py) the case is not weak, and a backend answering zeros (or one value) fails."""
    op = lookup(name, variant)
    ctx = _ctx()
    opinfo_run._functional(ctx, op, dtype, op.op)
    assert ctx.verdict.weak is None and ctx.verdict.discriminated, ctx.verdict.weak
    with pytest.raises(OracleMismatch):
        opinfo_run._functional(_ctx(), op, dtype, _Planted(op, _zeros_or_first).op)


@pytest.mark.parametrize(("name", "dtype"), [("signbit", "uint8"), ("signbit", "bool"), ("angle", "uint8"),
                                             ("special.entr", "bool")])
def test_constant_for_these_dtypes_by_definition(name, dtype):
    """signbit and angle of non-negative reals (False, 0), entr of bools (0 at 0 and 1): not judged; the
    same ops of signed or floating inputs still are."""
    assert weak.constant_by_definition(name, dtype)
    assert not weak.constant_by_definition(name, "float32") and not weak.constant_by_definition(name, "int8")


@pytest.mark.parametrize(("name", "dtype"), [("logit", torch.int16), ("special.ndtri", torch.uint8),
                                             ("acos", torch.bool)])
def test_noncontiguous_samples_of_narrow_domains_discriminate(name, dtype, planted):
    """The noncontiguous kind's samples of these were one value (all 0 inside the domain)."""
    op = lookup(name)
    ctx = _ctx()
    opinfo_run._functional(ctx, op, dtype, op.op, transform=opinfo_run._noncontiguous)
    assert ctx.verdict.weak is None and ctx.verdict.discriminated, ctx.verdict.weak
    with pytest.raises(OracleMismatch):
        opinfo_run._functional(_ctx(), op, dtype, _Planted(op, _zeros_or_first).op, transform=opinfo_run._noncontiguous)


def test_the_repro_script_of_a_confined_failure_calls_the_confined_copy():
    """A record failing in the confined copy names it (info.special_confined); the standalone
    script's spec replays that copy, a record without it the NaN injection, and a hostile value
    no copy at all."""
    from torchcts.cases.repro_builders import builder_for
    from torchcts.manifest.templates import cpu_manifest
    from torchcts.model.case import Case, NotApplicable

    case = Case(id="opinfo/mm/float32/special_values", suite="opinfo", level=2, runner="torchcts.cases.opinfo:run",
                params={"op": "mm", "dtype": "float32", "kind": "special_values"}, ops=("aten::mm",),
                dtype="float32", kind="special_values")
    build = builder_for(case)
    confined = build(case, cpu_manifest(), {"sample_index": 0, "special_confined": {"tensor": 1, "value": "-inf"}})
    first, second = confined.samples[0]["args"][:2]
    assert not torch.isinf(first).any() and int(torch.isinf(second).sum()) == 1 and second.view(-1)[0] < 0
    injected = build(case, cpu_manifest(), {"sample_index": 0})
    assert int(torch.isnan(injected.samples[0]["args"][0]).sum()) > 1
    with pytest.raises(NotApplicable):
        build(case, cpu_manifest(), {"sample_index": 0, "special_confined": {"tensor": 1, "value": "__import__"}})
