"""Level 3 out= semantics: every out= overload of a one- or two-tensor op this build has, vs CPU.

OpInfo's out= checks (where an op has them) use an out of the right size, dtype and device. The
rules a backend must also follow live around it: an out of the wrong size is resized (with a
warning when it had elements), an out of another dtype is cast into or refused by CPU's rule
(the device must do the same: the same result or the same exception type), an out on another
device must raise, and out may alias an input. The ops are read from the dispatcher when the
case list is built: every `aten::X.*out` overload whose required arguments, besides `out`, are
`self` (and `other`) tensors, with the functional overload of the same arguments; random ops
(tagged nondeterministic_seeded) are left to the rng suites. Each case runs the checks (out_case:
functional, sized, empty, wrong_size, wrong_dtype, wider_dtype, alias_*) on CPU and on the device
and compares what CPU did: the value returned (and that it is `out` itself), out's shape, dtype
and values, whether a resize warning was emitted, or CPU's exception type. The outs are made like
CPU's functional result; where CPU cannot compute it, like an empty tensor of the inputs' dtype.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from torchcts.cases.api import (
    FLOAT_PREDICATES,
    CaseContext,
    CaseSet,
    constant_by_definition,
    constant_overload,
    expect_raises,
    mirror,
    out_cast_allowed,
    overload_names,
    qualified,
    resolve,
    sample,
    unobserved,
)

SUITE = CaseSet("out_variants")
cases = SUITE.cases
LEVEL = 3
DTYPES = ("float32", "int64")
# The tolerance category by name prefix (a float32 result cast into a float64 out keeps float32's error).
CATEGORY_PREFIXES = (("linalg_", "linalg"), ("cholesky", "linalg"), ("inverse", "linalg"), ("fft_", "fft"),
                     ("special_", "special"), ("nuclear_norm", "linalg"), ("std", "reduction"), ("var", "reduction"),
                     ("sum", "reduction"), ("nansum", "reduction"), ("mean", "reduction"), ("nanmean", "reduction"),
                     ("prod", "reduction"), ("dist", "reduction"), ("inner", "matmul"), ("matmul", "matmul"),
                     ("vdot", "matmul"), ("kron", "matmul"), ("trace", "reduction"), ("logsumexp", "reduction"))
SKIP = ("mkldnn", "q_per_channel", "indices_copy", "values_copy", "int_repr", "lift", "empty_like", "set")


def _required(op: Any) -> list[Any]:
    return [a for a in op._schema.arguments if not a.has_default_value() and a.name != "out"]


def _out_ops() -> dict[str, tuple[str, str, str, int]]:
    """case name -> (op name, out overload, functional overload, tensor inputs 1 or 2)."""
    found: dict[str, tuple[str, str, str, int]] = {}
    for name, overloads in overload_names("").items():
        if name.startswith("_") or any(s in name for s in SKIP):
            continue
        for ov in (o for o in overloads if o == "out" or o.endswith("_out")):
            op = resolve(name, ov)
            if op is None or torch.Tag.nondeterministic_seeded in op.tags or len(op._schema.returns) != 1:
                continue
            req = _required(op)
            names = [(a.name, str(a.type)) for a in req]
            if names not in ([("self", "Tensor")], [("self", "Tensor"), ("other", "Tensor")]):
                continue
            sibling = next((o for o in overloads if o != ov and not o.endswith("out")
                            and [(a.name, str(a.type)) for a in _required(resolve(name, o))] == names
                            and len(resolve(name, o)._schema.returns) == 1), None)
            if sibling is not None:
                found[name if ov == "out" else f"{name}.{ov}"] = (name, ov, sibling, len(req))
    return found


OUT_OPS = _out_ops()
# Ops defined by a special point at 0 (sinc(0) = 1, else sin(pi x)/(pi x): tiny at every integer): their
# inputs get the zeros of `mixed` too, or an integer input's reference is below the tolerance's atol.
ZERO_POINT = frozenset({"sinc", "special_sinc"})
SPECIALS = (float("nan"), float("inf"), float("-inf"))  # at flat 1, 2, 3 mod 7 for the float predicates


def _inputs(dtype: torch.dtype, n: int, dev: torch.device, mixed: bool = False,
            specials: bool = False) -> list[torch.Tensor]:
    """`n` inputs; `mixed` (ops with bool results): zeros where every input has one (flat index 0 mod 4)
    and where only input k has one (k + 1 mod 4), so comparisons and logical ops answer both ways
    (random values alone make `eq` all False, `logical_or` all True: oracle/weak.py); `specials`
    (isnan, isinf, ... of floats): NaN, +Inf and -Inf in places (finite values alone: all False)."""
    made = [sample((4, 5), dtype, i) for i in range(n)]
    for k, t in enumerate(made):
        flat = t.view(-1)
        if mixed:
            flat[0::4] = 0
            flat[(k + 1) % 4::4] = 0
        for j, value in enumerate(SPECIALS if specials else ()):
            flat[1 + j::7] = value
    return [t.to(dev) for t in made]


def _call(op: Any, inputs: list[torch.Tensor], out: torch.Tensor) -> dict[str, Any]:
    """op(*inputs, out=out): what it returned, out afterwards, and whether it warned of a resize."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ret = op(*inputs, out=out)
    return {"returns_out": ret is out, "shape": tuple(out.shape), "dtype": str(out.dtype),
            "values": out.cpu().clone(), "resize_warning": any("resized" in str(w.message) for w in caught)}


def out_case(ctx: CaseContext, dtype: torch.dtype, case: str) -> None:
    name, overload, functional, n = OUT_OPS[case]
    op, fn = resolve(name, overload), resolve(name, functional)

    mixed = name in ZERO_POINT
    specials = name in FLOAT_PREDICATES and (dtype.is_floating_point or dtype.is_complex)

    def made(dev: torch.device) -> list[torch.Tensor]:
        return _inputs(dtype, n, dev, mixed, specials)

    def result(dev: torch.device) -> torch.Tensor:
        return fn(*made(dev))

    try:
        with unobserved():  # CPU's result sizes the outs: TorchCTS's work, not the device's
            like: torch.Tensor | None = result(torch.device("cpu"))
            # an elementwise predicate (not the reduction all/any): inputs that make it answer both ways
            mixed = mixed or isinstance(like, torch.Tensor) and like.dtype == torch.bool and like.shape == (4, 5)
    except Exception:  # noqa: BLE001 - "functional" below compares CPU's exception
        like = None
    # Where CPU cannot compute the functional form, the outs are made like an empty tensor of the
    # inputs' dtype: the out= overload still runs on both sides (and the device must raise alike).
    model = like if like is not None else torch.empty(0, dtype=dtype)

    def with_out(make: Callable[[torch.Tensor, torch.device], torch.Tensor]) -> Callable[[torch.device], Any]:
        def check(dev: torch.device) -> Any:
            return _call(op, made(dev), make(model, dev))
        return check

    def aliased(k: int) -> Callable[[torch.device], Any]:
        def check(dev: torch.device) -> Any:
            inputs = made(dev)
            return _call(op, inputs, inputs[k])
        return check

    checks: dict[str, Callable[[torch.device], Any]] = {
        "functional": lambda dev: result(dev).cpu(),
        "sized": with_out(lambda like, dev: torch.empty_like(like, device=dev)),
        "empty": with_out(lambda like, dev: torch.empty(0, dtype=like.dtype, device=dev)),
        "wrong_size": with_out(lambda like, dev: torch.zeros(7, dtype=like.dtype, device=dev)),
        "wrong_dtype": with_out(lambda like, dev: torch.zeros_like(like, dtype=_other_dtype(like), device=dev)),
        "wider_dtype": with_out(lambda like, dev: torch.zeros_like(
            like, dtype=torch.float64 if like.is_floating_point() else like.dtype, device=dev)),
    }
    inputs = made(torch.device("cpu"))
    for k in range(n):  # out aliasing an input: defined where no resize or cast is needed
        if like is not None and (like.shape, like.dtype) == (inputs[k].shape, inputs[k].dtype):
            checks[f"alias_{('self', 'other')[k]}"] = aliased(k)
    category = next((c for prefix, c in CATEGORY_PREFIXES if name.startswith(prefix)), "elementwise")
    constant = constant_overload(name) or constant_by_definition(name, str(dtype).removeprefix("torch."))
    mirror(ctx, checks, category, _allowed(f"{name}.{overload}", like), constant=constant)
    if ctx.device.type != "cpu" and ctx.info["checks"]["sized"] == "checked":
        cpu_out = torch.empty_like(model)
        expect_raises(lambda: op(*made(ctx.device), out=cpu_out), "out= on the CPU for device inputs")
        ctx.info["checks"]["wrong_device"] = "raises"


def _other_dtype(like: torch.Tensor) -> torch.dtype:
    """The wrong_dtype check's out dtype: another kind than the result's."""
    return torch.int64 if like.is_floating_point() or like.is_complex() else torch.float32


def _allowed(overload: str, like: torch.Tensor | None) -> dict[str, tuple[str, Callable[[], Any]]]:
    """The wrong_dtype check's other allowed answer (oracle/allowed.py: OutCastRule): out holds CPU's
    result cast to its dtype, as PyTorch's composite out= kernel writes it."""
    if like is None:
        return {}
    out_dtype = _other_dtype(like)
    rule = out_cast_allowed(overload, like.dtype, out_dtype)
    if rule is None:
        return {}
    cast = {"returns_out": True, "shape": tuple(like.shape), "dtype": str(out_dtype), "values": like.to(out_dtype),
            "resize_warning": False}
    return {"wrong_dtype": (rule, lambda: cast)}


for _case, (_name, _ov, _fn, _) in OUT_OPS.items():
    SUITE.case(_case, level=LEVEL, dtypes=DTYPES, ops=(qualified(_name, _ov), qualified(_name, _fn)),
               params={"out": {"case": _case}})(out_case)
