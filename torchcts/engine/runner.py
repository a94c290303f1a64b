"""Running one case: find its function from the case's "module:function" and call it with a context."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from torchcts.cases.context import CaseContext, dtype_of
from torchcts.cases.model import Case
from torchcts.cases.observe import observe, unobserved_reason


def resolve_runner(case: Case) -> Callable[..., Any]:
    """The case's function, from its runner name "module:qualified.name"."""
    module_name, _, qualname = case.runner.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def run_case(case: Case, ctx: CaseContext) -> None:
    """Run one case; raises OracleMismatch (failed), NotApplicable, or the backend's exception (error).

    Sets ctx.dispatched (the overloads that reached the device, cases/observe.py) or, for a case
    not observed, ctx.dispatch_unobserved (why)."""
    fn = resolve_runner(case)
    kwargs = dict(case.params)
    if isinstance(kwargs.get("dtype"), str):
        kwargs["dtype"] = dtype_of(kwargs["dtype"])
    ctx.case = case
    with observe(case, ctx.device) as observer:
        try:
            fn(ctx, **kwargs)
        finally:  # what dispatched before a failure or NotApplicable is recorded too
            ctx.dispatched = observer.names() if observer is not None else None
            ctx.dispatch_unobserved = unobserved_reason(case) if observer is None else None
