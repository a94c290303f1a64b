"""pytorch_ocl's own bugs, each shown as a user would: a tiny torch snippet run on `ocl` and on the
CPU, whose answers differ (or where ocl raises and the CPU does not). tests/real_backends/test_real_backend_ocl.py
runs this file to prove every bug its ledger expects is real, and is still there.

    PYTHONPATH=../shared/backends python tests/helpers/ocl_bugs.py [BUG...]   # a {bug: [ocl, cpu]} line each

Each function returns (what ocl gives, what the CPU gives); a bug holds when they differ.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import torch


def _on(device: str, fn: Callable[[str], Any]) -> Any:
    """fn(device)'s answer, or the first line of what it raised."""
    try:
        return fn(device)
    except Exception as exc:  # noqa: BLE001 - raising where the CPU does not is the bug
        return f"raised {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]}"


def _both(fn: Callable[[str], Any]) -> tuple[Any, Any]:
    return _on("ocl", fn), _on("cpu", fn)


def zero_dim_result_is_1d() -> tuple[Any, Any]:
    """abs of a 0-dim tensor comes back with shape [1]."""
    return _both(lambda d: list(torch.abs(torch.tensor(-2.0).to(d)).shape))


def abs_negative_zero() -> tuple[Any, Any]:
    """abs(-0.0) keeps the sign: -0.0 where the CPU (and IEEE 754's fabs) gives +0.0."""
    return _both(lambda d: torch.abs(torch.tensor([-0.0]).to(d)).cpu().signbit().tolist())


def eye_zero_is_1d() -> tuple[Any, Any]:
    """eye(0) comes back with shape [0], not [0, 0]."""
    return _both(lambda d: list(torch.eye(0, device=d).shape))


def logical_and_0d_is_empty() -> tuple[Any, Any]:
    """logical_and of two 0-dim tensors comes back empty (shape [0])."""
    return _both(lambda d: list(torch.logical_and(torch.tensor(True).to(d), torch.tensor(False).to(d)).shape))


def _out_shape(op: Any, size: int) -> tuple[Any, Any]:
    """The shape `op(ones(2, 2), out=empty(size))` leaves its destination with, on the device and CPU."""
    def run(d: str) -> list[int]:
        out = torch.empty(size, device=d)
        op(torch.ones(2, 2).to(d), out=out)
        return list(out.shape)
    return _both(run)


def out_not_resized() -> tuple[Any, Any]:
    """out= of another shape is not resized: sin(x, out=empty(1)) leaves out with shape [1]."""
    return _out_shape(torch.sin, 1)


def out_of_wrong_shape_raises() -> tuple[Any, Any]:
    """abs into a non-empty out= of the wrong shape raises (a dlprimitives assertion) instead of resizing."""
    return _out_shape(torch.abs, 3)


def out_offset_ignored() -> tuple[Any, Any]:
    """abs into an out= view with a storage offset writes at the start of the storage."""
    def run(d: str) -> list[float]:
        base = torch.zeros(7, device=d)
        torch.abs(-torch.arange(1.0, 5.0).to(d), out=base[3:])
        return base.cpu().tolist()
    return _both(run)


def where_host_condition_result_on_cpu() -> tuple[Any, Any]:
    """where with a 0-dim CPU condition (allowed, as for any 0-dim CPU operand) returns a CPU tensor."""
    return _both(lambda d: torch.where(torch.tensor(True), torch.ones(3).to(d), 0.0).device.type == d)


def softmax_does_not_build() -> tuple[Any, Any]:
    """softmax's OpenCL kernel fails to build on PoCL's CPU device (work_group_reduce_add missing)."""
    return _both(lambda d: torch.softmax(torch.arange(16.0).reshape(4, 4).to(d), 1).cpu().sum().item() > 0)


def linear_bias_backward_does_not_build() -> tuple[Any, Any]:
    """The backward of a Linear layer with a bias: its bwd_bias OpenCL kernel fails to build on PoCL."""
    def run(d: str) -> bool:
        layer = torch.nn.Linear(3, 2).to(d)
        layer(torch.ones(4, 3).to(d)).sum().backward()
        return layer.bias.grad is not None
    return _both(run)


BUGS: dict[str, Callable[[], tuple[Any, Any]]] = {fn.__name__: fn for fn in (
    zero_dim_result_is_1d, abs_negative_zero, eye_zero_is_1d, logical_and_0d_is_empty, out_not_resized, out_of_wrong_shape_raises,
    out_offset_ignored, where_host_condition_result_on_cpu, softmax_does_not_build, linear_bias_backward_does_not_build,
)}


if __name__ == "__main__":
    import sys

    import pytorch_ocl  # noqa: F401 - registers `ocl`

    for name in sys.argv[1:] or BUGS:  # one line per bug, as soon as it is shown: a crash loses no other
        print(json.dumps({name: list(BUGS[name]())}), flush=True)
