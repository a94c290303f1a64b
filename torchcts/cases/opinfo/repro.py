"""The exact CPU call behind one opinfo case and sample, for standalone repro scripts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from torchcts.cases.opinfo import out_layouts
from torchcts.cases.opinfo.confined import confine
from torchcts.cases.opinfo.samples import (
    copy_sample,
    function_name,
    generate,
    inject_special_values,
    lookup,
    select_samples,
)
from torchcts.cases.opinfo.strengthen import strengthener
from torchcts.model.case import NotApplicable


def materialize(
    case_params: Mapping[str, Any], sample_index: int, dtype: str | None = None, device: str | None = None,
    confined: Mapping[str, Any] | None = None, out_layout: str | None = None,
) -> tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    """(description, fn, args, kwargs) such that `fn(*args, **kwargs)` on CPU is the call that
    case `case_params` (a Case.params dict: op, variant, kind, dtype) makes for sample
    `sample_index`. Move the tensors in args/kwargs to the device to get the device call.

    Per kind: `forward`/`noncontiguous`/`backward`/`errors` call the op itself (`errors` uses
    error input `sample_index`; `backward` samples require grad and the case sums the outputs,
    each weighted by 1, 1.125, ..., 1.75 repeating (run.py: _weights), and calls backward;
    `noncontiguous` returns the sample made non-contiguous the way the case makes it, for CPU and
    device alike), `method` the Tensor method, `inplace` the in-place method (the result must be
    args[0]), `out` the op with `out=` tensors shaped like the result, and `special_values` the op
    on the sample with NaN/+Inf/-Inf injected, or, with `confined` (a failing record's
    `info.special_confined`), with the one special value the case's second comparison confined
    (confined.py); `out` with `out_layout` (a failing record's `info.out_layout`) writes into that
    destination instead (out_layouts.py). Ops whose samples the case rewrites
    (strengthen.py) get the rewritten sample.
    The description is one line: the function, kind and sample index. `device` (the device under
    test) resolves options PyTorch picks per device type, as the run did (samples.pin_device_policy).
    """
    op = lookup(case_params["op"], case_params.get("variant", ""))
    kind = case_params.get("kind", "forward")
    dt = getattr(torch, dtype or case_params["dtype"])
    samples = generate(op, dt, requires_grad=kind == "backward", errors=kind == "errors", device=device)
    [(_, sample)] = select_samples(samples, None, sample_index)
    if kind == "errors":
        sample = sample.sample_input
    strengthen = strengthener(op.name, op.variant_test_name)  # as the case rewrote it (strengthen.py)
    if strengthen is not None and kind in ("forward", "method", "noncontiguous", "special_values", "inplace", "out",
                                           "agree"):
        sample = strengthen(sample)
    if kind == "special_values" and confined:
        variant = confine(sample, int(confined.get("tensor", 0)), str(confined.get("value", "nan")))
        if variant is None:
            raise NotApplicable(f"sample {sample_index} has no floating tensor {confined.get('tensor')}")
        sample = variant
    elif kind == "special_values":
        sample, _ = inject_special_values(sample)
    fn = {"method": op.method_variant, "inplace": op.inplace_variant}.get(kind, op.op)
    if fn is None:
        raise NotApplicable(f"{op.name} has no {kind} variant")
    sample = copy_sample(sample, "cpu")
    if kind == "noncontiguous":
        sample = sample.noncontiguous()
    kwargs = dict(sample.kwargs)
    if kind == "out":  # zero-filled, as the case's: some kernels leave elements unwritten
        result = fn(sample.input, *sample.args, **sample.kwargs)
        kwargs["out"] = (
            torch.zeros_like(result) if isinstance(result, torch.Tensor) else tuple(torch.zeros_like(t) for t in result)
        )
        if out_layout in out_layouts.LAYOUTS:
            made = out_layouts.destinations(result, out_layout)
            if made is None:
                raise NotApplicable(f"sample {sample_index} has no {out_layout} out= destination")
            kwargs["out"] = made
    description = f"{function_name(fn)} ({kind}, sample {sample_index})"
    return description, fn, (sample.input, *sample.args), kwargs
