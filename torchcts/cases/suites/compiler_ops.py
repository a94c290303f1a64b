"""Level 6 torch.compile on a bounded, representative set of OpInfo ops (capability `compile`).

The `compiler` suite compiles a few hand-written functions and models; a backend's compiler
path (its decompositions, lowerings, fake-tensor kernels, input-mutation handling, guards and
recompilation) has to get every op right, and OpInfo runs everything eagerly. Here each op of
GROUPS is compiled on its first SAMPLES OpInfo samples, in several modes (MODES), and the compiled
result on the device is compared with eager on the device (category `compile`) and with eager on
CPU (the op's own tolerance category):
- `static`: one compilation per sample shape;
- `dynamic`: one `dynamic=True` compilation serving every sample;
- `graph_break`: the op, a graph break, the op again on the result (two graphs, a guard between);
- `inplace`: the op's in-place variant on a graph input: the mutation must reach the caller's tensor.

The backend is compat.compile_backend: inductor where PyTorch generates code for the device type,
aot_eager otherwise (PyTorch's device-agnostic path: dynamo, AOTAutograd and functionalisation
with the device's own eager kernels; it needs no C++ compiler), TORCHCTS_COMPILE_BACKEND to override.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import (
    CaseContext,
    CaseSet,
    compiled,
    copy_sample,
    generate,
    lookup,
    select_samples,
    synced,
    tolerance_category,
)

SUITE = CaseSet("compiler_ops")
cases = SUITE.cases
LEVEL = 6
SAMPLES = 3
REQUIRES = ("compile",)
F32 = ("float32",)

# group -> OpInfo names (a bounded representative set; every op is in PyTorch 2.7's op_db)
GROUPS: dict[str, tuple[str, ...]] = {
    "elementwise": ("add", "mul", "sin", "exp", "sigmoid", "clamp", "where"),
    "reduction": ("sum", "amax", "mean", "var", "cumsum", "softmax"),
    "matmul": ("mm", "bmm", "matmul", "nn.functional.linear"),
    "indexing": ("index_select", "gather", "take_along_dim", "index_add"),
    "views": ("transpose", "permute", "narrow", "unsqueeze", "reshape"),
}
# ops with an in-place variant whose mutation of a graph input is checked
INPLACE = ("add", "mul", "clamp", "sigmoid", "index_add")
DYNAMIC = ("add", "sin", "sum", "softmax", "mm", "index_select", "transpose")
GRAPH_BREAK = ("mul", "sum", "matmul", "permute")


def _samples(ctx: CaseContext, op: str, dtype: torch.dtype) -> tuple[Any, list[Any]]:
    info = lookup(op)
    picked = [s for _, s in select_samples(generate(info, dtype, device=ctx.device), None, None)
              if isinstance(s.input, torch.Tensor) and not s.broadcasts_input][:SAMPLES]
    if not picked:
        ctx.not_applicable(f"OpInfo {op} has no tensor sample for {dtype}")
    return info, picked


def _check(ctx: CaseContext, info: Any, fn: Callable[..., Any], fn_c: Callable[..., Any], s: Any,
           after: Callable[[Any], Any] = lambda out: out) -> bool:
    """compiled vs eager on the device, and vs eager on CPU; `after` picks what to compare.
    False when the CPU rejects the sample (nothing compared)."""
    cpu, dev, dev2 = copy_sample(s, "cpu"), copy_sample(s, ctx.device), copy_sample(s, ctx.device)
    try:
        expected = after((fn(cpu.input, *cpu.args, **cpu.kwargs), cpu))
    except Exception:  # noqa: BLE001 - CPU rejects the sample: nothing to compare
        return False
    got = synced(after((fn_c(dev.input, *dev.args, **dev.kwargs), dev)))
    eager = synced(after((fn(dev2.input, *dev2.args, **dev2.kwargs), dev2)))
    ctx.assert_close(got, eager, category="compile")
    ctx.assert_close(got, expected, category=tolerance_category(info))
    return True


def compile_op(ctx: CaseContext, dtype: torch.dtype, op: str, mode: str) -> None:
    import torch._dynamo

    info, samples = _samples(ctx, op, dtype)
    ctx.describe(op=op, mode=mode)
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mode == "inplace":
            fn = info.inplace_variant
            fn_c = compiled(ctx, lambda x, *a, **k: fn(x, *a, **k))
            for i, s in enumerate(samples):
                ctx.describe(sample_index=i)
                checked += _check(ctx, info, fn, fn_c, s, after=lambda r: r[1].input)  # the mutated input itself
            return _checked_any(ctx, checked)
        fn = info.op
        if mode == "graph_break":
            def body(x: torch.Tensor, *a: Any, **k: Any) -> Any:
                y = fn(x, *a, **k)
                torch._dynamo.graph_break()
                return fn(y, *a, **k) if isinstance(y, torch.Tensor) and y.shape == x.shape else y

            fn_c, ref = compiled(ctx, body), body
        else:
            fn_c, ref = compiled(ctx, fn, **({"dynamic": True} if mode == "dynamic" else {})), fn
        for i, s in enumerate(samples):
            ctx.describe(sample_index=i)
            checked += _check(ctx, info, ref, fn_c, s, after=lambda r: r[0])
    _checked_any(ctx, checked)


def _checked_any(ctx: CaseContext, checked: int) -> None:
    """Never a pass that compared nothing: the CPU rejecting every sample is not_applicable."""
    ctx.info["samples_checked"] = checked
    if not checked:
        ctx.not_applicable("the CPU rejects every OpInfo sample picked: nothing to compare")


for _group, _ops in GROUPS.items():
    for _op in _ops:
        _modes = ["static"] + [m for m, names in (("dynamic", DYNAMIC), ("graph_break", GRAPH_BREAK),
                                                    ("inplace", INPLACE)) if _op in names]
        SUITE.case(f"{_group}/{_op}", level=LEVEL, dtypes=F32, requires=REQUIRES, ops=(_op, f"compile::{_group}"),
                   params={m: {"op": _op, "mode": m} for m in _modes})(compile_op)
