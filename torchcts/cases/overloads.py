"""Aten overloads called by name on CPU and on the device: the shared engine of the surface suites.

The `foreach`, `special_values` and `out_variants` suites enumerate the overloads this PyTorch
build has (from the dispatcher, when the case list is built, so the list never rots), build each
overload's arguments from its schema with a per-suite `Synth` (argument name and type -> value on
a device), call it on CPU and on the device under test, and compare what CPU says: the returned
values, every argument the schema marks as written (`Tensor(a!)`), or, when CPU raises, an
exception of the same type from the device. A CPU without a kernel gives no reference. The CPU
side (inputs, reference, out= sizing) runs unobserved: TorchCTS's work, not the device's
(cases/observe.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from torchcts.cases.context import CaseContext
from torchcts.cases.helpers import expect_raises
from torchcts.cases.observe import unobserved
from torchcts.compat import is_missing_kernel
from torchcts.oracle.exactness import exactness_of
from torchcts.oracle.weak import constant_overload

__all__ = ["CHECKED", "NO_CPU_KERNEL", "RAISES", "Synth", "build_args", "compare_overload", "functional_of", "mirror",
           "overload_names", "qualified", "resolve", "run_overloads", "settle", "with_out", "written"]

CHECKED, RAISES, NO_CPU_KERNEL = "checked", "raises", "no_cpu_kernel"

# (argument, device) -> value; raising KeyError means "use the schema's default".
Synth = Callable[[Any, torch.device], Any]


def overload_names(prefix: str) -> dict[str, list[str]]:
    """aten op name -> its overload names ('default' for the unnamed one), for every op whose name
    starts with `prefix` in this build's dispatcher."""
    out: dict[str, list[str]] = {}
    for full in sorted(torch._C._dispatch_get_all_op_names()):
        if not full.startswith(f"aten::{prefix}"):
            continue
        name, _, overload = full.removeprefix("aten::").partition(".")
        out.setdefault(name, []).append(overload or "default")
    return out


def qualified(name: str, overload: str) -> str:
    """The coverage name of an overload: aten::NAME for the default one, aten::NAME.OVERLOAD else."""
    return f"aten::{name}" if overload == "default" else f"aten::{name}.{overload}"


def resolve(name: str, overload: str) -> Any:
    """The OpOverload, or None when this PyTorch lacks it."""
    packet = getattr(torch.ops.aten, name, None)
    try:
        return getattr(packet, overload) if packet is not None else None
    except AttributeError:
        return None


def build_args(schema: Any, synth: Synth, device: torch.device | str) -> tuple[list[Any], dict[str, Any]]:
    """Positional and keyword arguments of a call of `schema` on `device`, one value per argument
    from `synth` (also the generated suite's builder: cases/schema/synth.py)."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = True
    for arg in schema.arguments:
        try:
            value = synth(arg, device)
        except KeyError:
            if not arg.has_default_value():
                raise
            positional = False  # later positionals must go by keyword
            continue
        if arg.kwarg_only or not positional:
            kwargs[arg.name] = value
        else:
            args.append(value)
    return args, kwargs


def written(schema: Any, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments passed that the schema says the call writes (`Tensor(a!)`, `Tensor(a!)[]`: self
    of an in-place op, out=, running stats), by name in schema order."""
    bound = {**{arg.name: v for arg, v in zip(schema.arguments, args, strict=False)}, **kwargs}  # positionals are a prefix
    return {arg.name: bound[arg.name] for arg in schema.arguments
            if arg.alias_info is not None and arg.alias_info.is_write and arg.name in bound}


def _cpu(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.cpu()
    if isinstance(obj, (list, tuple)):
        return [_cpu(o) for o in obj]
    return obj


def compare_overload(ctx: CaseContext, op: Any, synth: Synth, *, category: str = "elementwise") -> str:
    """Run `op` with synthesised arguments on CPU and on the device; CHECKED, RAISES or NO_CPU_KERNEL.

    Compared: the result and every written argument after the call (values, dtypes, shapes); when CPU
    raises, the device must raise the same exception type."""
    with unobserved():
        args, kwargs = build_args(op._schema, synth, torch.device("cpu"))
    try:
        with unobserved():
            result = op(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - CPU's verdict is the reference
        if is_missing_kernel(exc):
            return NO_CPU_KERNEL
        dargs, dkwargs = build_args(op._schema, synth, ctx.device)
        expect_raises(lambda: op(*dargs, **dkwargs), f"{op}: CPU raises {type(exc).__name__}", type(exc))
        return RAISES
    expected = [_cpu(result), _cpu(list(written(op._schema, args, kwargs).values()))]
    dargs, dkwargs = build_args(op._schema, synth, ctx.device)
    actual = [_cpu(op(*dargs, **dkwargs)), _cpu(list(written(op._schema, dargs, dkwargs).values()))]
    ctx.describe(overload=str(op))
    first = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
    exact = exactness_of(op.name(), dtype=str(first.dtype).removeprefix("torch.") if first is not None else None)
    ctx.assert_close(actual, expected, category=category, exact=exact if exact is None or exact.outputs is None else None,
                     constant=constant_overload(op.name()))
    return CHECKED


def functional_of(overload: str) -> str:
    """The functional sibling of an out= overload: 'Scalar_out' -> 'Scalar', 'out' -> 'default'."""
    return "default" if overload == "out" else overload.removesuffix("_out")


def with_out(name: str, overload: str, synth: Synth) -> Synth:
    """`synth`, plus the `out` argument: empty tensors like the functional sibling's CPU result (the
    first list of an op returning several: the fused optimizers' parameters). When CPU cannot
    compute the sibling, `synth` makes `out` (the out= call then shows CPU's verdict)."""
    sibling = resolve(name, functional_of(overload))
    like: Any = None
    if sibling is not None:
        with unobserved():
            args, kwargs = build_args(sibling._schema, synth, torch.device("cpu"))
        try:
            with unobserved():
                like = sibling(*args, **kwargs)
        except Exception:  # noqa: BLE001 - the out= call itself is compared
            like = None
    if isinstance(like, tuple) and like and isinstance(like[0], (list, tuple)):
        like = like[0]

    def out_synth(arg: Any, device: torch.device) -> Any:
        if arg.name != "out" or like is None:
            return synth(arg, device)
        if isinstance(like, torch.Tensor):
            return torch.empty_like(like, device=device)
        return [torch.empty_like(t, device=device) for t in like]

    return out_synth


def run_overloads(ctx: CaseContext, ops: Iterable[tuple[str, str]], synth: Synth, *, category: str = "elementwise",
                  variant: str = "") -> dict[str, str]:
    """compare_overload for each (name, overload) present in this build (an out= overload with an
    out sized by `with_out`); the outcome per overload."""
    outcome: dict[str, str] = {}
    for name, overload in ops:
        op = resolve(name, overload)
        key = qualified(name, overload) + (f" [{variant}]" if variant else "")
        if op is None:
            outcome[key] = "missing"
            continue
        is_out = any(a.name == "out" and a.kwarg_only for a in op._schema.arguments)
        outcome[key] = compare_overload(ctx, op, with_out(name, overload, synth) if is_out else synth,
                                        category=category)
    ctx.info.pop("overload", None)
    return outcome


def settle(ctx: CaseContext, outcome: dict[str, str]) -> None:
    """Record the outcome per overload; not_applicable when none had a CPU reference."""
    ctx.info["overloads"] = outcome
    if not any(v in (CHECKED, RAISES) for v in outcome.values()):
        ctx.not_applicable("no overload has a CPU kernel for these inputs in this build: no reference")


def _other_answer(ctx: CaseContext, name: str, fn: Callable[[torch.device], Any], rule: tuple[str, Callable[[], Any]],
                  category: str) -> bool:
    """Whether the device gave the allowed other answer (compared with it) instead of raising as CPU
    did; False when the device raised, which CPU's exception then judges."""
    try:
        got = fn(ctx.device)
    except Exception:  # noqa: BLE001 - judged against CPU's exception by the caller
        return False
    ctx.describe(check=name)
    with unobserved():
        other = rule[1]()
    ctx.assert_close(got, other, category=category)
    ctx.note_allowed(rule[0])
    return True


def mirror(ctx: CaseContext, checks: dict[str, Callable[[torch.device], Any]], category: str = "elementwise",
           allowed: dict[str, tuple[str, Callable[[], Any]]] | None = None, constant: bool = False) -> None:
    """Each check run on CPU and on the device; the records must match (or both raise alike).
    `allowed`: check name -> (rule, the other answer's record) where CPU raises and PyTorch also
    allows that answer (oracle/allowed.py)."""
    cpu, done = torch.device("cpu"), {}
    for name, fn in checks.items():
        try:
            with unobserved():
                expected = fn(cpu)
        except Exception as exc:  # noqa: BLE001 - CPU's verdict is the reference
            if is_missing_kernel(exc):
                done[name] = NO_CPU_KERNEL
                continue
            if name in (allowed or {}) and _other_answer(ctx, name, fn, allowed[name], category):
                done[name] = CHECKED
                continue
            expect_raises(lambda fn=fn: fn(ctx.device), f"{name}: CPU raises {type(exc).__name__}", type(exc))
            done[name] = RAISES
            continue
        ctx.describe(check=name)
        ctx.assert_close(fn(ctx.device), expected, category=category, constant=constant)
        done[name] = CHECKED
    ctx.info.pop("check", None)
    ctx.info["checks"] = done
    if all(v == NO_CPU_KERNEL for v in done.values()):
        ctx.not_applicable("CPU has no kernel for any check: no reference")
