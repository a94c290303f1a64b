"""Capabilities three ways (issue 32 item 5): what the backend reports, and what the suite observes.

`capabilities/probe` (level 1, no dtype, so it runs in every run) records in its `info`:
- `reported`: the backend's own answers (`compat.reported_capabilities`: `torch.accelerator` where
  it is this device's, and the device module's `is_available`, `device_count`, `is_bf16_supported`,
  `get_amp_supported_dtype`, `get_device_capability` where they exist);
- `observed`: per dtype this PyTorch has (claimed or not), whether empty, zeros, a copy to the
  device and back, and an add (where CPU adds that dtype) work on the device.
`results/reports/capabilities.py` compares both with the manifest's claims in report.html and summary.md.
Claims decide the status: the case fails only when a claimed dtype's probe fails; everything
else that disagrees is a finding in the report, never a failure.
"""

from __future__ import annotations

import warnings

import torch

from torchcts.cases.api import MANIFEST_DTYPES, CaseContext, CaseSet, compat, expect, first_line

SUITE = CaseSet("capabilities")
cases = SUITE.cases


def _cpu_adds(dtype: torch.dtype) -> bool:
    try:
        torch.zeros(2, dtype=dtype) + torch.zeros(2, dtype=dtype)
    except Exception:  # noqa: BLE001 - no CPU kernel: add is not part of this dtype's probe
        return False
    return True


def _probe(device: torch.device, dtype: torch.dtype) -> str:
    """'works', or the first step that failed and why."""
    steps = [
        ("empty", lambda: torch.empty(4, dtype=dtype, device=device)),
        ("zeros", lambda: torch.zeros(4, dtype=dtype, device=device)),
        ("copy", lambda: _round_trip(device, dtype)),
    ]
    if _cpu_adds(dtype):
        steps.append(("add", lambda: _add(device, dtype)))
    for step, run in steps:
        try:
            run()
        except Exception as exc:  # noqa: BLE001 - a failing step is the observation
            return f"fails: {step}: {type(exc).__name__}: {first_line(exc, 160)}"
    return "works"


def _round_trip(device: torch.device, dtype: torch.dtype) -> None:
    src = torch.arange(4).to(dtype)
    back = src.to(device, copy=True).cpu()
    if back.dtype != dtype or not torch.equal(back.view(torch.uint8), src.view(torch.uint8)):
        raise AssertionError(f"the copy to the device and back changed the bytes: sent {_bytes(src)}, "
                             f"got back {_bytes(back)} ({back.dtype})")


def _add(device: torch.device, dtype: torch.dtype) -> None:
    a = torch.ones(4).to(dtype)
    got = (a.to(device, copy=True) + a.to(device, copy=True)).cpu()
    if not torch.equal(got.view(torch.uint8), (a + a).view(torch.uint8)):  # bytes: no equal for every dtype
        raise AssertionError(f"add gave bytes {_bytes(got)}, CPU {_bytes(a + a)} (values {got.tolist()}, "
                             f"CPU {(a + a).tolist()})")


def _bytes(t: torch.Tensor) -> list[int]:
    """The bytes a probe compares, as numbers: a bool holding 2 prints True like one holding 1."""
    return t.contiguous().view(torch.uint8).tolist()


@SUITE.case("probe", level=1)
def probe(ctx: CaseContext) -> None:
    """Record what the backend reports and which dtypes basically work; fail on a claimed one that does not."""
    with warnings.catch_warnings():  # "ComplexHalf support is experimental": the probe says what works
        warnings.simplefilter("ignore", UserWarning)
        observed = {name: _probe(ctx.device, getattr(torch, name)) for name in MANIFEST_DTYPES
                    if isinstance(getattr(torch, name, None), torch.dtype)}
    ctx.describe(reported=compat.reported_capabilities(ctx.device_type), observed=observed)
    broken = {n: why for n, why in observed.items() if ctx.claims_dtype(n) and why != "works"}
    named = "; ".join(f"{n} {why.removeprefix('fails: ')}" for n, why in sorted(broken.items()))
    expect(not broken, f"claimed dtypes fail the basic probe (empty, zeros, copy, add): {named}", failing=broken)
