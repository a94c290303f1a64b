"""Run as a script: each axis fault (torchcts/sim/faults_axes.py) is wrong in its axis's situation
and right beside it, where only the axis differs (the operand on the device or a Python number, a
blocking copy or a contiguous source, a contiguous input); and the clean sim is right in both.
Prints "<name> ok" or "<name> FAIL: why" per fault, then "DONE".
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

import torchcts.sim  # noqa: F401 - registers the device
from torchcts.sim import faults, faults_axes, tensor

S = "sim"
F64 = torch.float64


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    return torch.equal(got.cpu(), want)


# name -> (the axis's situation right?, the same call without the axis right?)
def add_host_float64_as_float32() -> tuple[bool, bool]:
    x, big = torch.randn(4, 3, dtype=F64), 1e300
    return (_same(x.to(S) + torch.tensor(big, dtype=F64), x + big),
            _same(x.to(S) + torch.tensor(big, dtype=F64).to(S), x + big) and _same(x.to(S) + big, x + big))


def remainder_host_divisor_sign_lost() -> tuple[bool, bool]:
    x, d = torch.randn(4, 3, dtype=F64) * 9, torch.tensor(-7.0, dtype=F64)
    want = torch.remainder(x, d)
    return (_same(torch.remainder(x.to(S), d), want),
            _same(torch.remainder(x.to(S), d.to(S)), want) and _same(torch.remainder(x.to(S), -7.0), want))


def xlogy_host_operand_as_int() -> tuple[bool, bool]:
    x, y = torch.rand(4, 3, dtype=F64) + 0.5, torch.tensor(3.17, dtype=F64)
    want = torch.xlogy(x, y)
    return (_same(torch.xlogy(x.to(S), y), want),
            _same(torch.xlogy(x.to(S), y.to(S)), want) and _same(torch.xlogy(x.to(S), 3.17), want))


def mul_host_view_reads_storage_start() -> tuple[bool, bool]:
    x, host = torch.randn(4, 3), torch.tensor([5.0, -2.5])
    want = x * -2.5
    beside = (_same(x.to(S) * torch.tensor(-2.5), want) and _same(x.to(S) * host[1].to(S), want)
              and _same(x.to(S) * -2.5, want))  # a fresh host scalar, a device view, a Python number
    return _same(x.to(S) * host[1], want), beside


def d2h_non_blocking_drops_offset() -> tuple[bool, bool]:
    base = torch.arange(120).reshape(12, 10)
    view = base.to(S)[3:9]
    blocking = _same(view.to("cpu"), base[3:9]) and _same(base.to(S)[0:6].to("cpu", non_blocking=True), base[0:6])
    return _same(view.to("cpu", non_blocking=True), base[3:9]), blocking


def h2d_non_blocking_strided_as_contiguous() -> tuple[bool, bool]:
    src = torch.arange(120.0).reshape(12, 10)[1::2, ::3]
    dst = torch.zeros(src.shape).to(S)
    dst.copy_(src, non_blocking=True)
    wrong = _same(src.to(S, non_blocking=True), src) and _same(dst, src)
    return wrong, _same(src.to(S), src) and _same(src.contiguous().to(S, non_blocking=True), src)


def copy_to_host_drops_offset() -> tuple[bool, bool]:
    base = torch.arange(120.0).reshape(12, 10)

    def into_host(non_blocking: bool) -> torch.Tensor:
        got = torch.zeros(6, 10)
        got.copy_(base.to(S)[3:9], non_blocking=non_blocking)
        return got

    beside = (torch.equal(into_host(True), base[3:9]) and _same(base.to(S)[3:9], base[3:9])
              and torch.equal(torch.zeros(6, 10).copy_(base.to(S)[0:6]), base[0:6]))
    return torch.equal(into_host(False), base[3:9]), beside


def argmax_dense_memory_order() -> tuple[bool, bool]:
    m, base = torch.randn(5, 7).t(), torch.randn(10, 14)
    beside = (_same(m.contiguous().to(S).argmax(), m.argmax()) and _same(m.to(S).argmax(0), m.argmax(0))
              and _same(base.to(S)[::2, ::2].argmax(), base[::2, ::2].argmax()))  # contiguous, along a dim, sliced
    return _same(m.to(S).argmax(), m.argmax()), beside


PROBES: dict[str, Callable[[], tuple[bool, bool]]] = {
    name: fn for name, fn in globals().items() if name in {f.name for f in faults_axes.FAULTS}
}


def main() -> int:
    torch.manual_seed(0)
    bad = 0
    for fault in faults_axes.FAULTS:
        probe = PROBES.get(fault.name)
        if probe is None:
            print(f"{fault.name} FAIL: no probe")
            bad += 1
            continue
        if probe() != (True, True):
            print(f"{fault.name} FAIL: wrong without the fault")
            bad += 1
            continue
        saved = dict(tensor.OP_HOOKS)
        faults.activate([fault.name])
        try:
            situation, beside = probe()
        finally:
            tensor.OP_HOOKS.clear()
            tensor.OP_HOOKS.update(saved)
        why = "right in its situation" if situation else "wrong beside its situation" if not beside else ""
        print(f"{fault.name} FAIL: planted, {why}" if why else f"{fault.name} ok")
        bad += bool(why)
    print("DONE")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
