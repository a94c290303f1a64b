"""The runner of `opinfo/<op>/<dtype>/explore` cases: replay the corpus, explore, shrink, save.

1. Replay: the entries `--corpus DIR` holds for this case id run first, so a fixed bug stays
   fixed and a flaky find is confirmed (a replay that fails fails the case, marked `replayed`).
2. Explore: samples 0..depth-1 (generate.py), each through every variant the op has (forward,
   in-place, out=, backward when autograd is claimed), compared with CPU by the OpInfo suite's
   own checks (cases/opinfo/run.py). An input CPU rejects is dropped and counted, never a failure.
   While no comparison could tell a right result from a wrong one, a few more samples (WEAK_EXTRA).
3. On the first failure: shrink (shrink.py) within the call bound, save the shrunk input with
   the original (corpus.py) in the run folder and in DIR, put both in the record's
   `info["explore"]`, and fail with the shrunk input's own mismatch. The failure hands the find
   (find.py) to the case's rerun without the dispatch observer (engine/runner.py), which confirms
   it on the shrunk input (`found`) instead of exploring again.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from torchcts.cases.context import CaseContext
from torchcts.cases.explore import codec, corpus, host_rule, placement
from torchcts.cases.explore.budget import default_depth, samples_for
from torchcts.cases.explore.find import Find
from torchcts.cases.explore.generate import Explored, Plan, carries, plan, requiring_grad
from torchcts.cases.explore.shrink import shrink
from torchcts.cases.observe import hand_to_rerun, unobserved
from torchcts.cases.opinfo.kinds import KINDS, Slot
from torchcts.cases.opinfo.recheck import writes_outside
from torchcts.cases.opinfo.run import (
    CallCheck,
    SkipSample,
    UnclaimedSample,
    asks_pinned_host_copy,
    check_backward,
    check_call,
    check_inplace,
    check_out,
    exact_for,
    reference,
)
from torchcts.cases.opinfo.samples import HostArg, describe_sample, leaves_of, lookup, selected_samples, tensors_of
from torchcts.cases.repro_builders import repro_command
from torchcts.model.case import NotApplicable, NotClaimed
from torchcts.oracle.categories import tolerance_category
from torchcts.oracle.compare import OracleMismatch, finite_only
from torchcts.oracle.opfacts import FACTS

Check = Callable[[Any], None]



def variants(ctx: CaseContext, op: Any, dtype: torch.dtype) -> dict[str, Check]:
    """The op's variants as per-sample checks: forward, inplace, out, backward (where it has them)."""
    category, exact = tolerance_category(op), exact_for(op, dtype)  # exact results bit for bit, -0.0 too
    # forward judged by the float64 truth too (floating dtypes), as the forward kind is: explored inputs
    # within any atol of CPU's answer can still be far from the truth (tiny values, magnitude.py)
    truth = dtype if dtype.is_floating_point or dtype.is_complex else None
    checks: dict[str, Check] = {
        "forward": lambda s, how=CallCheck(op, op.op, category, exact, truth_dtype=truth): check_call(ctx, how, s),
        "inplace": lambda s: check_inplace(ctx, op, s, category, exact),
        "out": lambda s: check_out(ctx, op, s, category, exact),
        "backward": lambda s: check_backward(ctx, op, requiring_grad(s)),
    }
    # the kinds a case of this op and dtype would run, claimed (cases/opinfo/kinds.py: `explored`)
    name = str(dtype).removeprefix("torch.")
    backward = frozenset(str(d).removeprefix("torch.") for d in op.supported_backward_dtypes("cpu"))
    slot = Slot(op, name, backward, errors_in=None, agree=False, explore=True, explorable_dtype=True)
    found = {kind.name: checks[kind.name] for kind in KINDS.values() if kind.explored and kind.applies(slot)
             and kind.unsupported(slot) is None and not kind.unclaimed(ctx.claims)}
    # never explored where CPU itself aborts on explored inputs (op facts: cpu_unsafe_variants)
    for name in FACTS.get("cpu_unsafe_variants", op.name) or ():
        found.pop(name, None)
    if category != "elementwise":
        found = {name: _within_range(check) for name, check in found.items()}
    if ctx.claims("ieee754"):
        return found
    return {name: _within_ieee754(op, check, gradient=name == "backward") for name, check in found.items()}


class BeyondRange(SkipSample):
    """The device's answer overflows to an infinity (or a NaN made of one) on inputs whose squares
    overflow the dtype, where CPU's answer is finite: CPU's reductions accumulate float32 in float64,
    a float32 accumulation (CUDA's too) cannot; the rest of the answer is still compared."""


def _within_range(check: Check) -> Check:
    """`check`, where a failure on a sample holding a magnitude above sqrt(max) of its dtype (explored
    extremes: std of +-FLT_MAX, CPU 1.2e38 where a float32 Welford gives inf) is compared again
    without the elements the device answers with a NaN or an infinity: a finite element that differs
    still fails; else the sample is dropped (BeyondRange). Not for pointwise ops (`variants`): exp or
    hypot must not overflow where the answer is finite, whatever their inputs."""
    def checked(sample: Any) -> None:
        try:
            check(sample)
        except (SkipSample, NotApplicable):
            raise
        except OracleMismatch:
            if not _squares_overflow(sample):
                raise
            with finite_only(device_too=True):
                check(sample)  # a finite element that differs fails here
            raise BeyondRange("the device overflows where CPU accumulates wider") from None
    return checked


def _squares_overflow(sample: Any) -> bool:
    """Whether a finite input's square overflows its dtype (a NaN or an infinity among the inputs is
    special_values' question, never this one's: logsumexp of all -inf must still be -inf)."""
    for t in _tensors(sample):
        if t.is_floating_point() and t.layout == torch.strided and t.numel():
            finite = t.detach().abs()[torch.isfinite(t.detach())]
            if finite.numel() and float(finite.max()) > math.sqrt(float(torch.finfo(t.dtype).max)):
                return True
    return False


class NotIeee754(SkipSample):
    """CPU's answer to this explored sample is a NaN or an infinity made from finite inputs (0/0 with a
    zero spacing): IEEE 754 semantics, which the manifest does not claim."""


def _within_ieee754(op: Any, check: Check, gradient: bool = False) -> Check:
    """`check`, where a failure on a sample whose CPU result holds a NaN or an infinity is dropped
    (NotIeee754), as an input holding one is (`_refused`), unless the device also differs where both
    answers are finite: that error is its own (asked on failures only). A `gradient` flows back
    through that overflowed forward, so even its finite elements are what IEEE arithmetic makes of
    the infinities (std's x / inf = 0 on CPU, NaN on pytorch_ocl): the failure is dropped whole.
    Only a difference of values is excused: a device that raises (OpenReg's missing float64 kernels,
    NotImplementedError) raises on finite inputs whatever CPU's answer holds."""
    def checked(sample: Any) -> None:
        try:
            check(sample)
        except (SkipSample, NotApplicable):
            raise
        except OracleMismatch:
            if not _nonfinite_result(op, sample):
                raise
            if not gradient:
                with finite_only():
                    check(sample)  # a finite element that differs fails here, measured without the others
            raise NotIeee754("CPU's answer holds a NaN or an infinity, and ieee754 is not claimed") from None
    return checked


def _nonfinite_result(op: Any, sample: Any) -> bool:
    try:
        result = reference(op.op, sample)
    except SkipSample:
        return False
    with unobserved():
        return any((t.is_floating_point() or t.is_complex()) and t.layout == torch.strided and t.numel()
                   and not bool(torch.isfinite(t).all()) for t in tensors_of(result))


def outcome(check: Check, sample: Any, detailed: bool = False) -> str | None:
    """None: agrees with CPU; "skip": CPU rejects it ("unclaimed": it holds a tensor of a dtype the
    manifest does not claim); else the failure's kind (mismatch, or the exception type the device raised).
    `detailed`: a mismatch says what differs ("mismatch: values differ"), as the shrinker must keep it."""
    try:
        check(sample)
    except UnclaimedSample:
        return "unclaimed"
    except SkipSample:
        return "skip"
    except OracleMismatch as exc:
        return f"mismatch: {exc.mismatch.what}" if detailed else "mismatch"
    except NotApplicable:
        return "skip"
    except Exception as exc:  # noqa: BLE001 - any device exception is a failure kind of its own
        return type(exc).__name__
    return None


def run(ctx: CaseContext, *, op: str, variant: str = "", kind: str = "explore", dtype: torch.dtype,
        found: Find | None = None) -> None:
    """The runner of every explore case (cases/opinfo/build.py). `found`: what this case's failing run
    found, handed by its failure to the rerun without the dispatch observer (engine/runner.py)."""
    info = lookup(op, variant)
    ctx.describe(op=op, variant=variant, dtype=str(dtype).removeprefix("torch."), kind=kind)
    level = ctx.case.level if ctx.case is not None else 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run(ctx, info, dtype, level, found)


def _run(ctx: CaseContext, op: Any, dtype: torch.dtype, level: int, found: Find | None) -> None:
    case_id = ctx.case.id if ctx.case is not None else f"opinfo/{op.name}/{dtype}/explore"
    checks = variants(ctx, op, dtype)
    stats = {"samples": 0, "checks": 0, "dropped": 0, "replayed": 0}
    ctx.info["explored"] = stats
    if found is not None:
        _confirm(ctx, found, checks)
    if ctx.corpus is not None:
        _replay(ctx, op, case_id, checks, stats)
    depth = ctx.explore if ctx.explore is not None else default_depth(level)
    if depth == 0 and ctx.sample is None:
        if stats["replayed"]:
            return
        raise NotApplicable("exploration is off (--explore 0)")
    made_from = plan(op, selected_samples(op, dtype, ctx.max_samples, None, device=ctx.device), dtype)
    if made_from is None:
        raise NotApplicable("the op has no sample to explore from")
    budget = samples_for(depth, len(made_from.points) + 1)
    for i in [ctx.sample] if ctx.sample is not None else _indices(ctx, budget):
        made = made_from.sample(case_id, i)
        ctx.describe(sample_index=i, sample=describe_sample(made.sample), recipe=made.recipe(),
                     repro=repro_command(case_id, ctx.device_type, ctx.validation, sample=i))
        stats["samples"] += 1
        if _refused(ctx, op, made.sample, made.placed, stats, len(checks)):
            continue
        for name, check in checks.items():
            kind = outcome(check, made.sample)
            if kind in ("skip", "unclaimed"):
                stats["dropped"] += 1
                stats["unclaimed"] = stats.get("unclaimed", 0) + (kind == "unclaimed")
                continue
            stats["checks"] += 1
            if kind is not None and not _fail(ctx, case_id, name, check, made, kind, made_from, op.op):
                stats["checks"] -= 1  # a second look found no reference (recheck.py): no verdict on it
                stats["dropped"] += 1
    for key in ("sample_index", "sample", "recipe", "repro"):  # a pass names no sample
        ctx.info.pop(key, None)
    if stats["checks"] == 0 and not stats["replayed"]:
        if stats.get("unclaimed"):  # every input CPU accepts holds an unclaimed dtype
            raise NotClaimed(f"every explored input CPU accepts holds a tensor of an unclaimed dtype "
                             f"({stats['unclaimed']} of {stats['dropped']} dropped)")
        raise NotApplicable(f"CPU rejected every explored input ({stats['dropped']} dropped)")


# While every comparison so far was weak (an empty, all-NaN or constant reference: oracle/weak.py),
# exploration goes on past its budget, up to WEAK_EXTRA x the budget more samples, until one
# comparison can tell a right result from a wrong one: size-0 switch points and NaN-heavy value
# classes alone prove nothing.
WEAK_EXTRA = 2


def _indices(ctx: CaseContext, budget: int) -> Iterator[int]:
    yield from range(budget)
    for i in range(budget, budget * (1 + WEAK_EXTRA)):
        if ctx.verdict.discriminated:
            return
        ctx.info["explored"]["past_budget"] = i - budget + 1
        yield i


def _refused(ctx: CaseContext, op: Any, sample: Any, recipe: str | None, stats: dict[str, int], checks: int) -> bool:
    """A sample outside what the device must do, dropped like an input CPU rejects and counted: its host
    operand (placement.py) refused by PyTorch's own device rule (`host_refused`, host_rule.py), or a
    NaN or an infinity among its inputs where the manifest does not claim `ieee754` (`not_ieee754`: the
    special_values kind needs that claim too), or a non-blocking copy to the host where it does not claim
    `pinned_memory` (`pinned_memory`, op facts `pins_on_host`)."""
    if not ctx.claims("ieee754") and _nonfinite(sample):
        key = "not_ieee754"
    elif not ctx.claims("pinned_memory") and asks_pinned_host_copy(op, sample, ctx.device):
        key = "pinned_memory"
    elif placement.moved(recipe) and host_rule.refusal(op.op, sample) is not None:
        key = "host_refused"
    else:
        return False
    stats["dropped"] += checks
    stats[key] = stats.get(key, 0) + 1
    return True


def _nonfinite(sample: Any) -> bool:
    return any((t.is_floating_point() or t.is_complex()) and t.layout == torch.strided and t.numel()
               and not bool(torch.isfinite(t).all()) for t in _tensors(sample))


def _tensors(sample: Any) -> list[torch.Tensor]:
    """The sample's tensors, a placed host operand's (HostArg) included."""
    leaves = leaves_of((sample.input, sample.args, sample.kwargs))
    return [x.value if isinstance(x, HostArg) else x for x in leaves if isinstance(x, (torch.Tensor, HostArg))]


def _replay(ctx: CaseContext, op: Any, case_id: str, checks: dict[str, Check], stats: dict[str, int]) -> None:
    assert ctx.corpus is not None
    limit = ctx.manifest.resource_limits.get("max_tensor_mb", corpus.DEFAULT_MAX_TENSOR_MB)
    entries, bad = corpus.load(ctx.corpus, case_id, limit)
    if bad:
        stats["corpus_unreadable"] = bad
    for entry in entries:
        check = checks.get(entry.variant)
        try:
            sample = codec.decode_sample(entry.sample)
        except (codec.CodecError, RuntimeError, TypeError, OverflowError):
            stats["corpus_unreadable"] = stats.get("corpus_unreadable", 0) + 1
            continue
        if check is None or _refused(ctx, op, sample, entry.recipe, stats, 1):
            continue
        ctx.describe(sample=describe_sample(sample), recipe=f"corpus entry {entry.name}: {entry.recipe}")
        kind = outcome(check, sample)
        stats["replayed"] += 1
        if kind not in (None, "skip", "unclaimed"):
            ctx.info["explore"] = {"variant": entry.variant, "replayed": entry.name, "recipe": entry.recipe,
                                   "shrunk": entry.sample, "original": entry.original, "found_as": entry.message}
            ctx.info["original_sample"] = _describe_encoded(entry.original)
            again(check, sample)  # raises the failure itself, with its evidence
    for key in ("sample", "recipe"):
        ctx.info.pop(key, None)


def _confirm(ctx: CaseContext, found: Find, checks: dict[str, Check]) -> None:
    """The case's own find, again: it fails with the record of its finding."""
    entry, record = found.entry, found.record
    ctx.info["explored"].update(found.explored)  # what the finding run explored, not this confirmation's zero
    check = checks.get(entry.variant)
    if check is None:
        return
    sample = codec.decode_sample(entry.sample)
    original = _describe_encoded(entry.original) or record.get("original_text")
    ctx.info.update(explore=record, sample=describe_sample(sample), sample_index=record.get("index"),
                    original_sample=original)
    kind = outcome(check, sample)
    if kind not in (None, "skip", "unclaimed"):
        again(check, sample)
    for key in ("explore", "sample", "sample_index", "original_sample"):
        ctx.info.pop(key, None)


def _describe_encoded(data: dict[str, Any] | None) -> str | None:
    try:
        return describe_sample(codec.decode_sample(data)) if data is not None else None
    except (codec.CodecError, RuntimeError, TypeError, OverflowError):
        return None


def again(check: Check, sample: Any) -> None:
    """Check a failing sample again to raise its failure with its evidence. A second look that finds
    no reference (SkipSample: the CPU reference differs from itself, recheck.py) raises nothing:
    it is no verdict, never the backend's error."""
    with contextlib.suppress(SkipSample):
        check(sample)


def confirmed(check: Check, shrunk: Any, original: Any, flaky: str) -> BaseException | None:
    """The failure to report: the shrunk sample's, else the original's (a shrink that found a flaky
    sample), else AssertionError(flaky) when both pass. None when neither fails and a check found
    no reference (SkipSample): a CPU reference that differs from itself on a second call (recheck.py:
    uninitialised memory, a zero batch's native_group_norm on torch 2.14+) is no verdict at all, and
    was once recorded as the backend's error."""
    skipped = False
    for sample in (shrunk, original):
        try:
            check(sample)
        except SkipSample:
            skipped = True
        except Exception as exc:  # noqa: BLE001 - the failure itself, raised by the caller
            return exc
    return None if skipped else AssertionError(flaky)


def _fail(ctx: CaseContext, case_id: str, variant: str, check: Check, made: Explored, kind: str,
          made_from: Plan, forward: Callable[..., Any]) -> bool:
    """Shrink the failing sample, save it, describe both, and raise the shrunk sample's failure;
    False (nothing saved, the case's info as it was) when a second look finds no reference."""
    base = dict(made_from.bases)[made.base]
    reverts = [(w, base.args[w]) for w, _ in made.switches if isinstance(w, int) and w < len(base.args)]
    kept = dict(ctx.info)
    # shrunk while it fails the same way, down to what differs: a value mismatch that becomes "output on
    # the wrong device" (a factory's device= dropped) is another failure, not a smaller one
    again = outcome(check, made.sample, detailed=True) if kind == "mismatch" else None
    same = again if again is not None and again.startswith("mismatch: ") else kind
    # a candidate on which CPU's forward writes outside its arguments (recheck.py) is never called:
    # CPU's kernel itself would corrupt this process, and its answer is no reference
    dtype = made_from.dtype
    keeps = (lambda s: carries(s, dtype)) if dtype is not None and carries(made.sample, dtype) else (lambda s: True)
    result = shrink(made.sample, lambda s: not writes_outside(forward, s)
                    and outcome(check, s, detailed=same != kind) == same, reverts, keeps=keeps)
    ctx.info.clear()
    ctx.info.update(kept)
    record: dict[str, Any] = {"variant": variant, "index": made.index, "recipe": made.recipe(), "failure": kind,
                              "shrink_calls": result.calls, "shrink_steps": result.steps}
    try:
        record["shrunk"] = codec.encode_sample(result.sample)
    except codec.CodecError as exc:
        record["shrunk"], record["not_stored"] = None, str(exc)
    try:
        record["original"] = codec.encode_sample(made.sample)
    except codec.CodecError:
        record["original"] = None
    ctx.info["explore"] = record
    ctx.info["sample"] = describe_sample(result.sample)
    ctx.info["original_sample"] = record["original_text"] = describe_sample(made.sample)  # also when not encodable
    flaky = f"explored sample {made.index} failed ({kind}) and then passed twice: flaky"
    failure = confirmed(check, result.sample, made.sample, flaky)  # the shrunk sample's own failure, with its evidence
    if failure is None:
        ctx.info.clear()
        ctx.info.update(kept)
        return False
    found = None
    if record["shrunk"] is not None:
        entry = corpus.Entry(case_id, variant, record["shrunk"], record["original"], made.recipe(), kind)
        for root in (ctx.corpus, ctx.run_dir / "corpus" if ctx.run_dir is not None else None):
            _save(root, entry, record)
        entry.name = corpus.file_name(entry)
        found = Find(entry, record, dict(ctx.info["explored"]))
    if found is not None:
        hand_to_rerun(failure, found=found)  # the rerun without the observer confirms this find
    raise failure


def _save(root: Path | None, entry: corpus.Entry, record: dict[str, Any]) -> None:
    if root is None:
        return
    try:
        corpus.save(root, entry)
        record["saved"] = record.get("saved", 0) + 1
    except Exception as exc:  # noqa: BLE001 - a corpus the file system refuses must not hide the failure
        record["save_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
