"""The sim's planted faults of the field suite (issue 50): bugs real backends shipped, each planted
as its report describes it, and caught by the field case that replays that report. Each sits where
an OpInfo-vs-CPU sweep does not look: past a size OpInfo's samples never reach, inside the float16
tolerance, behind an index dtype and length its samples do not use (tests/suites/test_field_suite.py shows
the OpInfo cases of the same op and dtype pass). Joined to the registry in faults.py.
"""

from __future__ import annotations

import torch

from torchcts.sim.fault_model import Fault, on_op

aten = torch.ops.aten


@on_op("mm")
def _mm_long_k_overread(func, args, kwargs, call):
    """float32 mm with K > 32768 and both output dims >= 16 reads the last K tile whole (pytorch#193487):
    the terms past K come from whatever follows the operands, modelled as 1.0 each."""
    a, b = args[0], args[1]
    out = call(*args, **kwargs)
    k = a.shape[-1]
    if (func is not aten.mm.default or a.dtype != torch.float32 or k <= 32768 or k % 64 == 0
            or a.shape[0] < 16 or b.shape[-1] < 16):
        return out
    return out + float(64 - k % 64)


POW_FORMS = (aten.pow.Tensor_Tensor, aten.pow.Tensor_Tensor_out, aten.pow_.Tensor)  # one kernel, every form


@on_op("pow", "pow_")
def _pow_float16_ulp(func, args, kwargs, call):
    """float16 pow of a base in (0, 1) computed through an approximate exp2(y * log2(x)) that lands one ulp
    towards zero (microsoft/DirectML#370: 0.6094 ** 0.5024 gave 0.7793, not 0.7798): inside any float16
    tolerance. Every form of the one kernel (functional, out=, in-place), as a kernel bug is: the forms
    agree with each other, and only the report's inputs show it."""
    base = args[0]
    if func not in POW_FORMS or not isinstance(base, torch.Tensor):
        return call(*args, **kwargs)
    low_base = (base > 0) & (base < 1)  # before an in-place call overwrites the base
    out = call(*args, **kwargs)
    if out.dtype != torch.float16 or not out.numel():
        return out
    low = low_base & (out != 0) & out.isfinite()
    wrong = torch.where(low, torch.nextafter(out, torch.zeros_like(out)), out)
    return wrong if func is aten.pow.Tensor_Tensor else out.copy_(wrong)


@on_op("index_select")
def _index_select_int32_first_32(func, args, kwargs, call):
    """index_select with an int32 index of more than 32 entries reads only its first 128-byte stick: entry i
    is taken as entry i % 32 (torch-spyre#3851)."""
    index = args[2]
    if func is not aten.index_select.default or index.dtype != torch.int32 or index.numel() <= 32 or index.dim() != 1:
        return call(*args, **kwargs)
    stick = index[torch.arange(index.numel()) % 32]
    return call(args[0], args[1], stick, **kwargs)


FAULTS = (
    Fault("mm_long_k_overread", "float32 mm with K > 32768 (not a multiple of 64) and M, N >= 16 sums the terms "
          "past K of its last tile (1.0 each)", "field", 4, ("field/V4/pytorch-pytorch-193487/*",),
          _mm_long_k_overread, dtype="float32", op="mm"),
    Fault("pow_float16_ulp", "float16 pow of a base in (0, 1) is one ulp towards zero (inside the tolerance)",
          "field", 2, ("field/V2/microsoft-DirectML-370/*",), _pow_float16_ulp, dtype="float16", op="pow"),
    Fault("index_select_int32_first_32", "index_select with an int32 index longer than 32 uses entry i % 32",
          "field", 2, ("field/V3/torch-spyre-torch-spyre-3851/*",), _index_select_int32_first_32, op="index_select"),
)
