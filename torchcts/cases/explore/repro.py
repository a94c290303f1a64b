"""The exact CPU calls behind an explore case's failure, for standalone repro scripts.

With the run's record: its shrunk input, then the original it was shrunk from, through the variant
that failed (a replayed corpus entry: the entry's input). Without one (`torchcts repro CASE
--device D`, or `--sample N`): explored sample N regenerated from the case id, forward.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from torchcts.cases.explore import codec
from torchcts.cases.explore.generate import plan, requiring_grad
from torchcts.cases.opinfo.samples import function_name, lookup, selected_samples
from torchcts.model.case import NotApplicable

Call = tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def materialize_explored(case_id: str, params: Mapping[str, Any], info: Mapping[str, Any] | None,
                         index: int | None) -> tuple[str, list[Call]]:
    """(variant, [(label, fn, args, kwargs)]): `fn(*args, **kwargs)` on CPU is each call the case made."""
    op = lookup(str(params["op"]), str(params.get("variant") or ""))
    dtype = getattr(torch, str(params["dtype"]))
    found = (info or {}).get("explore") if index is None else None
    calls: list[Call] = []
    if isinstance(found, dict) and isinstance(found.get("shrunk"), dict):
        variant = str(found.get("variant") or "forward")
        for label, key in (("shrunk", "shrunk"), ("original", "original")):
            if isinstance(found.get(key), dict):
                calls.append(_call(op, variant, codec.decode_sample(found[key]), label))
        return variant, calls
    made_from = plan(op, selected_samples(op, dtype, None, None), dtype)
    if made_from is None:
        raise NotApplicable(f"{op.name} has no sample to explore from")
    i = index if index is not None else int((info or {}).get("sample_index") or 0)
    made = made_from.sample(case_id, i)
    return "forward", [_call(op, "forward", made.sample, f"explored {i}: {made.recipe()}")]


def _call(op: Any, variant: str, sample: Any, label: str) -> Call:
    fn = op.inplace_variant if variant == "inplace" else op.op
    if fn is None:
        raise NotApplicable(f"{op.name} has no {variant} variant")
    if variant == "backward":
        sample = requiring_grad(sample)
    kwargs = dict(sample.kwargs)
    if variant == "out":  # zero-filled, as the case's
        result = fn(sample.input, *sample.args, **sample.kwargs)
        kwargs["out"] = (torch.zeros_like(result) if isinstance(result, torch.Tensor)
                         else tuple(torch.zeros_like(t) for t in result))
    return f"{function_name(fn)} ({variant}, {label})", fn, (sample.input, *sample.args), kwargs
