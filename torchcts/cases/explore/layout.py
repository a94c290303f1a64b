"""Layout: what a tensor's memory looks like, an exploration axis (issue 39 item 3).

OpInfo's samples are contiguous (the noncontiguous kind makes strided copies, never a stride of 0),
and the strides suite tries expanded operands on a handful of ops only. A kernel that reads an
operand as if it were contiguous, or takes a stride of 0 for a scalar, passes them. One explored
sample in EXPAND_EVERY gets one of its tensors (the input or a positional argument, with a dimension
of size > 1) as a stride-0 expansion of its first slice along that dimension (`t[:1].expand_as(t)`,
so every slice holds the same values); the copy to the device keeps the strides
(cases/opinfo/samples.py: _Copier). Drawn from the sample's own seed (`f"{case_id}#{index}#layout"`),
so the other axes' draws are unchanged. An in-place op CPU refuses on such an input is dropped, as
any input CPU rejects.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from torchcts.cases.opinfo.samples import rebuilt
from torchcts.oracle.conditioning import running_stats

EXPAND_EVERY = 4


def _written(case_id: str) -> tuple[int | str, ...]:
    """Positions of the statistics the case's op writes without a schema mark (op facts of kind
    `running_stats`, oracle/conditioning.py: running_stats): never expanded, since updates through a
    stride of 0 race with each other and CPU's own result changes from run to run."""
    entry = running_stats(case_id.split("/")[1]) if case_id.count("/") >= 2 else None
    return entry.where if entry is not None else ()


def expand(sample: Any, case_id: str, index: int) -> tuple[Any, str | None]:
    """The sample with one tensor as a stride-0 expansion along one dimension, and where (None: unchanged)."""
    candidates: list[Any] = [] if not _expandable(sample.input) else ["input"]
    written = _written(case_id)
    candidates += [i for i, a in enumerate(sample.args) if _expandable(a) and i not in written]
    rng = random.Random(f"{case_id}#{index}#layout")
    if not candidates or rng.randrange(EXPAND_EVERY):
        return sample, None
    at = candidates[rng.randrange(len(candidates))]
    t = sample.input if at == "input" else sample.args[at]
    dims = [d for d in range(t.dim()) if t.shape[d] > 1]
    dim = dims[rng.randrange(len(dims))]
    expanded = t.detach().narrow(dim, 0, 1).expand(t.shape).requires_grad_(t.requires_grad)
    args = list(sample.args)
    if at == "input":
        return rebuilt(sample, expanded, args), f"input expanded along dim {dim} (stride 0)"
    args[at] = expanded
    return rebuilt(sample, sample.input, args), f"arg{at} expanded along dim {dim} (stride 0)"


def _expandable(x: Any) -> bool:
    return (isinstance(x, torch.Tensor) and x.layout == torch.strided and x.dim() >= 1
            and any(s > 1 for s in x.shape) and not x.requires_grad)
