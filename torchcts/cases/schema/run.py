"""Running one generated case: call the overload on CPU and on the device with the same inputs.

The first input profile (synth.py) the CPU kernel accepts is the case's input. No profile
accepted: the case is `pending` with CPU's reason (the generator could not make valid inputs, so
there is no reference; never a pass), or `not_applicable` where every rejection says CPU has no
kernel for the overload at all (a CUDA-only op: no input will ever have a reference).
The device must accept what CPU accepts; its results, and
every argument the schema says the call writes (self of an in-place op, out=, running stats), are
compared with CPU's: values with the tolerance category of the case, or, for a `properties`
case (random, uninitialised or device-dependent results), only shapes, dtypes and Python types,
plus, for a random op, its support (SUPPORT: in [0, 1), 0 or 1, a permutation ...).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.context import CaseContext
from torchcts.cases.observe import unobserved
from torchcts.cases.opinfo.recheck import computed_dtypes
from torchcts.cases.overloads import written
from torchcts.cases.schema import synth
from torchcts.compat import is_missing_kernel
from torchcts.errors import first_line
from torchcts.model.case import NotApplicable, NotClaimed, Pending
from torchcts.oracle.allowed import host_arguments
from torchcts.oracle.exactness import exactness_of
from torchcts.oracle.mismatch import Mismatch, OracleMismatch
from torchcts.oracle.weak import constant_overload


def overload_of(name: str) -> Any:
    """The OpOverload of an `aten::packet.overload` name (the default overload when none)."""
    packet, _, overload = name.removeprefix("aten::").partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


def _to(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device, copy=True)
    if isinstance(value, list):
        return [_to(v, device) for v in value]
    return value


def to_device(ctx: CaseContext, schema: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The call's arguments on the device, except those PyTorch requires on the CPU for every device
    (oracle/allowed.py: HostArgument, named in the record's `host_arguments`)."""
    host = host_arguments(schema.name.removeprefix("aten::"))
    names = [a.name for a in schema.arguments]  # positionals are a prefix of the schema's arguments
    bound = {**dict(zip(names, args, strict=False)), **kwargs}
    kept = sorted(n for n in host if isinstance(bound.get(n), torch.Tensor))
    if kept:
        ctx.describe(host_arguments=kept)
    return ([v if names[i] in host else _to(v, ctx.device) for i, v in enumerate(args)],
            {n: v if n in host else _to(v, ctx.device) for n, v in kwargs.items()})


def _reference(ctx: CaseContext, op: Any, overload: str, dtype: torch.dtype) -> tuple[Any, ...]:
    """(profile, CPU args, CPU kwargs, CPU result, device args, device kwargs) of the first
    accepted profile; Pending when CPU rejects them all. The device's inputs are made only for the
    accepted profile: the same values (build_args is seeded by profile), untouched by CPU's call."""
    schema = op._schema
    errors: list[str] = []
    missing = 0  # rejections that say CPU has no kernel for the overload at all
    for k, profile in enumerate(synth.profiles(schema)):
        with unobserved():  # TorchCTS's work, not the device's (cases/observe.py)
            args, kwargs = synth.build_args(schema, overload, k, dtype, profile, "cpu")
        try:
            with unobserved():
                expected = op(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - CPU's rejection is the reason the case is pending
            errors.append(f"{type(exc).__name__}: {first_line(exc, 160)}")
            missing += is_missing_kernel(exc)
            continue
        ctx.describe(sample=f"{overload} with {profile.describe()} {str(dtype).removeprefix('torch.')} inputs")
        _require_claimed(ctx, [*args, *kwargs.values(), expected])  # before any copy: a device may refuse the dtype itself
        with unobserved():  # made on CPU; the copies to the device are the device's
            dargs, dkwargs = synth.build_args(schema, overload, k, dtype, profile, ctx.device)
        dargs, dkwargs = to_device(ctx, schema, dargs, dkwargs)

        def again(k: int = k, profile: Any = profile) -> Callable[[], Any]:
            """CPU's call on fresh inputs of this profile (made here, outside what is watched)."""
            fresh, fresh_kwargs = synth.build_args(schema, overload, k, dtype, profile, "cpu")
            return lambda: op(*fresh, **fresh_kwargs)
        return profile, args, kwargs, expected, dargs, dkwargs, again
    # No input will ever have a reference: nothing for the generator to do later. Except PyTorch's
    # `*_overrideable` entry points, which only an out-of-tree backend implements (CPU never will):
    # those stay pending, a gap to fill with a reference of their own (CPU's convolution, SDPA's math).
    if errors and missing == len(errors) and not schema.name.split(".")[0].endswith("_overrideable"):
        named = f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name  # the case's overload
        raise NotApplicable(f"CPU has no kernel for {named} ({errors[0]}); no reference")
    raise Pending(f"CPU rejected all {len(errors)} generated inputs, so there is no reference "
                  f"(first: {errors[0] if errors else 'no profile'})")


def _require_claimed(ctx: CaseContext, values: Any) -> None:
    """NotClaimed where an input or CPU's result is of a dtype the manifest does not claim (index and
    mask dtypes aside), as every OpInfo kind and out_variants judge theirs: pytorch_ocl refuses
    complex64 itself, so `_conj` of complex inputs was its error. An empty tensor holds no value of
    its dtype to judge (batch norm's uint8 reserve: its case stays batch norm's)."""
    for t in _tensors(values):
        if t.numel() and not ctx.claims_value_dtype(t.dtype):
            raise NotClaimed(f"a tensor of the unclaimed dtype {str(t.dtype).removeprefix('torch.')} "
                             "(an input or CPU's result)")


def _unclaimed_inside(ctx: CaseContext, again: Callable[[], Callable[[], Any]]) -> None:
    """NotClaimed where the device raised and CPU's call (`again()`, on fresh inputs) computes in a
    dtype not claimed (linalg_pinv's float64 intermediate of float32 inputs); a wrong answer is never
    excused so."""
    with unobserved():
        unclaimed = ctx.unclaimed(computed_dtypes(again()))
    if unclaimed:
        raise NotClaimed(f"the device raised where CPU computes in the unclaimed dtype {', '.join(unclaimed)}")


def _properties(value: Any) -> Any:
    """What a properties check compares: shapes, dtypes and Python types, not values."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype))
    if isinstance(value, (list, tuple)):
        return [_properties(v) for v in value]
    return type(value).__name__


def _unit(t: torch.Tensor) -> bool:
    return bool(((t >= 0) & (t < 1)).all())


def _permutation(t: torch.Tensor) -> bool:
    return bool(torch.equal(t.sort().values.to(torch.int64), torch.arange(t.numel())))


# A random result's support, which the draws of any correct generator respect (first glob over the
# op name wins): checked on the device's result whenever CPU's result respects it too.
SUPPORT: tuple[tuple[str, str, Callable[[torch.Tensor], bool]], ...] = (
    ("randperm*", "a permutation of 0..n-1", _permutation),
    ("randn*", "finite", lambda t: bool(t.isfinite().all())),
    ("randint*", "integral values", lambda t: bool((t == t.round()).all()) if t.is_floating_point() else True),
    ("rand*", "in [0, 1)", _unit),
    ("uniform*", "in [0, 1)", _unit),
    ("bernoulli*", "0 or 1", lambda t: bool(((t == 0) | (t == 1)).all())),
)


def _check_support(overload: str, actual: Any, expected: Any) -> None:
    base = overload.removeprefix("aten::").split(".", 1)[0]
    rule = next((r for r in SUPPORT if fnmatch.fnmatchcase(base, r[0])), None)
    first = [(a, e) for a, e in zip(_tensors(actual), _tensors(expected), strict=False) if a.numel()][:1]
    if rule is None or not first:
        return
    device_result, cpu_result = first[0][0].cpu(), first[0][1]
    if rule[2](cpu_result) and not rule[2](device_result):
        raise OracleMismatch(Mismatch(f"random result not {rule[1]} (CPU's is)",
                                      extra={"actual": repr(device_result.flatten()[:8].tolist())}))


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for v in value for t in _tensors(v)] if isinstance(value, (list, tuple)) else []


def run_surface(ctx: CaseContext, overload: str, dtype: torch.dtype, check: str = "values",
                category: str = "reduction", why: str = "") -> None:
    op = overload_of(overload)
    profile, args, kwargs, expected, dargs, dkwargs, again = _reference(ctx, op, overload, dtype)
    ctx.describe(check=check if not why else f"{check}: {why}")
    try:
        actual = op(*dargs, **dkwargs)
    except Exception:
        _unclaimed_inside(ctx, again)  # a refusal of what CPU computes in a dtype not claimed
        raise
    actual_written = written(op._schema, dargs, dkwargs)
    expected_written = written(op._schema, args, kwargs)
    if check == "properties":
        got, want = _properties((actual, actual_written)), _properties((expected, expected_written))
        if got != want:
            raise OracleMismatch(Mismatch("shapes, dtypes or types differ from CPU's",  # both shown: what differs
                                          first_actual=repr(got)[:300], first_expected=repr(want)[:300]))
        if why == "random":
            _check_support(overload, actual, expected)
        return
    exact = exactness_of(overload, dtype=str(dtype).removeprefix("torch."))  # oracle/exactness.py, per aten packet
    constant = constant_overload(overload)  # a factory or fill: its constant result is no weakness (oracle/weak.py)
    ctx.assert_close(actual, expected, category=category, exact=exact, constant=constant)
    ctx.assert_close(actual_written, expected_written, category=category,
                     exact=exact if exact is None or exact.outputs is None else None, constant=constant)
