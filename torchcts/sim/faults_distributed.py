"""The sim's planted collective fault, caught by the `distributed` suite (issue 32).

The sim's collectives are c10d ops on sim tensors, run by its dispatch on the CPU tensors behind
them (sim/distributed.py), so a fault hooks a c10d op like a kernel fault hooks an aten op.
Joined to the registry in faults.py.
"""

from __future__ import annotations

from torchcts.sim.fault_model import Fault, on_op


@on_op("_reduce_scatter_base_")
def _reduce_scatter_drops_own_chunk(func, args, kwargs, call):
    """reduce_scatter_tensor on the last rank sends zeros for its own chunk (a partition loop one
    chunk short): the last rank's result lacks its own contribution, the others' are right."""
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    if rank != world - 1:
        return call(*args, **kwargs)
    sent = args[1].clone()
    sent.view(world, -1)[-1].zero_()
    return call(args[0], sent, *args[2:], **kwargs)


FAULTS = (
    Fault("reduce_scatter_drops_own_chunk", "reduce_scatter_tensor on the last rank leaves out its own contribution "
          "to its chunk", "distributed", 7, ("distributed/reduce_scatter_tensor/*",), _reduce_scatter_drops_own_chunk),
)
