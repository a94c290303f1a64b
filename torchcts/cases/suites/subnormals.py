"""Level 5 subnormal (denormal) values, judged by the manifest's `subnormals` claim (issue 39 item 4).

PyTorch's CPU and CUDA keep subnormal results and read subnormal inputs as they are, unless
`torch.set_flush_denormal(True)`. An accelerator may flush them to zero by design (FTZ: results;
DAZ: inputs), and the default tolerances cannot tell: a flushed 1e-40 is 1e-40 away from the right
answer, far inside any atol. So subnormals are a claim, compared bit for bit (zeros of either sign
are equal, NaNs where CPU has them):

- `preserve` (the default): each result equals CPU's with flushing off; a backend that flushes fails,
  the message says which claim it broke and how to declare the other.
- `flush`: each result equals CPU's with `torch.set_flush_denormal(True)` (x86 FTZ + DAZ), for float32
  and float64, the dtypes that switch governs: a backend that flushes some ops and not others fails.
  float16 and bfloat16 are not_applicable under it (CPU computes them through float32 and rounds in
  software: there is no flushing reference), said in each record.

Each case produces subnormals from normal inputs (a product, a difference, a narrowing cast) or
consumes subnormal inputs (a sum of two, a product back to the normal range, a widening cast); the
values are exact in every IEEE implementation, so the comparison is exact. Records carry
`info.subnormals`, the claim they judged.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from torchcts.cases.api import FLOATING, CaseContext, CaseSet, expect, on_cpu, to_device

SUITE = CaseSet("subnormals")
cases = SUITE.cases
LEVEL = 5
FLUSHED_DTYPES = ("float32", "float64")  # what torch.set_flush_denormal governs on CPU
KEPT = {"preserve": "kept", "flush": "flushed to zero"}
WIDER = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float64}


def normals(dtype: torch.dtype) -> torch.Tensor:
    """Normal values from the smallest normal up, both signs: halving them lands in the subnormals."""
    tiny = torch.finfo(dtype).tiny
    steps = torch.tensor([1.0, 1.25, 1.5, 1.75, 2.0, 3.0, 1.0, 1.5], dtype=torch.float64)
    signs = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0], dtype=torch.float64)
    return (tiny * steps * signs).to(dtype)


def mantissa_bits(dtype: torch.dtype) -> int:
    """The stored mantissa bits: 2^-bits of the smallest normal is the smallest subnormal."""
    return int(round(-math.log2(torch.finfo(dtype).eps)))


def subnormals(dtype: torch.dtype) -> torch.Tensor:
    """Subnormal values of `dtype` (2^-1 .. 2^-(mantissa bits) of the smallest normal), both signs."""
    info, bits = torch.finfo(dtype), mantissa_bits(dtype)
    ks = torch.tensor([1, 2, 3, bits // 2, bits - 1, bits], dtype=torch.float64)
    signs = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    return (info.tiny * torch.pow(2.0, -ks) * signs).to(dtype)


NARROWER = ("float16", "bfloat16", "float32")  # the dtypes with a wider one to cast from and to
# check -> (what it does, the op it declares, the dtypes, the call on (normals, subnormals) of the case's dtype)
CHECKS: dict[str, tuple[str, str, tuple[str, ...], Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]] = {
    "produce/mul": ("a product of normals with a subnormal result", "aten::mul.Tensor", FLOATING,
                    lambda n, s: n * torch.full_like(n, 0.25)),
    "produce/sub": ("a difference of close normals with a subnormal result", "aten::sub.Tensor", FLOATING,
                    lambda n, s: n - n * torch.full_like(n, 0.75)),
    "produce/cast": ("a narrowing cast whose result is subnormal", "aten::_to_copy", NARROWER,
                     lambda n, s: s.to(WIDER[s.dtype]).mul(0.5).to(s.dtype)),
    "consume/add": ("a sum of subnormal inputs", "aten::add.Tensor", FLOATING, lambda n, s: s + s.flip(0)),
    "consume/mul": ("a product taking subnormal inputs back to the normal range", "aten::mul.Tensor", FLOATING,
                    lambda n, s: s * torch.full_like(s, 2.0 ** (mantissa_bits(s.dtype) + 1))),
    "consume/cast": ("a widening cast of subnormal inputs", "aten::_to_copy", NARROWER,
                     lambda n, s: s.to(WIDER[s.dtype])),
}


def identical(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """Equal values (zeros of either sign), NaN where the reference has NaN, the same dtype."""
    return actual.dtype == expected.dtype and torch.equal(actual.isnan(), expected.isnan()) and \
        torch.equal(actual.nan_to_num(0.0), expected.nan_to_num(0.0))


def flushed_reference(fn: Callable[[], torch.Tensor]) -> torch.Tensor | None:
    """`fn()` on CPU with denormals flushed (FTZ + DAZ), or None where this CPU cannot flush."""
    if not torch.set_flush_denormal(True):
        return None
    try:
        return fn()
    finally:
        torch.set_flush_denormal(False)


def _family(check: str) -> None:
    what, op, dtypes, fn = CHECKS[check]

    @SUITE.family(check, qualname=f"subnormal_{check.replace('/', '_')}", level=LEVEL, dtypes=dtypes, ops=(op,))
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        mode = ctx.manifest.subnormals
        ctx.describe(subnormals=mode, what=what)
        name = str(dtype).removeprefix("torch.")
        if mode == "flush" and name not in FLUSHED_DTYPES:
            ctx.not_applicable(f"the 'flush' claim covers {' and '.join(FLUSHED_DTYPES)}: CPU computes {name} "
                               "through float32 and rounds in software, so there is no flushing reference")
        n, s = on_cpu(normals, dtype), on_cpu(subnormals, dtype)
        expected = on_cpu(lambda: fn(n, s)) if mode == "preserve" else on_cpu(flushed_reference, lambda: fn(n, s))
        if expected is None:
            ctx.not_applicable("this CPU cannot flush denormals (torch.set_flush_denormal returned False): no "
                               "reference for the 'flush' claim")
        dn, ds = to_device(ctx, n, s)
        actual = fn(dn, ds).cpu()
        other = "flush" if mode == "preserve" else "preserve"
        expect(identical(actual, expected),
               f"{what}: the device's result is not CPU's with subnormals {KEPT[mode]}, as the manifest claims "
               f"(subnormals: '{mode}'); if the backend's subnormals are {KEPT[other]} by design, claim "
               f"subnormals: '{other}'", got=actual.tolist(), expected=expected.tolist())


for _check in CHECKS:
    _family(_check)
