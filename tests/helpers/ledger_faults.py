"""A `backend_import` for device "cpu" that plants faults, driven by environment variables.

Both the case and its repro call the op first for the CPU reference, then for the device; on a
real device the two run different kernels. Here both are CPU, so a fault that should look like a
broken device kernel hits every second float32 call (the "device" one).

- LEDGER_FAULTS_WRONG=add,mul   these ops return wrong values on every second float32 call
- LEDGER_FAULTS_MISSING=sub     these ops raise the dispatcher's missing-kernel error for float32
- LEDGER_FAULTS_FLAKY=neg:PATH  these ops raise once (while PATH does not exist, then create it)
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import torch


def _is_f32(args: tuple) -> bool:
    return any(isinstance(a, torch.Tensor) and a.dtype == torch.float32 for a in args)


def _wrong(fn):
    calls = [0]

    @functools.wraps(fn)
    def op(*args, **kwargs):
        out = fn(*args, **kwargs)
        if _is_f32(args):
            calls[0] += 1
            if calls[0] % 2 == 0:
                return out + 1.0
        return out

    return op


def _missing(fn, name):
    @functools.wraps(fn)
    def op(*args, **kwargs):
        if _is_f32(args):
            raise NotImplementedError(
                f"Could not run 'aten::{name}.Tensor' with arguments from the 'CPU' backend. This could be "
                "because the operator doesn't exist for this backend"
            )
        return fn(*args, **kwargs)

    return op


def _flaky(fn, marker: Path):
    @functools.wraps(fn)
    def op(*args, **kwargs):
        if _is_f32(args) and not marker.exists():
            marker.write_text("failed once\n")
            raise RuntimeError(f"transient device fault at 0x{id(marker):x} (stream 3)")
        return fn(*args, **kwargs)

    return op


def _names(var: str) -> list[str]:
    return [n for n in os.environ.get(var, "").split(",") if n]


for _n in _names("LEDGER_FAULTS_WRONG"):
    setattr(torch, _n, _wrong(getattr(torch, _n)))
for _n in _names("LEDGER_FAULTS_MISSING"):
    setattr(torch, _n, _missing(getattr(torch, _n), _n))
for _spec in _names("LEDGER_FAULTS_FLAKY"):
    _n, _, _path = _spec.partition(":")
    setattr(torch, _n, _flaky(getattr(torch, _n), Path(_path)))
