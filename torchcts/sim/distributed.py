"""The sim's c10d backend, `simccl`: what a device backend registers for torch.distributed.

A device backend makes `init_process_group("<name>")` work on its device by registering a
process-group backend (`torch.distributed.Backend.register_backend(name, creator, devices=[...])`),
usually a C++ `c10d::Backend` that runs collectives on device memory. A Python backend can register
one too: the creator may return any `c10d.Backend`. The sim's collectives need no kernels of their
own: a c10d op (`c10d::allreduce_`, ...) on sim tensors reaches the sim's `__torch_dispatch__`
like any aten op (sim/tensor.py), which runs it on the CPU tensors behind them, so the creator
returns gloo's backend and registers it for both cpu (where those CPU tensors land) and sim.
Planted collective faults hook those c10d ops like kernel faults (faults_distributed.py).

What a Python backend cannot register: a backend of its own C++ type (ProcessGroupNCCL-like
options, coalescing managers, `_set_sequence_number_for_group`), which the suite does not need.
"""

from __future__ import annotations

import datetime
from typing import Any

NAME = "simccl"


def _create(store: Any, rank: int, world_size: int, timeout: datetime.timedelta) -> Any:
    from torch.distributed import ProcessGroupGloo

    return ProcessGroupGloo(store, rank, world_size, timeout)


def register() -> None:
    """Register `simccl` for the sim (and cpu, where the sim's collectives run); idempotent."""
    import torch.distributed as dist

    if not dist.is_available() or NAME.upper() in dist.Backend._plugins:
        return
    dist.Backend.register_backend(NAME, _create, devices=["cpu", "sim"])
