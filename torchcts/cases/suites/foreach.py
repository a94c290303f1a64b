"""Level 4 foreach and fused optimizer kernels: every `_foreach_*` overload this PyTorch has, vs CPU.

`torch.optim`'s foreach and fused implementations (the default on accelerators) run these
kernels, and a backend's multi-tensor-apply kernels chunk lists of tensors in ways a single
tensor op never does: the last chunk, an empty tensor in the middle, a non-contiguous member, a
0-dim member, members of different dtypes. The overloads are read from the dispatcher when the
case list is built (`_foreach_X`, `_foreach_X_` and the `*_out` forms: list, scalar,
list-of-scalars, tensor-scalar), so a new PyTorch's new overloads join without a hand list; one
this PyTorch lacks is recorded `missing`. Each case (one op family, one dtype) runs every overload
on three lists of five tensors (LAYOUTS; `dense`, `layouts`, `mixed_dtypes`) and compares the
results and every written list (in-place self, out=) with CPU's, or CPU's exception type. The
fused optimizer steps (`_fused_adam(w)_`, `_fused_sgd_`, `_fused_adagrad_` and their functional,
tensor-lr and out= forms) run one step on the same lists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import FLOATING, CaseContext, CaseSet, overload_names, qualified, run_overloads, sample, settle

SUITE = CaseSet("foreach")
cases = SUITE.cases
LEVEL = 4
DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "complex64")

# (base shape, view of the base): the members of the lists. The last is a strided 17-element view,
# so a kernel's tail (numel % vector width) lands on the last member of the list.
Layout = tuple[tuple[int, ...], Callable[[torch.Tensor], torch.Tensor]]
LAYOUTS: dict[str, tuple[Layout, ...]] = {
    "dense": (((3, 4), lambda t: t), ((2, 3, 2), lambda t: t), ((17,), lambda t: t)),
    "layouts": (((3, 4), lambda t: t), ((0,), lambda t: t), ((3, 5), lambda t: t.t()), ((), lambda t: t),
                ((34,), lambda t: t[::2])),
    "mixed_dtypes": (((3, 4), lambda t: t), ((0,), lambda t: t), ((3, 5), lambda t: t.t()), ((), lambda t: t),
                     ((34,), lambda t: t[::2])),
}
MM_SHAPES = {"self": (((3, 4), lambda t: t), ((5, 2), lambda t: t.t())),
             "mat2": (((4, 2), lambda t: t), ((3, 5), lambda t: t.t()))}
NON_NEGATIVE = ("exp_avg_sqs", "max_exp_avg_sqs", "state_sums")
FUSED_FLOATS = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.999, "weight_decay": 1e-2, "eps": 1e-8, "momentum": 0.9,
                "dampening": 0.0, "lr_decay": 0.0}


def _integral(dtype: torch.dtype) -> bool:
    return not (dtype.is_floating_point or dtype.is_complex)


def _member_dtype(dtype: torch.dtype, variant: str, i: int) -> torch.dtype:
    if variant != "mixed_dtypes" or i % 2 == 0:
        return dtype
    return torch.float64 if dtype == torch.float32 else torch.float32


class ForeachArgs:
    """The synth of compare_overload for foreach and fused ops: arguments by schema name and type."""

    def __init__(self, ctx: CaseContext, family: str, dtype: torch.dtype, variant: str,
                 flags: dict[str, bool] | None = None) -> None:
        self.ctx, self.family, self.dtype, self.variant = ctx, family, dtype, variant
        self.flags = flags or {}
        self.bases: dict[str, list[torch.Tensor]] = {}

    def layouts(self, name: str) -> tuple[Layout, ...]:
        return MM_SHAPES.get(name, MM_SHAPES["self"]) if self.family == "_foreach_mm" else LAYOUTS[self.variant]

    def tensors(self, name: str, device: torch.device) -> list[torch.Tensor]:
        if name == "state_steps":
            return [torch.tensor(3.0, device=device) for _ in self.layouts("self")]
        if name == "max_exp_avg_sqs" and not self.flags.get("amsgrad"):
            return []  # Adam wants none without amsgrad
        if name not in self.bases:  # CPU bases drawn once per list name; each call gets fresh copies
            self.bases[name] = [
                sample(shape, _member_dtype(self.dtype, self.variant, i), self.ctx.seed + 7 * i + len(name))
                for i, (shape, _) in enumerate(self.layouts(name))]
            if name in NON_NEGATIVE:
                self.bases[name] = [t.abs() for t in self.bases[name]]
        return [view(t.to(device, copy=True)) for t, (_, view) in zip(self.bases[name], self.layouts(name), strict=True)]

    def scalar(self, name: str) -> Any:
        if _integral(self.dtype):
            return 2
        return {"exponent": 1.5, "weight": 0.25, "self": 1.5}.get(name, 0.75)

    def __call__(self, arg: Any, device: torch.device) -> Any:
        kind, name = str(arg.type), arg.name
        n = len(self.layouts("self"))
        if kind == "List[Tensor]":  # `out` when CPU cannot compute the functional form (with_out)
            return self.tensors("self" if name == "out" else name, device)
        if kind == "Tensor" and name == "scalars":  # addcmul/addcdiv: one scalar per member, a CPU tensor
            return torch.tensor([0.5, 2.0, -1.5, 3.0, 0.25][:n], dtype=torch.float64)
        if kind == "Tensor" and name == "lr":
            return torch.tensor(FUSED_FLOATS["lr"], device=device)
        if kind == "Tensor":  # the tensor-scalar (ScalarTensor) overloads: a 0-dim tensor
            return torch.tensor(self.scalar(name), dtype=self.dtype, device=device)
        if kind == "number" and name not in ("alpha", "ord"):
            return self.scalar(name)
        if kind == "List[number]":
            return ([2, 3, 1, 2, 1] if _integral(self.dtype) else [0.5, 2.0, -1.5, 3.0, 0.25])[:n]
        if kind == "float" and name in FUSED_FLOATS:
            return FUSED_FLOATS[name]
        if kind == "bool" and name != "non_blocking":
            return self.flags.get(name, False)
        raise KeyError(name)  # the schema's default


def run_family(ctx: CaseContext, dtype: torch.dtype, family: str, overloads: list[tuple[str, str]],
               variants: tuple[str, ...], flags: tuple[dict[str, bool], ...] = ({},)) -> None:
    outcome: dict[str, str] = {}
    for variant in variants:
        for flag in flags:
            label = variant + "".join(f" {k}={v}" for k, v in flag.items())
            outcome.update(run_overloads(ctx, overloads, ForeachArgs(ctx, family, dtype, variant, flag), variant=label))
    settle(ctx, outcome)


def _families() -> dict[str, list[tuple[str, str]]]:
    """family (the functional name) -> every (op name, overload) of it: functional, in-place, out."""
    out: dict[str, list[tuple[str, str]]] = {}
    for name, overloads in overload_names("_foreach_").items():
        out.setdefault(name.removesuffix("_"), []).extend((name, o) for o in overloads)
    return out


FUSED = ("_fused_adam", "_fused_adamw", "_fused_sgd", "_fused_adagrad")


def _fused() -> dict[str, list[tuple[str, str]]]:
    names = overload_names("_fused_")
    return {f: [(n, o) for n in (f, f"{f}_") for o in names.get(n, [])] for f in FUSED if f"{f}_" in names}


def foreach_case(ctx: CaseContext, dtype: torch.dtype, family: str) -> None:
    run_family(ctx, dtype, family, FAMILIES[family], tuple(LAYOUTS))


def fused_case(ctx: CaseContext, dtype: torch.dtype, family: str) -> None:
    """One optimizer step on dense lists (the optimizers' parameters and states: CPU's functional
    fused kernels leave a non-dense member's buffer unset, so no reference exists there); Adam with
    and without amsgrad, each with maximize."""
    flags: tuple[dict[str, bool], ...] = ({}, {"maximize": True})
    if "adam" in family:
        flags = ({}, {"amsgrad": True, "maximize": True})
    elif family == "_fused_sgd":
        # CPU's functional float16/bfloat16 SGD step after the first returns a momentum buffer that
        # differs from call to call (measured on torch 2.13): no reference, so those dtypes take the
        # first-step path (buffer = gradient), the others both.
        later = dtype not in (torch.float16, torch.bfloat16)
        flags = ({"is_first_step": True}, {"maximize": True, "is_first_step": not later})
    run_family(ctx, dtype, family, FUSED_FAMILIES[family], ("dense",), flags)


# Read from the dispatcher once per process (when the module is imported), not once per case.
FAMILIES = _families()
FUSED_FAMILIES = _fused()


def _register() -> None:
    for family, overloads in FAMILIES.items():
        SUITE.case(f"{family.removeprefix('_foreach_')}", level=LEVEL, dtypes=DTYPES,
                   requires=("foreach",), ops=tuple(qualified(n, o) for n, o in overloads),
                   params={"lists": {"family": family}})(foreach_case)
    for family, overloads in FUSED_FAMILIES.items():
        SUITE.case(f"fused/{family.removeprefix('_fused_')}", level=LEVEL, dtypes=FLOATING,
                   requires=("training", "foreach"), ops=tuple(qualified(n, o) for n, o in overloads),
                   params={"step": {"family": family}})(fused_case)


_register()
