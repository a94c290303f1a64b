"""Placement: where an operand lives, an exploration axis (issue 39 item 3).

PyTorch lets a 0-dim CPU tensor stand beside device tensors as a scalar (`x_dev * torch.tensor(2.5)`),
and a Python number where an op takes a Scalar; a backend reads such an operand through another path
(a host value copied into a kernel argument, an integer fast path) than a device tensor. OpInfo's
samples hold their 0-dim operands as tensors that move to the device with the rest, so that path is
never taken. One explored sample in PLACE_EVERY whose arguments hold a 0-dim tensor (never the input)
gets one of them as a CPU scalar tensor (a HostArg: it stays on the host when the sample moves) or
as a Python number. The choice is drawn from the sample's own seed (`f"{case_id}#{index}#place"`), so
the other axes' draws, and every corpus entry found before this axis, are unchanged. One CPU scalar
tensor in VIEW_EVERY (its own seed, `#place-view`) is a 0-dim view at storage offset 1 of a host tensor
whose element 0 is another value: MPS binary ops read element 0 of such a view's storage
(pytorch/pytorch#187117); the copies of the sample, the codec and repro scripts keep the view. Ops whose tensors
must all be on one device, a 0-dim one too, never get this axis (op facts of kind `one_device`,
values.Policy.host_operands), and a placed sample PyTorch's own device rule refuses (host_rule.py:
only TensorIterator takes a CPU scalar beside device tensors) is dropped by the runner.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from torchcts.cases.opinfo.samples import HostArg, rebuilt

PLACE_EVERY = 3
VIEW_EVERY = 2  # one host operand in 2 is a view at a storage offset (host_view)
VIEW_WORDS = "a CPU scalar tensor (a view at storage offset 1)"
KINDS = ("host", "number")  # a CPU scalar tensor, a Python number
WORDS = {"host": "a CPU scalar tensor", "number": "a Python number"}  # as recipes name them


def place(sample: Any, case_id: str, index: int) -> tuple[Any, str | None]:
    """The sample with one 0-dim tensor operand moved off the device, and what was done (None: unchanged)."""
    where = [i for i, a in enumerate(sample.args) if _zero_dim(a)]
    where += [k for k, v in sample.kwargs.items() if _zero_dim(v)]
    rng = random.Random(f"{case_id}#{index}#place")
    if not where or rng.randrange(PLACE_EVERY):
        return sample, None
    at, kind = where[rng.randrange(len(where))], KINDS[rng.randrange(len(KINDS))]
    args, kwargs = list(sample.args), dict(sample.kwargs)
    value = (args[at] if isinstance(at, int) else kwargs[at]).detach()
    view = kind == "host" and random.Random(f"{case_id}#{index}#place-view").randrange(VIEW_EVERY) == 0
    off = value.item() if kind == "number" else HostArg(host_view(value) if view else value.clone())
    if isinstance(at, int):
        args[at] = off
    else:
        kwargs[at] = off
    label = f"arg{at}" if isinstance(at, int) else at
    return rebuilt(sample, sample.input, args, kwargs), f"{label} as {VIEW_WORDS if view else WORDS[kind]}"


def host_view(value: torch.Tensor) -> torch.Tensor:
    """`value` (0-dim) as element 1 of a host tensor whose element 0 (the storage's start) is another
    value: a kernel that ignores the view's storage offset reads that one."""
    if value.dtype == torch.bool:
        decoy = ~value
    elif value.is_floating_point() or value.is_complex():
        decoy = torch.where((value == 0) | ~torch.isfinite(value), torch.ones_like(value), -value)
    else:
        decoy = value + 1  # wraps at the dtype's maximum, still another value
    return torch.stack([decoy, value.detach()])[1]


def moved(recipe: str | None) -> bool:
    """Whether a recipe (Explored.placed, a corpus entry's) moved an operand to the host."""
    return recipe is not None and any(f" as {w}" in recipe for w in WORDS.values())


def _zero_dim(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.dim() == 0 and x.layout == torch.strided and not x.requires_grad
