"""The `agree` kind of the OpInfo suite (issue 50 item 3): the forms of one op agree on the device.

Each selected sample runs on the device in its functional form, then, on fresh device copies of the
same sample, in each other form the op has: the Tensor method, the in-place method, `out=` (into
zeroed tensors of the functional result's own layout), and PyTorch's decomposition of the aten
overload the functional call reached (`torch._decomp.decomposition_table`, the decompositions
OpInfo's Python refs are built from). Every form must agree with the functional result on the device:

- bit for bit where one kernel serves both forms (kernels.py: `rule`: the same kernels reached in
  the same order, read from the dispatcher's tables; the same output layout; the functional form
  gives the same bits when called twice; no kernel PyTorch names nondeterministic). A path wrong
  within the CPU tolerance (an in-place kernel 1 ulp off its functional twin) fails here, where the
  method/inplace/out kinds, which compare with CPU within the tolerance, pass it;
- else within the op's tolerance for the dtype (its category, the sample's conditioning floor, bit
  for bit for exact ops), doubled: each form may be a tolerance away from the exact answer, on
  opposite sides. Linalg outputs are compared through OpInfo's output processing (signs, phases).

No CPU value is compared with the device's. CPU is asked what every kind asks it: whether it accepts
the sample (and the form's call, where the device refuses it) and the result's dtypes for the claims
(an unclaimed one: the sample is not_claimed). Where a pair disagrees on the device, the same pair is
computed on CPU: where CPU's own forms disagree alike (fft.ihfftn's out= leaves elements unwritten; a
decomposition that differs from CPU's kernel by its special values or the dtype it computes in, as the
sim's decomposition-mode ledger names), PyTorch's forms differ by definition and the pair is skipped
for the sample (counted in `info.agree_skipped`), never failed.

A failure names the two forms, the rule and why (`info.agree_pair`, `info.agree_rule`), the
mismatch's max abs/rel error, the sample and the command that reruns it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from torchcts.cases.context import CaseContext
from torchcts.cases.observe import UNOBSERVED, overload_name, unobserved
from torchcts.cases.opinfo.kernels import Rule, device_key, rule
from torchcts.cases.opinfo.run import (
    SkipSample,
    UnclaimedSample,
    call,
    claimed_if_failing,
    conditioned,
    each_sample,
    exact_for,
    on_host,
    reference,
    require_claimed,
)
from torchcts.cases.opinfo.samples import copy_sample, lookup, tensors_of
from torchcts.cases.opinfo.strengthen import strengthener
from torchcts.oracle.categories import tolerance_category
from torchcts.oracle.compare import OracleMismatch, TolSpec, find_mismatch
from torchcts.oracle.opfacts import FACTS
from torchcts.oracle.tolerances import Tolerance

BITWISE = Tolerance(0.0, 0.0, signed_zero=True)
FORMS = ("method", "out", "inplace", "decomposition")
# Why an in-place form is compared with the functional one within the tolerance: CPU's own complex div
# kernel, one structured kernel for both, rounds the scalar tail differently when its output aliases
# its input (2 of 250 complex64 elements, measured); `out=` into the input aliases alike, bit for bit.
ALIASED = ("within the tolerance, doubled: the in-place form writes into its input, and a kernel may take another "
           "path for an output aliasing an input")


class _Trace(TorchDispatchMode):
    """The aten overloads one call dispatches with a tensor on the device, in order, and the first
    call with its output (the decomposition pair reruns it)."""

    def __init__(self, device_type: str) -> None:
        super().__init__()
        self.device_type = device_type
        self.names: list[str] = []
        self.first: tuple[Any, tuple, dict, Any] | None = None

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # as observe.DispatchObserver: no dynamo import at the first op

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if getattr(func, "namespace", "aten") in ("aten", "prims") and any(
                t.device.type == self.device_type for t in tensors_of((args, kwargs, out))):
            self.names.append(overload_name(func))
            if self.first is None:
                self.first = (func, args, kwargs, out)
        return out


@contextmanager
def _traced(device_type: str) -> Iterator[_Trace]:
    with _Trace(device_type) as trace:
        yield trace


@dataclasses.dataclass
class _Functional:
    """The functional form's device result and what reaching it dispatched; `again` calls it a second
    time on a fresh copy, asked (once) only where a pair's rule would be bit for bit."""

    result: Any
    names: list[str]
    first: tuple[Any, tuple, dict, Any] | None
    again: Callable[[], Any]

    @functools.cached_property
    def repeats(self) -> bool:
        """The functional form called twice gave the same bits on this device."""
        again = self.again()
        with unobserved():
            return find_mismatch(_host(again), _host(self.result), BITWISE) is None


class _Agree:
    """One case's pairs: the op, the dtype's comparison rules, and what each form's rule was."""

    def __init__(self, ctx: CaseContext, op: Any, dtype: torch.dtype) -> None:
        self.ctx, self.op, self.dtype = ctx, op, dtype
        self.category, self.exact = tolerance_category(op), exact_for(op, dtype)
        self.key = device_key(ctx.device_type)
        fact = FACTS.find("nondeterministic_kernel", op.name, op.variant_test_name)
        self.nondeterministic = f"{op.name}: {fact.reason}" if fact is not None else None
        case_id = ctx.case.id if ctx.case is not None else f"opinfo/{op.name}/{dtype}/agree"
        out_id = case_id.rsplit("/", 1)[0] + "/out"
        # an out= call under a dispatch mode that changes it (observe.UNOBSERVED): no question for the device
        self.out_unobservable = next((why for glob, why in UNOBSERVED.items() if fnmatch.fnmatchcase(out_id, glob)), None)
        self.rules: dict[str, str] = {}
        self.skipped: dict[str, int] = {}

    # --- per sample ---------------------------------------------------------------------------

    def sample(self, sample: Any) -> None:
        """Every pair of one sample; SkipSample when none could be checked."""
        expected = reference(self.op.op, sample)  # CPU accepts it, and its result's dtypes are claimed
        require_claimed(self.ctx, (sample.input, sample.args, sample.kwargs), expected)
        # as every other kind: a failure where CPU computes through an unclaimed dtype is no claim's
        # (fft.hfft of float32 computes in complex64: pytorch_ocl refuses it, not_claimed elsewhere)
        def cpu_again() -> Any:
            return reference(self.op.op, sample)

        with claimed_if_failing(self.ctx, cpu_again):
            functional = self._functional(sample)
        checked = 0
        for form in FORMS:
            try:
                with claimed_if_failing(self.ctx, cpu_again):
                    self._pair(form, sample, functional)
            except UnclaimedSample:
                raise
            except SkipSample as why:
                self.skipped[f"{form}: {why}"] = self.skipped.get(f"{form}: {why}", 0) + 1
                continue
            checked += 1
        if not checked:
            raise SkipSample("no other form of the op could be run on the sample")

    def _functional(self, sample: Any) -> _Functional:
        dev = copy_sample(sample, self.ctx.device)
        with _traced(self.ctx.device_type) as trace:
            result = call(self.op.op, dev)
        return _Functional(result, trace.names, trace.first,
                           lambda: call(self.op.op, copy_sample(sample, self.ctx.device)))

    def _pair(self, form: str, sample: Any, functional: _Functional) -> None:
        """One pair on the device, compared (`_compare`); `on_cpu` computes the same pair on CPU, asked
        only where the device's pair disagrees."""
        device, result = self.ctx.device, functional.result
        if form == "decomposition":
            decomp, func, args, kwargs, out = _decomposition_of(functional)
            got = self._decomposed(decomp, args, kwargs, "the device")
            if _structure(_plain(got)) != _structure(_plain(out)):
                # a decomposition may follow another device's conventions (native_batch_norm's saved
                # statistics in eval mode: CUDA's shape off the CPU, where the sim runs CPU's kernel):
                # only values are the pair's question, and shapes are the forward kind's
                raise SkipSample("the decomposition returns outputs of other shapes or dtypes")
            found = Rule(False, f"within the tolerance, doubled: PyTorch's decomposition of {overload_name(func)} "
                                "runs other kernels")

            def on_cpu() -> tuple[Any, Any]:
                cargs, ckwargs = pytree.tree_map(lambda t: t.detach().cpu() if isinstance(t, torch.Tensor) else t,
                                                 (args, kwargs))
                return _plain(func(*cargs, **ckwargs)), _plain(self._decomposed(decomp, cargs, ckwargs, "CPU"))

            self._compare(form, sample, _plain(out), _plain(got), found, on_cpu)
            return
        if form == "inplace":
            self._inplace(sample, functional)
            return
        run = self._method if form == "method" else self._out
        got, names, same_layout = run(sample, device, result)
        self._compare(form, sample, result, got, self._rule(functional, names, same_layout),
                      lambda: (lambda f: (f, run(sample, "cpu", f)[0]))(call(self.op.op, copy_sample(sample, "cpu"))))

    def _rule(self, functional: _Functional, names: list[str], same_layout: bool, first: list[str] | None = None) -> Rule:
        return rule(functional.names if first is None else first, names, self.key, same_layout=same_layout,
                    repeats=lambda: functional.repeats, nondeterministic=self.nondeterministic)

    def _method(self, sample: Any, device: Any, result: Any) -> tuple[Any, list[str], bool]:
        fn = self.op.method_variant
        if fn is None or not callable(fn):
            raise SkipSample("the op has no method")
        got, names = self._traced_call(sample, device, lambda dev: call(fn, dev), "method")
        return got, names, _same_layout(got, result)

    def _out(self, sample: Any, device: Any, result: Any) -> tuple[Any, list[str], bool]:
        if not self.op.supports_out:
            raise SkipSample("the op has no out= form")
        if self.out_unobservable:
            raise SkipSample(f"out= under a dispatch mode: {self.out_unobservable}")
        made = _fresh_like(result, device)
        if made is None:
            raise SkipSample("the result is not a tensor or a sequence of strided tensors")
        out, same_layout = made
        _, names = self._traced_call(sample, device, lambda dev: call(self.op.op, dev, out=out), "out=",
                                     lambda cpu: call(self.op.op, cpu, out=_fresh_like(result, "cpu")[0]))
        return out, names, same_layout

    def _inplace(self, sample: Any, functional: _Functional) -> None:
        """The in-place form against the functional one within the tolerance (ALIASED), then against
        `out=` into its own input: one output aliasing the input on both sides, bit for bit where one
        kernel serves both."""
        fn, result = self.op.inplace_variant, functional.result
        if fn is None or not callable(fn):
            raise SkipSample("the op has no in-place form")
        if sample.broadcasts_input or not isinstance(sample.input, torch.Tensor) or not isinstance(result, torch.Tensor):
            raise SkipSample("the input is broadcast or not a tensor")
        if sample.input.layout == torch.strided and torch._debug_has_internal_overlap(sample.input) == 1:
            raise SkipSample("the input overlaps itself: the order of an in-place op's writes is undefined")
        if sample.input.dtype != result.dtype or sample.input.shape != result.shape:
            raise SkipSample("the functional result's dtype or shape is not the input's")

        def inplace(device: Any) -> tuple[torch.Tensor, list[str]]:
            return self._written(sample, device, lambda dev: call(fn, dev), "in-place")

        def into_input(device: Any) -> tuple[torch.Tensor, list[str]]:
            return self._written(sample, device, lambda dev: call(self.op.op, dev, out=dev.input), "out= into its input")

        got, names = inplace(self.ctx.device)
        self._compare("inplace", sample, result, got, Rule(False, ALIASED),
                      lambda: (call(self.op.op, copy_sample(sample, "cpu")), inplace("cpu")[0]))
        if not self.op.supports_out or self.out_unobservable:
            return
        into, into_names = into_input(self.ctx.device)
        self._compare("inplace_out", sample, into, got, self._rule(functional, names, True, first=into_names),
                      lambda: (into_input("cpu")[0], inplace("cpu")[0]))

    def _written(self, sample: Any, device: Any, write: Callable[[Any], Any], form: str) -> tuple[torch.Tensor, list[str]]:
        """(the input after `write` wrote into it on `device`, the overloads that reached it)."""
        holder: list[Any] = []

        def keep(dev: Any) -> Any:
            holder.append(dev)
            return write(dev)

        _, names = self._traced_call(sample, device, keep, form, write)
        return holder[0].input, names

    def _traced_call(self, sample: Any, device: Any, fn: Callable[[Any], Any], form: str,
                     cpu_fn: Callable[[Any], Any] | None = None) -> tuple[Any, list[str]]:
        """(fn(a copy of the sample on `device`), the overloads it dispatched there). Where the device
        raises, CPU is asked whether it refuses the same call (`cpu_fn`, else `fn`): SkipSample if so,
        else the device's exception stands (a failure)."""
        dev = copy_sample(sample, device)
        with _traced(torch.device(device).type) as trace:
            try:
                got = fn(dev)
            except Exception:
                if device is not self.ctx.device:  # the CPU recheck of a pair (_compare): it refuses
                    raise
                self._cpu_refuses(cpu_fn or fn, sample, form)
                raise
        return got, trace.names

    @staticmethod
    def _cpu_refuses(cpu_call: Callable[[Any], Any], sample: Any, form: str) -> None:
        """SkipSample when CPU refuses the form's call too (the device raising is then no failure);
        returns (the device's exception is re-raised) when CPU accepts it."""
        try:
            with unobserved():
                cpu_call(copy_sample(sample, "cpu"))
        except Exception as exc:  # noqa: BLE001 - CPU's refusal makes the pair uncheckable
            raise SkipSample(f"CPU refuses the {form} form too ({type(exc).__name__})") from None

    @staticmethod
    def _decomposed(decomp: Callable[..., Any], args: tuple, kwargs: dict, where: str) -> Any:
        try:
            got = decomp(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - TorchCTS's construction, not a path the device claims
            raise SkipSample(f"the decomposition raises on {where} ({type(exc).__name__})") from None
        if got is NotImplemented:
            raise SkipSample("the decomposition declines the arguments")
        return got

    # --- comparison ---------------------------------------------------------------------------

    def _tolerance(self, sample: Any) -> TolSpec:
        """The op's tolerance per dtype, doubled, floored by the sample's conditioning; exact outputs exact."""
        floor = conditioned(self.ctx, self.op, sample)

        def tol(dt: torch.dtype) -> Tolerance:
            base = self.ctx.tolerance(self.category, dt)
            if base.exact:
                return base
            return Tolerance(max(2 * base.atol, floor), 2 * base.rtol)

        if self.exact is not None and self.exact.outputs is None:
            return self.exact.tolerance()
        return tol

    def _mismatch(self, sample: Any, first: Any, second: Any, found: Rule) -> Any:
        tol: TolSpec = BITWISE if found.bitwise else self._tolerance(sample)
        with unobserved():
            if not found.bitwise and self.category == "linalg":  # unique up to signs and phases: OpInfo's processing
                first, second = (sample.output_process_fn_grad(on_host(x)) for x in (first, second))
            return find_mismatch(_host(second), _host(first), tol)

    def _compare(self, form: str, sample: Any, first: Any, second: Any, found: Rule,
                 on_cpu: Callable[[], tuple[Any, Any]]) -> None:
        """OracleMismatch when `second` (the form) differs from `first` by `found`'s rule, unless the same
        pair computed on CPU (`on_cpu`) differs alike: PyTorch's own forms disagree there (fft.ihfftn's
        out= leaves elements unwritten), which is no question for the device (SkipSample)."""
        self.rules.setdefault(form, found.why)
        mismatch = self._mismatch(sample, first, second, found)
        for t in tensors_of(first):
            self.ctx.verdict.compared(found.bitwise or not (t.dtype.is_floating_point or t.dtype.is_complex))
        if mismatch is None:
            return
        try:
            with unobserved():
                cpu_first, cpu_second = on_cpu()
            on_cpu_too = self._mismatch(sample, cpu_first, cpu_second, found) is not None
        except SkipSample:
            raise
        except Exception as exc:  # noqa: BLE001 - CPU refuses the pair: nothing to hold the device to
            raise SkipSample(f"CPU refuses the pair ({type(exc).__name__})") from None
        if on_cpu_too:
            raise SkipSample("CPU's own forms disagree alike on the sample")
        other = _OTHER.get(form, "functional form")
        self.ctx.describe(agree_pair=f"{_NAMES[form]} vs {other}", agree_rule=found.why)
        wrong = self._against_cpu(sample, ((_NAMES[form], second, cpu_second), (other, first, cpu_first)))
        mismatch.what = (f"the {_NAMES[form]} and the {other} disagree on the device ({found.why}; got: the "
                         f"{_NAMES[form]}'s, expected: the {other}'s{wrong}): {mismatch.what}")
        raise OracleMismatch(mismatch)

    def _against_cpu(self, sample: Any, sides: tuple[tuple[str, Any, Any], ...]) -> str:
        """Which side of a disagreeing pair differs from CPU's answer for it, within the case's
        tolerance: the form to fix (deg2rad of int32 on pytorch_ocl: the functional form, unpromoted,
        where the decomposition's answer was CPU's). "" where that cannot be told."""
        if self.category == "linalg":  # unique up to signs and phases: no one answer to hold a side to
            return ""
        try:
            tol = self._tolerance(sample)
            with unobserved():
                off = [name for name, dev, cpu in sides if find_mismatch(_host(dev), _host(cpu), tol) is not None]
        except Exception:  # noqa: BLE001 - a hint only: sides that cannot be compared name none
            return ""
        if len(off) == len(sides):
            return "; both differ from CPU's answer"
        return f"; the {off[0]} differs from CPU's answer" if off else ""


_NAMES = {"method": "Tensor method", "inplace": "in-place form", "out": "out= form",
          "inplace_out": "in-place form", "decomposition": "PyTorch decomposition"}
_OTHER = {"inplace_out": "out= form writing into its input"}


def _decomposition_of(functional: _Functional) -> tuple[Callable[..., Any], Any, tuple, dict, Any]:
    """(decomposition, overload, args, kwargs, output) of the one aten call the functional form made."""
    if len(functional.names) != 1 or functional.first is None:
        raise SkipSample("the functional form is not one aten call")
    func, args, kwargs, out = functional.first
    from torch._decomp import decomposition_table

    decomp = decomposition_table.get(func)
    if decomp is None:
        raise SkipSample(f"{overload_name(func)} has no decomposition")
    if func._schema.is_mutable or torch.Tag.nondeterministic_seeded in func.tags:
        raise SkipSample(f"{overload_name(func)} mutates its arguments or draws random numbers")
    return decomp, func, args, kwargs, out


def _structure(out: Any) -> list[Any]:
    """The shapes and dtypes of an output's tensors, in order (non-tensor leaves by type)."""
    return [(tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else type(x).__name__
            for x in pytree.tree_leaves(out)]


def _plain(out: Any) -> Any:
    """A structseq (return_types) as the tuple it is, so both sides have one structure."""
    return tuple(out) if isinstance(out, tuple) else out


def _host(out: Any) -> Any:
    return pytree.tree_map(lambda t: t.detach().cpu() if isinstance(t, torch.Tensor) else t, _plain(out))


def _same_layout(a: Any, b: Any) -> bool:
    """Whether two results are tensors of the same strides and storage-offset-free density, leaf by leaf."""
    la, lb = tensors_of(a), tensors_of(b)
    return len(la) == len(lb) and all(x.layout == y.layout == torch.strided and x.stride() == y.stride()
                                      for x, y in zip(la, lb, strict=True))


def _dense(t: torch.Tensor) -> bool:
    """Non-overlapping and dense: some order of the dimensions has contiguous strides (what a kernel
    allocating its own output gives)."""
    expected = 1
    dims = [(size, stride) for size, stride in zip(t.shape, t.stride(), strict=True) if size != 1]
    for size, stride in sorted(dims, key=lambda d: d[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def _fresh_like(result: Any, device: torch.device | str) -> tuple[Any, bool] | None:
    """Zeroed out= tensors with the result's strides where those are dense (the layout the functional
    form's kernel wrote; else contiguous ones, and the layouts differ), and whether every one has them."""
    if any(t.layout != torch.strided for t in tensors_of(result)):
        return None  # sparse results: out= wants tensors of their layout, which PyTorch makes per op
    def one(t: torch.Tensor) -> tuple[torch.Tensor, bool]:
        dense = _dense(t)
        made = (torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=device) if dense
                else torch.empty(t.shape, dtype=t.dtype, device=device))
        return made.zero_(), dense

    if isinstance(result, torch.Tensor):
        return one(result)
    if isinstance(result, (tuple, list)) and result and all(isinstance(t, torch.Tensor) for t in result):
        made = [one(t) for t in result]
        return tuple(m for m, _ in made), all(d for _, d in made)
    return None


def run(ctx: CaseContext, *, op: str, variant: str = "", kind: str = "agree", dtype: torch.dtype) -> None:
    """The runner of every agree case (cases/opinfo/kinds.py: KINDS)."""
    info = lookup(op, variant)
    ctx.describe(op=op, variant=variant, dtype=str(dtype).removeprefix("torch."), kind=kind)
    agree = _Agree(ctx, info, dtype)
    strengthen = strengthener(info.name, info.variant_test_name) or (lambda s: s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            each_sample(ctx, info, dtype, lambda sample: agree.sample(strengthen(sample)))
        finally:
            ctx.info["agree_rules"] = agree.rules
            if agree.skipped:
                ctx.info["agree_skipped"] = agree.skipped
