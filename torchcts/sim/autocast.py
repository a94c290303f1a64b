"""Autocast on the sim: the `AutocastPrivateUse1` kernels a backend must register itself.

PyTorch's autocast_mode.cpp registers op lists for CPU, CUDA, MPS, XPU, MTIA and MAIA only; for
PrivateUse1 it registers nothing, not even a fallthrough, so `torch.autocast("sim")` fails on the
first op ("Could not run 'aten::matmul' with arguments from the 'Autocastsim' backend") until the
backend registers its own kernels, as out-of-tree backends do in C++. A Python backend can do it
too (`torch.library` accepts the `AutocastPrivateUse1` key): a fallthrough for every op, then one
kernel per listed op that casts the device's floating inputs and calls the op below autocast.

The lists mirror the ones PyTorch documents for CUDA ("CUDA Ops that can autocast to float16",
"... to float32", "promote"), the lists out-of-tree backends copy; only ops the AMP suite checks
and a few neighbours are listed. `LOWER_OPS` run in the autocast dtype, `FLOAT32_OPS` in float32,
`PROMOTE_OPS` in the widest floating dtype of their inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.sim import state

LOWER_OPS = ("mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul", "linear", "conv1d", "conv2d", "conv3d",
             "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu", "mv", "addmv", "addr")
FLOAT32_OPS = ("mse_loss", "l1_loss", "smooth_l1_loss", "nll_loss", "nll_loss2d", "kl_div",
               "binary_cross_entropy_with_logits", "prod", "cdist", "soft_margin_loss", "cross_entropy_loss",
               "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss", "poisson_nll_loss",
               "softmax", "log_softmax", "layer_norm", "group_norm", "exp", "log", "pow", "sum", "cumsum")
PROMOTE_OPS = ("cat", "stack", "addcmul", "addcdiv", "atan2", "dot", "cross", "index_put", "scatter_add")

KEY = "AutocastPrivateUse1"
_EXCLUDE = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
_LIBS: list[torch.library.Library] = []

# Which dtype a listed op's floating inputs are cast to: (kind, the op's inputs) -> dtype.
CASTS: dict[str, Callable[[list[torch.Tensor]], torch.dtype]] = {
    "lower": lambda inputs: torch.get_autocast_dtype(state.NAME),
    "float32": lambda inputs: torch.float32,
    "promote": lambda inputs: _widest(inputs),
}
# op packet name -> the kind it runs as instead of its list's: empty unless a planted fault
# (sim/faults_amp.py) moves an op to the wrong list.
MOVED: dict[str, str] = {}


def _widest(inputs: list[torch.Tensor]) -> torch.dtype:
    out = torch.float16
    for t in inputs:
        out = torch.promote_types(out, t.dtype)
    return out


def _eligible(x: Any) -> bool:
    """A floating tensor on the sim (CUDA's `is_eligible`: other devices and dtypes pass unchanged)."""
    return isinstance(x, torch.Tensor) and x.is_floating_point() and x.device.type == state.NAME and x.dtype != torch.float64


def _flat(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    flat = [*args, *kwargs.values()]
    flat += [b for a in flat if isinstance(a, (list, tuple)) for b in a]
    return [x for x in flat if _eligible(x)]


def _kernel(op: torch._ops.OpOverload, kind: str) -> Callable[..., Any]:
    name = op._overloadpacket.__name__

    def run(*args: Any, **kwargs: Any) -> Any:
        dtype = CASTS[MOVED.get(name, kind)](_flat(args, kwargs))

        def cast(x: Any) -> Any:
            if isinstance(x, (list, tuple)):
                return type(x)(cast(y) for y in x)
            return x.to(dtype) if _eligible(x) else x

        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            return op(*cast(args), **{k: cast(v) for k, v in kwargs.items()})

    return run


def register() -> None:
    """Register the fallthrough and the listed ops' autocast kernels (once per process)."""
    if _LIBS:
        return
    everything = torch.library.Library("_", "IMPL")
    everything.fallback(torch.library.fallthrough_kernel, KEY)
    ops = torch.library.Library("aten", "IMPL")
    for kind, names in (("lower", LOWER_OPS), ("float32", FLOAT32_OPS), ("promote", PROMOTE_OPS)):
        for name in names:
            packet = getattr(torch.ops.aten, name, None)
            for overload in packet.overloads() if packet is not None else ():
                op = getattr(packet, overload)
                if "out" in overload or op._schema.is_mutable:
                    continue  # autocast leaves out= and in-place overloads alone, as CUDA's lists do
                ops.impl(op, _kernel(op, kind), KEY)
    _LIBS.extend((everything, ops))
