"""Running one OpInfo case: every selected sample on the device and on CPU, compared.

The runner is `run(ctx, op=, variant=, kind=, dtype=)`; it looks the OpInfo up at run time so the
case itself stays JSON. A sample the CPU reference rejects (raises) is skipped and counted: CPU is
the oracle, so there is nothing to compare against. Each sample's index, description and a
command rerunning just that sample are attached to the record before the device runs it, so an
error or crash names the sample too.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torchcts.cases.context import CaseContext
from torchcts.cases.observe import unobserved
from torchcts.cases.opinfo import out_layouts, recheck
from torchcts.cases.opinfo.confined import candidates
from torchcts.cases.opinfo.effects import Repeat, Retained, check_arguments, recast
from torchcts.cases.opinfo.error_types import device_class_errors
from torchcts.cases.opinfo.kinds import runs
from torchcts.cases.opinfo.samples import (
    copy_sample,
    describe_sample,
    inject_special_values,
    lookup,
    mentions_device,
    rebuilt,
    selected_samples,
    tensors_of,
)
from torchcts.cases.opinfo.strengthen import strengthener
from torchcts.cases.opinfo.truth import truth_of
from torchcts.cases.repro_builders import repro_command
from torchcts.compat import processes_output
from torchcts.model.case import NotApplicable, NotClaimed
from torchcts.oracle.allowed import accepted_exception, output_alternatives
from torchcts.oracle.categories import tolerance_category
from torchcts.oracle.compare import Mismatch, OracleMismatch, assert_matches
from torchcts.oracle.composite import composite_answer
from torchcts.oracle.conditioning import conditioned_atol, running_stats_atol
from torchcts.oracle.exactness import Exact, exactness_of
from torchcts.oracle.opfacts import FACTS
from torchcts.oracle.tolerances import Tolerance
from torchcts.oracle.truth import Truth
from torchcts.oracle.weak import constant_by_definition, weakness


class SkipSample(Exception):
    """This sample cannot be checked (the CPU reference rejects it, or it does not fit the kind)."""


class UnclaimedSample(SkipSample):
    """This sample holds a tensor of a dtype the manifest does not claim (an input, or CPU's result: polar
    of float32 is complex64); a case none of whose samples is claimed is not_claimed (NotClaimed)."""


def require_claimed(ctx: CaseContext, *objs: Any) -> None:
    """UnclaimedSample when a tensor of `objs` has a dtype the manifest does not claim (index dtypes aside:
    CaseContext.claims_value_dtype)."""
    for t in tensors_of(objs):
        if not ctx.claims_value_dtype(t.dtype):
            raise UnclaimedSample(f"a tensor of the unclaimed dtype {str(t.dtype).removeprefix('torch.')}")


def asks_pinned_host_copy(op: Any, sample: Any, device: torch.device) -> bool:
    """Whether the sample asks a non-blocking copy from `device` to the host (op facts `pins_on_host`):
    a CPU target among its arguments, and non_blocking= or, positionally, its first bool argument true.
    On the CPU itself nothing is copied across, nothing pinned."""
    if device.type == "cpu":
        return False
    given = (*sample.args, *sample.kwargs.values())
    to_host = any((isinstance(x, str) and x == "cpu") or (isinstance(x, torch.device) and x.type == "cpu")
                  for x in given)
    flags = [x for x in sample.args if isinstance(x, bool)]
    non_blocking = bool(sample.kwargs.get("non_blocking", flags[0] if flags else False))
    # the op's fact last: every sample of every case asks, and almost none names the host
    return to_host and non_blocking and FACTS.has("pins_on_host", op.name, op.variant_test_name)


def require_pinned(ctx: CaseContext, op: Any, sample: Any) -> None:
    """UnclaimedSample where the sample asks a non-blocking copy to the host and `pinned_memory` is not
    claimed: pinning is that claim's question, as in the transfers suite."""
    if not ctx.claims("pinned_memory") and asks_pinned_host_copy(op, sample, ctx.device):
        raise UnclaimedSample("a non-blocking copy to the host, which pins memory (pinned_memory not claimed)")


@contextmanager
def claimed_if_failing(ctx: CaseContext, cpu_again: Callable[[], Any], *, raised: bool = False) -> Iterator[None]:
    """Around the device's part of one check (functional, in-place, out=, backward alike): where the
    device *raised* and CPU's own computation (`cpu_again`, a fresh CPU run) passes through a dtype the
    manifest does not claim, the failure is no claim's (UnclaimedSample): irfft of float32 returns
    float32 but computes in complex64, which pytorch_ocl refuses. A device that *answered* and
    answered wrong (OracleMismatch) fails: its inputs and result are in claimed dtypes, and what it
    computes through on the way is its own business (OpenReg's float32 hfft2, off by up to 364, passed
    while its wrong samples were dropped). `raised`: the mismatch inside tells of the device's own
    exception (an error input's different exception type). Asked only on a failure, so passes pay nothing."""
    try:
        yield
    except SkipSample:
        raise
    except OracleMismatch:
        if raised:
            _unclaimed_inside(ctx, cpu_again)
        raise
    except Exception:
        _unclaimed_inside(ctx, cpu_again)
        raise


def _unclaimed_inside(ctx: CaseContext, cpu_again: Callable[[], Any]) -> None:
    """UnclaimedSample where CPU's computation (`cpu_again`) passes through a dtype not claimed."""
    with unobserved():
        unclaimed = ctx.unclaimed(recheck.computed_dtypes(cpu_again))
    if unclaimed:
        raise UnclaimedSample(f"a tensor of the unclaimed dtype {unclaimed[0]}")


def require_defined_writes(op: Any, sample: Any) -> None:
    """SkipSample when the op writes through a view its arguments describe (op facts
    `writes_through_view`) and that view overlaps itself: no order of the writes is the right one,
    so CPU's answer is one of several (pytorch_ocl: as_strided_scatter explored to strides (8, 1, 2, 1))."""
    where = FACTS.get("writes_through_view", op.name, op.variant_test_name)
    if where is None or not isinstance(sample.input, torch.Tensor):
        return
    size, stride, offset = (sample.args[i] if i < len(sample.args) else None for i in where)
    offset = sample.kwargs.get("storage_offset", offset) or 0
    if size is not None and stride is not None and view_overlaps(tuple(size), tuple(stride), int(offset)):
        raise SkipSample("writes through a view that overlaps itself: the order of its writes is undefined")


def view_overlaps(size: tuple[int, ...], stride: tuple[int, ...], offset: int = 0, limit: int = 1 << 20) -> bool:
    """Whether two elements of a strided view share one storage element (counted exactly, up to `limit`
    elements: beyond, False, as nothing is dropped on a guess)."""
    numel = math.prod(size)
    if numel <= 1 or numel > limit or len(size) != len(stride):
        return False
    at = torch.full((), offset, dtype=torch.long)
    for n, step in zip(size, stride, strict=True):
        at = at.unsqueeze(-1) + torch.arange(n) * step
    return bool(at.unique().numel() < numel)


def call(fn: Callable[..., Any], sample: Any, **extra: Any) -> Any:
    return fn(sample.input, *sample.args, **sample.kwargs, **extra)


def reference(fn: Callable[..., Any], sample: Any, transform: Callable[[Any], Any] | None = None,
              seen: Callable[[Any], None] | None = None, **extra: Any) -> Any:
    """The CPU result on a private copy of the sample (`reference_call`)."""
    return reference_call(fn, sample, transform, seen, **extra)[1]


@unobserved()
def reference_call(fn: Callable[..., Any], sample: Any, transform: Callable[[Any], Any] | None = None,
                   seen: Callable[[Any], None] | None = None, **extra: Any) -> tuple[Any, Any]:
    """(the private CPU copy of the sample after the call, the CPU result), the copy transformed like
    the device's if `transform` is given (`seen` gets it before the call); SkipSample when the CPU
    rejects the sample. Not observed: the CPU reference is TorchCTS's work, not the device's
    (cases/observe.py)."""
    with cpu_accepts():
        cpu = copy_sample(sample, "cpu")
        cpu = transform(cpu) if transform is not None else cpu
    if seen is not None:
        seen(cpu)
    with cpu_accepts():
        return cpu, call(fn, cpu, **extra)


@contextmanager
def cpu_accepts() -> Iterator[None]:
    """Around CPU's part of one sample (the reference): an exception there is CPU rejecting the sample,
    which makes it uncheckable (SkipSample, counted by each_sample), never the device's failure."""
    try:
        yield
    except SkipSample:
        raise
    except Exception as exc:  # noqa: BLE001 - any CPU rejection makes the sample uncheckable
        raise SkipSample(f"CPU raises {type(exc).__name__}") from None


def fail(what: str, **extra: Any) -> None:
    raise OracleMismatch(Mismatch(what, extra=extra))


def each_sample(ctx: CaseContext, op: Any, dtype: torch.dtype | None, body: Callable[[Any], None], *,
                requires_grad: bool = False, errors: bool = False) -> None:
    """Run body over the op's selected samples (one index, or the first max_samples); body raises
    SkipSample for a sample it cannot check. NotApplicable when no sample could be checked."""
    ran, skipped, unclaimed = 0, {}, 0
    index = getattr(ctx, "sample", None)
    device = None if errors else ctx.device
    for i, sample in selected_samples(op, dtype, getattr(ctx, "max_samples", None), index,
                                      requires_grad=requires_grad, errors=errors, device=device):
        real = getattr(sample, "sample_input", sample)
        ctx.describe(sample_index=i, sample=describe_sample(real), repro=_repro(ctx, i))
        try:
            require_pinned(ctx, op, real)
            body(sample)
        except SkipSample as why:
            skipped[str(why)] = skipped.get(str(why), 0) + 1
            unclaimed += isinstance(why, UnclaimedSample)
            continue
        ran += 1
    for key in ("sample_index", "sample", "repro"):  # a pass or a not_applicable names no sample
        ctx.info.pop(key, None)
    ctx.info["samples_run"] = ran
    if skipped:
        ctx.info["samples_skipped"] = skipped
    if ran == 0:
        detail = "; ".join(f"{n} x {why}" for why, n in skipped.items()) or "the op has no samples"
        if unclaimed:  # every sample CPU accepts holds an unclaimed dtype
            raise NotClaimed(f"no sample holds only claimed dtypes: {detail}")
        raise NotApplicable(f"no sample could be checked: {detail}")


def _repro(ctx: CaseContext, index: int) -> str:
    case_id = ctx.case.id if ctx.case is not None else "CASE"
    return repro_command(case_id, ctx.device_type, getattr(ctx, "validation", False), sample=index)


# --- output checks ------------------------------------------------------------------------------

def check_devices(ctx: CaseContext, actual: Any, sample: Any) -> None:
    """Every output tensor must live on the device under test (unless the sample names a device)."""
    if mentions_device(sample):
        return
    for i, t in enumerate(tensors_of(actual)):
        if t.device.type != ctx.device_type:
            fail("output on the wrong device", output=i, got=str(t.device), expected=ctx.device_type)


def check_structure(actual: Any, expected: Any) -> None:
    """Same tree of outputs, tensors with the same shape and dtype (values not compared)."""
    a_leaves, a_spec = pytree.tree_flatten(actual)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    if len(a_leaves) != len(e_leaves):
        fail("output structure differs", actual=str(a_spec), expected=str(e_spec))
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves, strict=True)):
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                fail("expected a tensor output", output=i, got=type(a).__name__)
            if a.shape != e.shape or a.dtype != e.dtype:
                fail("output shape or dtype differs", output=i, actual=f"{list(a.shape)} {a.dtype}",
                     expected=f"{list(e.shape)} {e.dtype}")


def conditioned(ctx: CaseContext, op: Any, sample: Any, *, backward: bool = False) -> float:
    """The absolute tolerance the sample's conditioning demands (0.0 for most ops); recorded."""
    dtype = sample.input.dtype if isinstance(sample.input, torch.Tensor) else torch.float32
    with unobserved():  # oracle work on the sample, not the device's
        floor = conditioned_atol(op.name, sample, dtype, backward=backward)
    if floor:
        ctx.info["conditioned_atol"] = max(floor, ctx.info.get("conditioned_atol", 0.0))
    return floor


def exact_for(op: Any, dtype: torch.dtype | None) -> Exact | None:
    """The op's exactness entry (oracle/exactness.py) for inputs of `dtype`: its forward result
    is compared bit for bit (never its gradient)."""
    return exactness_of(op.name, op.variant_test_name, _name(dtype))


def _name(dtype: torch.dtype | None) -> str | None:
    return str(dtype).removeprefix("torch.") if dtype is not None else None


def check_output(ctx: CaseContext, op: Any, actual: Any, expected: Any, sample: Any, rerun: Callable[[], Any],
                 category: str, truth: Callable[[], Truth] | None = None, exact: Exact | None = None,
                 composite: Callable[[], tuple[Any, list[str]] | None] | None = None,
                 recheck: Callable[[], str | None] | None = None) -> None:
    """Compare by the case's oracle: CPU values (with the sample's conditioning, bit for bit where
    `exact`, and judged by the float64 truth when `truth` computes one and the result is not exact),
    or properties for random/uninitialised outputs. Where CPU's values differ, `composite` gives the
    other answer PyTorch allows this device (oracle/composite.py), if any; `recheck` says why CPU's
    answer is no reference for the sample (recheck.py), asked only where the device disagrees."""
    check_devices(ctx, actual, sample)
    fmt = sample.kwargs.get("memory_format")
    if fmt in STRICT_FORMATS and not mentions_device(sample) and (fmt is torch.contiguous_format
                                                                  or ctx.claims("channels_last")):
        check_memory_format(actual, expected, fmt)  # the layout asked for is semantics (channels_last: if claimed)
    oracle = _oracle(ctx)
    if oracle == "cpu":
        if category == "linalg":
            # Decompositions are unique only up to signs/phases: compare what OpInfo's own
            # output_process_fn_grad keeps (e.g. |U| of an SVD), identical on both sides, applied
            # to a CPU copy of the device's output (its abs is not the op under test)
            with unobserved():
                actual = sample.output_process_fn_grad(on_host(actual))
            expected = sample.output_process_fn_grad(expected)
        dtype = ctx.case.dtype if ctx.case is not None else None

        def compare(reference: Any, judge_truth: bool = True) -> None:
            ctx.assert_close(actual, reference, category=category, atol_floor=conditioned(ctx, op, sample),
                             truth=truth if exact is None and judge_truth else None,
                             allowed=output_alternatives(op.name, sample.input), exact=exact,
                             constant=constant_by_definition(op.name, dtype, variant=op.variant_test_name))

        or_composite(ctx, lambda: compare(expected), lambda other: compare(other, judge_truth=False), composite,
                     recheck)
        return
    check_structure(actual, expected)
    if oracle == "property:random":
        first = _seeded(ctx, rerun)
        second = _seeded(ctx, rerun)
        try:
            assert_matches(second, first, Tolerance(0.0, 0.0))
        except OracleMismatch as exc:
            exc.mismatch.what = "seeded random op not reproducible on the device: " + exc.mismatch.what
            raise


# Formats that fix the result's layout; preserve_format's depends on whether the call copies at all
# (`to` of a tensor already on the target device returns it, strides and all; a copy of a non-dense
# one is contiguous), which differs between a device and CPU for the same sample. So does a sample
# that names a device (`x.to("cpu", memory_format=...)`: a no-op for CPU's reference, which PyTorch
# lets alias an expanded input, a copy from the device).
STRICT_FORMATS = (torch.channels_last, torch.channels_last_3d, torch.contiguous_format)


def check_memory_format(actual: Any, expected: Any, memory_format: Any) -> None:
    """Each output's strides against CPU's, over the dimensions of size > 1 (a size-1 dimension's
    stride is arbitrary), where the call asked for a memory format."""
    for i, (a, e) in enumerate(zip(tensors_of(actual), tensors_of(expected), strict=False)):
        if a.layout != torch.strided or a.shape != e.shape:
            continue
        wide = [d for d in range(a.dim()) if a.shape[d] > 1]
        if [a.stride(d) for d in wide] != [e.stride(d) for d in wide]:
            fail(f"the result's layout is not the one asked for (memory_format={memory_format})", output=i,
                 got=f"strides {list(a.stride())}", expected=f"strides {list(e.stride())} (CPU's)")


def or_composite(ctx: CaseContext, compare: Callable[[], None], compare_with: Callable[[Any], None],
                 composite: Callable[[], tuple[Any, list[str]] | None] | None,
                 recheck: Callable[[], str | None] | None = None) -> None:
    """`compare()` against CPU; where it fails, the device's answer may be that of PyTorch's composite
    kernel for an op the device has none of its own for (`composite()`, oracle/composite.py): it
    passes when it matches that answer (`info.allowed_answer` names the rules); else, where CPU's
    answer is no reference (`recheck()` says why, recheck.py), the sample is dropped (SkipSample), and
    otherwise CPU's mismatch stands."""
    try:
        compare()
    except OracleMismatch as mismatch:
        try:
            _composite_or_raise(ctx, mismatch, compare_with, composite)
        except OracleMismatch:
            with unobserved():
                why = recheck() if recheck is not None else None
            if why is not None:
                raise SkipSample(f"no reference: {why}") from None
            raise


def _composite_or_raise(ctx: CaseContext, mismatch: OracleMismatch, compare_with: Callable[[Any], None],
                        composite: Callable[[], tuple[Any, list[str]] | None] | None) -> None:
    """Pass when the device's answer is PyTorch's composite answer (or_composite), else raise `mismatch`."""
    try:
        with unobserved():
            other = composite() if composite is not None else None
    except Exception:  # noqa: BLE001 - CPU rejects the sample that way: no second answer
        other = None
    if other is None:
        raise mismatch
    try:
        compare_with(other[0])
    except OracleMismatch:
        raise mismatch from None
    ctx.describe(allowed_answer=", ".join(other[1]))


def _seeded(ctx: CaseContext, fn: Callable[[], Any]) -> Any:
    torch.manual_seed(ctx.seed)
    return fn()


# --- kinds --------------------------------------------------------------------------------------

_UNKNOWN = object()  # check_call's `expected` not given: it computes CPU's result


@dataclasses.dataclass(frozen=True)
class CallCheck:
    """How a kind checks a call of an op, the same for each sample of its case (forward, method,
    noncontiguous, special_values, exploration's forward): made once, applied by check_call."""

    op: Any
    fn: Callable[..., Any]  # what is called: the op, its method, ...
    category: str  # the tolerance category
    exact: Exact | None = None  # results compared bit for bit (oracle/exactness.py)
    transform: Callable[[Any], Any] | None = None  # rewrites the device copy (non-contiguous layouts)
    prepare: Callable[[Any], Any] | None = None  # rewrites the CPU sample first (special values)
    truth_dtype: torch.dtype | None = None  # forward: also judged by the float64 truth in this dtype
    retained: Retained | None = None  # keeps the device's results for the case's last check


def check_call(ctx: CaseContext, how: CallCheck, sample: Any, expected: Any = _UNKNOWN) -> None:
    """One sample, checked as `how` says: the same call on the device and on CPU, compared: the
    result, then the arguments after the call (effects.py). `expected`: CPU's result when the caller
    already has it (its arguments are then not compared)."""
    op, fn, category, exact = how.op, how.fn, how.category, how.exact
    transform, prepare, truth_dtype, retained = how.transform, how.prepare, how.truth_dtype, how.retained
    if prepare is not None:
        sample = prepare(sample)
    require_defined_writes(op, sample)
    cpu_after = None
    if expected is _UNKNOWN:
        # Describe the layout the device gets (the transformed CPU copy), not the plain sample.
        seen = (lambda cpu: ctx.describe(sample=describe_sample(cpu))) if transform is not None else None
        cpu_after, expected = reference_call(fn, sample, transform, seen)
    require_claimed(ctx, (sample.input, sample.args, sample.kwargs), expected)

    def device_call() -> tuple[Any, Any]:
        dev = copy_sample(sample, ctx.device)
        dev = transform(dev) if transform else dev
        return dev, call(fn, dev)

    with claimed_if_failing(ctx, lambda: reference(fn, sample, transform)):
        dev_after, actual = device_call()
        truth = (lambda: truth_of(op, fn, sample, truth_dtype, category)) if truth_dtype is not None else None
        check_output(ctx, op, actual, expected, sample, lambda: device_call()[1], category, truth, exact,
                     lambda: composite_answer(lambda: reference(fn, sample, transform), ctx.device_type),
                     lambda: recheck.unstable(
                         expected, lambda contiguous: reference_call(fn, sample, recheck.contiguous if contiguous
                                                                     else transform),
                         lambda dt: ctx.tolerance(category, dt), transform is not None or recheck.strided(sample)))
    if cpu_after is not None and _oracle(ctx) == "cpu":
        with unobserved():
            floor = running_stats_atol(op.name, sample)
            check_arguments(dev_after, cpu_after, lambda dt: _floored(ctx.tolerance(category, dt), floor))
    if retained is not None and _oracle(ctx) == "cpu":
        repeat = None
        if retained.wants_repeat and isinstance(sample.input, torch.Tensor):
            other = recast(sample, sample.input.dtype)
            repeat = Repeat(lambda: device_call()[1],
                            (lambda: call(fn, copy_sample(other, ctx.device))) if other is not None else None,
                            lambda dt: _floored(ctx.tolerance(category, dt), conditioned(ctx, op, sample)),
                            bitwise=ctx.claims("deterministic"))
        retained.keep({k: ctx.info.get(k) for k in ("sample_index", "sample") if k in ctx.info}, actual, repeat)


def _floored(tol: Tolerance, atol: float) -> Tolerance:
    return dataclasses.replace(tol, atol=atol) if atol > tol.atol else tol


def _oracle(ctx: CaseContext) -> str:
    return ctx.case.oracle if ctx.case is not None else "cpu"


def _functional(ctx: CaseContext, op: Any, dtype: torch.dtype, fn: Callable[..., Any],
                transform: Callable[[Any], Any] | None = None, prepare: Callable[[Any], Any] | None = None,
                with_truth: bool = False) -> None:
    """forward / method / noncontiguous / special_values over the selected samples (check_call);
    `with_truth` (forward) also judges by the float64 truth. Samples are strengthened where they
    could not tell a wrong result (strengthen.py)."""
    category, exact = tolerance_category(op), exact_for(op, dtype)
    strengthen = strengthener(op.name, op.variant_test_name)
    if strengthen is not None:
        prepare = strengthen if prepare is None else (lambda s, p=prepare: p(strengthen(s)))
    retained = Retained(repeats=with_truth)  # the forward kind also repeats its first sample
    how = CallCheck(op, fn, category, exact, transform, prepare, dtype if with_truth else None, retained)
    each_sample(ctx, op, dtype, lambda sample: check_call(ctx, how, sample))
    with unobserved():
        retained.check(ctx.describe)
    retained.repeat(ctx.describe)


def _noncontiguous(dev_sample: Any) -> Any:
    out = dev_sample.noncontiguous()
    if not any(t.layout == torch.strided and not t.is_contiguous() for t in tensors_of((out.input, out.args, out.kwargs))):
        raise SkipSample("no tensor can be made non-contiguous")
    return out


def _special(sample: Any) -> Any:
    new, changed = inject_special_values(sample)
    if not changed:
        raise SkipSample("no floating tensor to inject NaN/Inf into")
    return new


def run_special(ctx: CaseContext, op: Any, dtype: torch.dtype) -> None:
    """special_values: each sample with NaN/Inf injected every 7 elements (a check of their
    propagation), and while every comparison so far was weak (the injected NaN reached every output)
    also the first copy with one special value confined to one element whose reference discriminates
    (confined.py); the copy is named in `info.special_confined` while it runs."""
    category, exact = tolerance_category(op), exact_for(op, dtype)
    strengthen = strengthener(op.name, op.variant_test_name) or (lambda s: s)
    constant = constant_by_definition(op.name, _name(dtype), variant=op.variant_test_name)

    injected = CallCheck(op, op.op, category, exact, prepare=_special)

    def body(sample: Any) -> None:
        base = strengthen(sample)
        check_call(ctx, injected, base)
        if ctx.verdict.discriminated or constant:
            return
        found = _discriminating(ctx, op, base, category)
        if found is not None:
            label, variant, expected = found
            ctx.describe(special_confined=label)
            check_call(ctx, dataclasses.replace(injected, prepare=None), variant, expected)
            ctx.info.pop("special_confined", None)

    each_sample(ctx, op, dtype, body)


def _discriminating(ctx: CaseContext, op: Any, sample: Any, category: str) -> tuple[dict[str, Any], Any, Any] | None:
    """The first confined copy of `sample` (confined.py) whose CPU reference is not weak, with that
    reference, else None."""
    for label, variant in candidates(sample, op.name):
        try:
            expected = reference(op.op, variant)
        except SkipSample:
            continue
        with unobserved():
            judged, reason = weakness(expected, lambda dt: ctx.tolerance(category, dt))
        if judged and reason is None:
            return label, variant, expected
    return None


def check_inplace(ctx: CaseContext, op: Any, sample: Any, category: str, exact: Exact | None = None) -> None:
    """One sample of the in-place variant: the device's mutated input against CPU's."""
    fn = op.inplace_variant
    if sample.broadcasts_input or not isinstance(sample.input, torch.Tensor):
        raise SkipSample("input is broadcast or not a tensor")
    if sample.input.layout == torch.strided and torch._debug_has_internal_overlap(sample.input) == 1:
        # PyTorch refuses such a `self` for its TensorIterator ops; where an op does not check, which
        # of the writes to one element lands last is undefined: no answer is CPU's to demand
        raise SkipSample("input overlaps itself (stride 0): the order of an in-place op's writes is undefined")
    require_defined_writes(op, sample)

    def cpu_call(on: Any) -> Any:
        cpu = copy_sample(on, "cpu")
        call(fn, cpu)
        return cpu.input

    with unobserved(), cpu_accepts():
        want = cpu_call(sample)
    require_claimed(ctx, (sample.input, sample.args, sample.kwargs), want)
    with claimed_if_failing(ctx, lambda: cpu_call(sample)):
        dev = copy_sample(sample, ctx.device)
        result = call(fn, dev)
        if result is not dev.input:
            fail("in-place variant did not return self", got=type(result).__name__)
        _written_or_composite(ctx, op, sample, dev.input, want, category, exact, cpu_call)


def _written_or_composite(ctx: CaseContext, op: Any, sample: Any, got: Any, want: Any, category: str,
                          exact: Exact | None, cpu_call: Callable[[Any], Any]) -> None:
    """_compare_written against CPU's write, or against PyTorch's composite answer where the device runs
    the composite (`cpu_call(sample)` recomputed that way, oracle/composite.py): an answer accepted on
    the functional path is accepted on the in-place and out= paths too. Where the device disagrees
    with both, CPU's write is rechecked (recheck.py; `cpu_call` of a contiguous copy too)."""
    or_composite(ctx, lambda: _compare_written(ctx, op, sample, got, want, category, exact),
                 lambda other: _compare_written(ctx, op, sample, got, other, category, exact),
                 lambda: composite_answer(lambda: cpu_call(sample), ctx.device_type),
                 lambda: recheck.unstable(want, lambda contiguous: (sample, cpu_call(
                     recheck.contiguous(sample) if contiguous else sample)), lambda dt: ctx.tolerance(category, dt),
                     recheck.strided(sample)))


def _compare_written(ctx: CaseContext, op: Any, sample: Any, got: Any, want: Any, category: str,
                     exact: Exact | None) -> None:
    """What an in-place or out= call wrote on the device against CPU's: by structure for property
    oracles, else by value (bit for bit where `exact`)."""
    if ctx.case is not None and ctx.case.oracle != "cpu":
        check_structure(got, want)
        return
    ctx.assert_close(got, want, category=category, atol_floor=conditioned(ctx, op, sample), exact=exact,
                     constant=constant_by_definition(op.name, ctx.case.dtype if ctx.case else None,
                                                     variant=op.variant_test_name))


def _each_strengthened(ctx: CaseContext, op: Any, dtype: torch.dtype,
                       check: Callable[[CaseContext, Any, Any, str, Exact | None], None]) -> None:
    """`check` over the selected samples, strengthened where they could not tell a wrong result."""
    category, exact = tolerance_category(op), exact_for(op, dtype)
    strengthen = strengthener(op.name, op.variant_test_name) or (lambda s: s)
    each_sample(ctx, op, dtype, lambda sample: check(ctx, op, strengthen(sample), category, exact))


def run_inplace(ctx: CaseContext, op: Any, dtype: torch.dtype) -> None:
    _each_strengthened(ctx, op, dtype, check_inplace)


def _zeros_like_tree(obj: Any, device: torch.device | str) -> Any:
    """Zero-filled `out=` tensors: some kernels leave elements unwritten (fft.ihfft2 out=), and
    uninitialised memory must never be compared."""
    if isinstance(obj, torch.Tensor):
        return torch.zeros(obj.shape, dtype=obj.dtype, device=device)
    if isinstance(obj, (tuple, list)) and obj and all(isinstance(t, torch.Tensor) for t in obj):
        return tuple(torch.zeros(t.shape, dtype=t.dtype, device=device) for t in obj)
    raise SkipSample("the result is not a tensor or a sequence of tensors")


def check_out(ctx: CaseContext, op: Any, sample: Any, category: str, exact: Exact | None = None,
              layouts: bool = False) -> None:
    """One sample of the out= variant: zero-filled out tensors on the device against CPU's; with
    `layouts` (the out kind), also into each other destination once (out_layouts.py)."""
    require_defined_writes(op, sample)
    expected = reference(op.op, sample)
    require_claimed(ctx, (sample.input, sample.args, sample.kwargs), expected)
    with unobserved():
        cpu_out = _zeros_like_tree(expected, "cpu")
    returns_out = out_layouts.is_out(reference(op.op, sample, out=cpu_out), cpu_out)

    def cpu_call(on: Any) -> Any:
        into = _zeros_like_tree(expected, "cpu")
        reference(op.op, on, out=into)
        return into

    with claimed_if_failing(ctx, lambda: call(op.op, copy_sample(sample, "cpu"), out=_zeros_like_tree(expected, "cpu"))):
        dev = copy_sample(sample, ctx.device)
        out = _zeros_like_tree(expected, ctx.device)
        result = call(op.op, dev, out=out)
        if returns_out and not out_layouts.is_out(result, out):  # (some out= overloads return nothing)
            fail("out= variant did not return the out tensor(s)", got=type(result).__name__)
        _written_or_composite(ctx, op, sample, out, cpu_out, category, exact, cpu_call)
        if layouts:  # each other destination once, on the first sample where it can be made
            out_layouts.check(
                expected, ctx.device, returns_out, ctx.info,
                cpu=lambda o: reference(op.op, sample, out=o), zeros=lambda: _zeros_like_tree(expected, "cpu"),
                device_call=lambda o: call(op.op, copy_sample(sample, ctx.device), out=o),
                written=lambda got, want: _compare_written(ctx, op, sample, got, want, category, exact))


def run_out(ctx: CaseContext, op: Any, dtype: torch.dtype) -> None:
    _each_strengthened(ctx, op, dtype, lambda *a: check_out(*a, layouts=True))


def run_errors(ctx: CaseContext, op: Any, dtype: torch.dtype) -> None:
    """The device raises what CPU raises: CPU's exception type, or the type (and message) OpInfo's
    error inputs expect off the CPU where they expect another there (oracle/allowed.py)."""
    off_cpu = device_class_errors(op)

    def body(error_input: Any) -> None:
        sample = error_input.sample_input
        try:
            with unobserved():
                call(op.op, copy_sample(sample, "cpu"))
        except Exception as exc:  # noqa: BLE001
            cpu_exc = exc
        else:
            raise SkipSample("CPU does not raise")
        require_claimed(ctx, (sample.input, sample.args, sample.kwargs))  # masked_fill's complex value
        try:
            # the copy too: a device refusing to hold the bad input (amax's 65 dimensions) raises for it
            call(op.op, copy_sample(sample, ctx.device))
        except Exception as exc:  # noqa: BLE001 - the point is comparing exception types
            rule = accepted_exception(exc, cpu_exc, off_cpu.get(ctx.info.get("sample_index", -1)))
            if rule:
                ctx.note_allowed(rule)
            if rule is None:  # where CPU got to its error through an unclaimed dtype, the device need not
                with claimed_if_failing(ctx, lambda: call(op.op, copy_sample(sample, "cpu")), raised=True):  # hfft of 0-dim
                    fail("raised a different exception type than CPU", got=f"{type(exc).__name__}: {_line(exc)}",
                         expected=f"{type(cpu_exc).__name__}: {_line(cpu_exc)}")
            return
        fail("did not raise", expected=f"{type(cpu_exc).__name__}: {_line(cpu_exc)}")

    each_sample(ctx, op, None, body, errors=True)


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def _weights(o: torch.Tensor) -> torch.Tensor:
    """1, 1.125, ..., 1.75 repeating (exact in every floating dtype), the gradient of a loss weighting
    each output element differently, so the gradient of a copy or a view is not all ones and that of a
    softmax not all zeros (a reference that proves nothing, oracle/weak.py). For a complex output the
    loss weighs its real and imaginary parts alike: the gradient is w + wi."""
    with unobserved():  # the harness's constant, made on CPU and moved: not the device's work
        w = (1 + (torch.arange(o.numel()) % 7).to(torch.float32) / 8).reshape(o.shape).to(o.real.dtype)
        return (torch.complex(w, w) if o.is_complex() else w).to(o.device)


def on_host(out: Any) -> Any:
    """`out` with every tensor as a CPU copy (`.cpu()`: differentiable, a no-op for CPU tensors)."""
    return pytree.tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, out)


def gradients(op: Any, sample: Any, out: Any) -> list[torch.Tensor | None]:
    """Gradients of the weighted sum of the differentiable outputs with respect to the inputs needing
    grad. The weights go in as the outputs' gradients instead of through a loss built on the device:
    a device's broken sum or multiply would otherwise fail every op's backward case, named as that op
    (issue 30 item 3); the result is the same bit for bit."""
    inputs = [t for t in tensors_of((sample.input, sample.args, sample.kwargs)) if t.requires_grad]
    if processes_output(sample):
        outs, weights = _processed_on_host(sample, out)
    else:
        outs = [t for t in tensors_of(out) if t.requires_grad]
        weights = [_weights(o) for o in outs]
    if not inputs or not outs:
        raise SkipSample("no differentiable input or output")
    return list(torch.autograd.grad(outs, inputs, grad_outputs=weights, allow_unused=True))


def _processed_on_host(sample: Any, out: Any) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """OpInfo's helper (an SVD's sign-fixing abs) applied on a CPU copy of the outputs, its gradient
    taken there and handed to the device's outputs as theirs (the chain rule in two steps): the
    device's abs is not the op under test, and a differentiable copy across devices needs the
    device's streams in older PyTorch (2.7: "doesn't support acquiring a default stream")."""
    leaves, spec = pytree.tree_flatten(out)
    differentiable = [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]
    copies = {id(t): t.detach().cpu().requires_grad_() for t in differentiable}
    host = pytree.tree_unflatten([copies.get(id(t), t.detach().cpu()) if isinstance(t, torch.Tensor) else t
                                  for t in leaves], spec)
    processed = [t for t in tensors_of(sample.output_process_fn_grad(host)) if t.requires_grad]
    if not processed or not differentiable:
        return [], []
    grads = torch.autograd.grad(processed, [copies[id(t)] for t in differentiable],
                                grad_outputs=[_weights(o) for o in processed], allow_unused=True)
    used = [(t, g) for t, g in zip(differentiable, grads, strict=True) if g is not None]
    return [t for t, _ in used], [g.to(t.device) for t, g in used]


def check_backward(ctx: CaseContext, op: Any, sample: Any) -> None:
    """One sample of backward: the gradients of the summed outputs on the device against CPU's."""
    with unobserved():
        cpu = copy_sample(sample, "cpu")
    with unobserved(), cpu_accepts():
        forward = call(op.op, cpu)
        expected = gradients(op, cpu, forward)
    # the forward's outputs are the device's too (eig of float32: complex64), as check_call's are
    require_claimed(ctx, (sample.input, sample.args, sample.kwargs), forward, expected)
    def cpu_again() -> Any:
        fresh = copy_sample(sample, "cpu")
        return gradients(op, fresh, call(op.op, fresh))

    with claimed_if_failing(ctx, cpu_again):
        dev = copy_sample(sample, ctx.device)
        actual = gradients(op, dev, call(op.op, dev))
    check_devices(ctx, actual, sample)
    if ctx.case is not None and ctx.case.oracle != "cpu":
        check_structure(actual, expected)
        return
    floor = conditioned(ctx, op, sample, backward=True)
    constant = constant_by_definition(op.name, ctx.case.dtype if ctx.case else None, backward=True,
                                      variant=op.variant_test_name)

    def compare(reference: Any, truth: Callable[[], Truth] | None = None) -> None:
        ctx.assert_close(actual, reference, category="backward", truth=truth, atol_floor=floor, constant=constant)

    def compare_or_truth(reference: Any) -> None:
        # the truth asked on failures only: a gradient no farther from the float64 truth than CPU's
        # passes, as the forward kind's results do (var's gradient at +-FLT_MAX: CPU's mean absorbed
        # -1.45, 0 where the truth and pytorch_ocl say 0.032)
        try:
            compare(reference)
        except OracleMismatch:
            compare(reference, lambda: gradient_truth(op, sample))

    def composite() -> tuple[Any, list[str]] | None:  # the saved statistics of a composite forward flow back
        fresh = copy_sample(sample, "cpu")
        return composite_answer(lambda: gradients(op, fresh, call(op.op, fresh)), ctx.device_type)

    or_composite(ctx, lambda: compare_or_truth(expected), compare, composite)


def gradient_truth(op: Any, sample: Any) -> Truth:
    """The gradients (`gradients`) of the sample widened to float64 on CPU: the backward kind's truth."""
    dtype = sample.input.dtype if isinstance(sample.input, torch.Tensor) else torch.float32

    def grads(inp: Any, *args: Any, **kwargs: Any) -> Any:
        wide = rebuilt(sample, inp, args, kwargs)
        return gradients(op, wide, call(op.op, wide))

    return truth_of(op, grads, sample, dtype, "backward", keep_grad=True)


def run_backward(ctx: CaseContext, op: Any, dtype: torch.dtype) -> None:
    each_sample(ctx, op, dtype, lambda sample: check_backward(ctx, op, sample), requires_grad=True)


def run_forward(ctx: CaseContext, op: Any, dtype: torch.dtype) -> None:
    _functional(ctx, op, dtype, op.op, with_truth=True)


def run_method(ctx: CaseContext, op: Any, dtype: torch.dtype) -> None:
    _functional(ctx, op, dtype, op.method_variant)


def run_noncontiguous(ctx: CaseContext, op: Any, dtype: torch.dtype) -> None:
    _functional(ctx, op, dtype, op.op, transform=_noncontiguous)


def run(ctx: CaseContext, *, op: str, variant: str = "", kind: str, dtype: torch.dtype) -> None:
    """The runner of every opinfo case whose kind (cases/opinfo/kinds.py) names no runner of its own."""
    module, _, name = runs(kind).partition(":")
    entry = getattr(importlib.import_module(module), name)
    info = lookup(op, variant)
    ctx.describe(op=op, variant=variant, dtype=str(dtype).removeprefix("torch."), kind=kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        entry(ctx, info, dtype)
