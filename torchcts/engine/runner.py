"""Running one case: find its function from the case's "module:function" and call it with a context."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from torchcts.cases.context import CaseContext, dtype_of
from torchcts.cases.observe import observe, rerun_kwargs, unobserved, unobserved_reason
from torchcts.model.case import Case, NotApplicable


def resolve_runner(case: Case) -> Callable[..., Any]:
    """The case's function, from its runner name "module:qualified.name"."""
    module_name, _, qualname = case.runner.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def run_case(case: Case, ctx: CaseContext) -> None:
    """Run one case; raises OracleMismatch (failed), NotApplicable, or the backend's exception (error).

    Sets the verdict's `dispatched` (the overloads that reached the device, cases/observe.py) or, for
    a case not observed, its `dispatch_unobserved` (why). The observer is TorchCTS's, so it must never
    decide a verdict: a case that fails under it is run again without it (`_verdict_without_observer`)."""
    fn = resolve_runner(case)
    kwargs = dict(case.params)
    if isinstance(kwargs.get("dtype"), str):
        kwargs["dtype"] = dtype_of(kwargs["dtype"])
    ctx.case = case
    with observe(case, ctx.device) as observer:
        try:
            fn(ctx, **kwargs)
        except NotApplicable:
            raise
        except Exception as exc:
            if observer is None:
                raise
            _verdict_without_observer(fn, kwargs, ctx, exc)
        finally:  # what dispatched before a failure or NotApplicable is recorded too
            verdict = ctx.verdict  # the verdict of the run that decided (a rerun's own)
            if verdict.dispatch_unobserved is None:
                verdict.dispatched = observer.names() if observer is not None else None
                verdict.fallback = observer.fallback() if observer is not None else None
                verdict.dispatch_unobserved = unobserved_reason(case) if observer is None else None


def _verdict_without_observer(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: CaseContext,
                              observed: Exception) -> None:
    """A case failed under the dispatch observer: decide its verdict without it.

    A mode changes the path of some composite kernels inside PyTorch (isTensorSubclassLike; complex
    `linalg_pinv` computes wrong values under any mode in 2.13), so a failure under observation may
    be ours. The case runs again unobserved, given what the failure hands it (cases/observe.py:
    `hand_to_rerun`, an explore case's find): a failure there is the verdict (raised). A pass is
    trusted only if the observed failure then repeats exactly (same exception and message: the
    observer's effect is deterministic); otherwise the backend is nondeterministic and the first
    failure stands. Costs nothing for passing cases, two reruns for a failing one. Each run notes
    and measures its own (cases/verdict.py: `for_rerun`); the record gets those of the run the
    outcome comes from (`deciding`)."""
    observed_verdict = ctx.verdict
    ctx.verdict = observed_verdict.for_rerun()
    with unobserved():
        fn(ctx, **{**kwargs, **rerun_kwargs(observed)})  # raises when the backend fails without the observer too
    unobserved_verdict = ctx.verdict
    ctx.verdict = unobserved_verdict.for_rerun()
    again: Exception | None = None
    try:
        fn(ctx, **kwargs)  # observed again: the mode is still on the stack
    except NotApplicable:
        raise
    except Exception as exc:  # noqa: BLE001 -- the backend's own exception, of any type
        again = exc
    if again is not None and type(again) is type(observed) and str(again) == str(observed):
        ctx.verdict = ctx.verdict.deciding(unobserved_verdict)
        ctx.info["observer_changed_result"] = f"{type(observed).__name__}: {str(observed)[:300]}"
        ctx.verdict.dispatched = ctx.verdict.fallback = None
        ctx.verdict.dispatch_unobserved = ("the dispatch observer changed this case's result (it fails only "
                                           "under observation), so its verdict comes from a run without it")
        return
    ctx.verdict = ctx.verdict.deciding(observed_verdict)
    ctx.info["nondeterministic"] = ("failed, passed on a rerun without the dispatch observer, then "
                                    + ("passed under it" if again is None else "failed differently under it"))
    raise observed
