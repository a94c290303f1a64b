"""The sim's planted faults that are wrong only sometimes: caught by `run --repeat N` (issue 50).

A race or a stale buffer in a real backend shows once in many launches, so a case that passes one
run passes most runs (intel/torch-xpu-ops#3644: an engineer repeating a case 250 times by hand).
The fault here is wrong on every k-th launch of one kernel configuration, deterministic in a
per-process counter (never random: the test that proves `--repeat` catches it must not be), and
rare enough that no single run of its `--op` selection reaches the k-th launch of any configuration.
Joined to the registry in faults.py.
"""

from __future__ import annotations

from collections import Counter

import torch

from torchcts.sim.fault_model import Fault, on_op

# Every STALE_EVERY-th launch of one configuration is wrong. A plain `run --op hypot` launches no
# configuration more than 45 times in its one worker (torch 2.13), so it passes; under --repeat 10
# the busiest configurations reach this several times over, and one case's repeat launches a
# configuration at most 45 times, so no case fails every repeat.
STALE_EVERY = 64
_LAUNCHES: Counter[tuple] = Counter()


@on_op("hypot", "hypot_")
def _hypot_stale_workspace(func, args, kwargs, call):
    """hypot reuses its workspace between launches of one configuration (shape, strides, dtype) and
    every 64th launch races the previous one's write-back: its first element comes out stale."""
    out = call(*args, **kwargs)
    x = args[0]
    key = (str(func), tuple(x.shape), tuple(x.stride()), x.dtype)
    _LAUNCHES[key] += 1
    if _LAUNCHES[key] % STALE_EVERY == 0 and isinstance(out, torch.Tensor) and out.numel() and out.is_floating_point():
        out[(0,) * out.dim()] += 1  # the stale value: off by one, far outside any tolerance of hypot (any layout)
    return out


FAULTS = (
    Fault("hypot_stale_every_64th", "every 64th hypot launch of one shape, strides and dtype returns a stale "
          "first element (a workspace race): wrong only sometimes, a plain run passes",
          "opinfo", 5, ("opinfo/hypot/*",), _hypot_stale_workspace, op="hypot", repeat=10),
)
