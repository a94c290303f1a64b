"""Repro builders: how to rebuild one case's exact inputs outside TorchCTS.

`torchcts repro` turns a case into a standalone script (results/repro/script.py). The script cannot
import TorchCTS, so a builder supplies what it needs as data: the op as an importable expression
("torch.add", "torch.Tensor.add_", "torch.nn.functional.conv2d"), the CPU input samples (saved
with torch.save) and the tolerance. A suite makes its cases reproducible by registering a builder
here, keyed by the case runner ("module:function" glob) or by suite name.
"""

from __future__ import annotations

import fnmatch
import math
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torchcts.errors import UsageError
from torchcts.model.case import Case
from torchcts.model.manifest import Manifest


@dataclass
class ReproSpec:
    call: str  # an expression that evaluates to the op with only torch (and the backend) imported
    # each {"args": [...], "kwargs": {...}, "describe": {...}, "host": [arg positions kept on the host]},
    # CPU tensors with the exact layout the case gives the device (strides, offsets, shared storage)
    samples: list[dict[str, Any]]
    atol: float
    rtol: float
    kind: str = "call"  # how the script calls and checks: call | inplace | out | backward | errors
    # The float64 truth's rule the run applied (OpInfo forward cases, docs/oracles.md): None (no truth),
    # "rescue" (outside the tolerance, no farther from the truth than CPU passes) or "strict" (and much
    # less accurate than CPU fails), with the case dtype's eps for the sensitivity.
    truth: str | None = None
    truth_eps: float = 0.0
    notes: list[str] = field(default_factory=list)


# (case, manifest, the `info` of the run's record or None, sample index or None: the record's failing one)
Builder = Callable[[Case, Manifest, "dict[str, Any] | None", "int | None"], ReproSpec]

_NAMESPACES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft", "torch.Tensor")


def callable_expression(fn: Any) -> str | None:
    """`torch.add`, `torch.Tensor.add_`, `torch.nn.functional.relu`, ...: a name that resolves to fn."""
    import importlib

    import torch

    name = getattr(fn, "__name__", "") or ""
    names = {name, name.split("_", 1)[1] if "_" in name.strip("_") else name}
    for ns_name in _NAMESPACES:
        ns: Any = torch.Tensor if ns_name == "torch.Tensor" else importlib.import_module(ns_name)
        for n in names:
            if n and getattr(ns, n, None) is fn:
                return f"{ns_name}.{n}"
    return None


def repro_command(case_id: str, device: str, validation: bool = False, *, manifest: str | None = None,
                  sample: int | None = None, level: int | None = None,
                  quote_path: Callable[[str], str] = shlex.quote) -> str:
    """One line that reruns just this case, as printed: the manifest when it is not the one found
    by default, the level when the case is above the manifest's, the one failing sample.
    `quote_path` quotes the manifest's path for the shell (results/repro/commands.py: `shell_path`)."""
    parts = ["torchcts run", "--validation" if validation else f"--device {shlex.quote(device)}"]
    if manifest and not validation:
        parts.append(f"--manifest {quote_path(manifest)}")
    parts.append(f"--case {shlex.quote(case_id)}")
    if level is not None:
        parts.append(f"--level {level}")
    if sample is not None:
        parts.append(f"--sample {sample}")
    return " ".join(parts)


def failing_sample(info: dict[str, Any] | None) -> int | None:
    """The sample index a record's `info` names (ctx.describe(sample=i)), if any."""
    info = info or {}
    for key in ("sample_index", "sample"):
        if isinstance(info.get(key), int):
            return info[key]
    return None


def tolerance(case: Case, manifest: Manifest, info: dict[str, Any] | None, category: str = "elementwise") -> tuple[float, float]:
    """The run's own tolerance when the record's `info` has it, else the table's for the case's dtype."""
    from torchcts.oracle.tolerances import CATEGORIES, tolerance_for

    tol = (info or {}).get("tolerance")
    tol = tol if isinstance(tol, dict) else {}  # a record is untrusted: `tolerance: 5` reads as none
    atol, rtol = tol.get("atol"), tol.get("rtol")
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
           for v in (atol, rtol)):
        return float(atol), float(rtol)
    named = tol.get("category")
    known = named if isinstance(named, str) and named in CATEGORIES else category
    t = tolerance_for(known, case.dtype or "float32", manifest.tolerance_overrides)
    return t.atol, t.rtol


def operators_elementwise(case: Case, manifest: Manifest, info: dict[str, Any] | None,
                          sample: int | None = None) -> ReproSpec:
    """operators/elementwise/<op>/<dtype>: every sample, or only the failing one when known."""
    import torch

    from torchcts.cases.suites import operators

    name = case.runner.rpartition(":elementwise_")[2]
    fn = getattr(torch, name)
    dtype = getattr(torch, str(case.dtype))
    only = failing_sample(info) if sample is None else sample
    samples = [
        {"args": args, "kwargs": {}, "describe": {"sample": i, "shape": list(shape)}}
        for i, shape, args in operators.elementwise_samples(name, dtype, manifest.seed)
        if only is None or i == only
    ]
    atol, rtol = tolerance(case, manifest, info)
    expr = callable_expression(fn) or f"torch.{name}"
    return ReproSpec(expr, samples, atol, rtol)


def _known_device(manifest: Manifest) -> str | None:
    """The manifest's device when this process can name it (its backend imported), else None:
    then the few ops with per-device-type options (op facts of kind device_policy) get CPU's."""
    import torch

    try:
        return str(torch.device(manifest.device_name).type)
    except RuntimeError:
        return None


def opinfo(case: Case, manifest: Manifest, info: dict[str, Any] | None, sample: int | None = None) -> ReproSpec:
    """OpInfo cases, through the suite's `materialize(case_params, sample_index, dtype, device)`:
    (description, fn, args, kwargs) such that `fn(*args, **kwargs)` on CPU is the case's call."""
    try:
        from torchcts.cases.opinfo import materialize  # type: ignore[attr-defined]
    except ImportError:
        raise UsageError("this TorchCTS has no OpInfo materialize(): rerun the case with the "
                         "`torchcts run --case` command from its record instead") from None
    from torchcts.cases.opinfo.samples import HOST_ARGS

    index = failing_sample(info) if sample is None else sample
    index = index or 0
    confined = (info or {}).get("special_confined")  # the special_values kind's confined copy (opinfo/confined.py)
    out_layout = (info or {}).get("out_layout")  # the out kind's destination that failed (opinfo/out_layouts.py)
    _, fn, args, kwargs = materialize(dict(case.params), index, case.dtype, device=_known_device(manifest),
                                      confined=confined if isinstance(confined, dict) else None,
                                      out_layout=out_layout if isinstance(out_layout, str) else None)
    expr = callable_expression(fn)
    if expr is None:
        raise UsageError(f"OpInfo '{case.params.get('op', case.id)}' runs a callable with no importable name "
                         f"({fn!r}), so no standalone script can call it: use the case's `torchcts run --case` command")
    host = [1 + i for i in HOST_ARGS.get(str(case.params.get("op")), ()) if 1 + i < len(args)]
    spec_sample = {"args": list(args), "kwargs": dict(kwargs), "describe": {"sample": index}, "host": host}
    category = str(case.params.get("category", "elementwise"))
    atol, rtol = tolerance(case, manifest, info, category)
    kind = str(case.params.get("kind", "forward"))
    truth, eps = _truth_rule(case, args, kwargs) if kind == "forward" else (None, 0.0)
    return ReproSpec(expr, [spec_sample], atol, rtol, kind=SCRIPT_KINDS.get(kind, "call"), truth=truth, truth_eps=eps)


def _truth_rule(case: Case, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str | None, float]:
    """The truth's rule for one forward sample, as the run judged it (cases/opinfo/truth.py)."""
    from types import SimpleNamespace

    import torch

    from torchcts.cases.opinfo.samples import lookup
    from torchcts.cases.opinfo.truth import why_no_truth
    from torchcts.oracle.categories import tolerance_category
    from torchcts.oracle.precision import STRICT_CATEGORIES

    op = lookup(str(case.params.get("op")), str(case.params.get("variant", "")))
    dtype = getattr(torch, str(case.dtype), None)
    if not isinstance(dtype, torch.dtype) or not args:
        return None, 0.0
    category = tolerance_category(op)
    sample = SimpleNamespace(input=args[0], args=args[1:], kwargs=kwargs)
    if why_no_truth(op, sample, dtype, category) is not None:
        return None, 0.0
    eps = torch.finfo(dtype.to_real() if dtype.is_complex else dtype).eps
    return ("strict" if category in STRICT_CATEGORIES else "rescue"), eps


def explore(case: Case, manifest: Manifest, info: dict[str, Any] | None, sample: int | None = None) -> ReproSpec:
    """Explore cases (cases/explore/repro.py): the record's shrunk input and the original it was
    shrunk from, through the variant that failed; explored sample N when asked for one."""
    from torchcts.cases.explore.codec import CodecError
    from torchcts.cases.explore.repro import materialize_explored
    from torchcts.cases.opinfo.samples import HostArg

    try:
        variant, calls = materialize_explored(case.id, dict(case.params), info, sample)
    except CodecError as exc:
        raise UsageError(f"the record of '{case.id}' holds no readable explored input ({exc}): rerun the case") from None
    samples, expr = [], None
    for label, fn, args, kwargs in calls:
        expr = expr or callable_expression(fn)
        host = [i for i, a in enumerate(args) if isinstance(a, HostArg)]
        plain = [a.value if isinstance(a, HostArg) else a for a in args]
        samples.append({"args": plain, "kwargs": kwargs, "describe": {"sample": label}, "host": host})
    if expr is None:
        raise UsageError(f"OpInfo '{case.params.get('op', case.id)}' runs a callable with no importable name, so no "
                         "standalone script can call it: use the case's `torchcts run --case` command")
    atol, rtol = tolerance(case, manifest, info)
    notes = ["the first sample is the shrunk input, the second the input exploration found"] if len(samples) > 1 else []
    return ReproSpec(expr, samples, atol, rtol, kind=SCRIPT_KINDS.get(variant, "call"), notes=notes)


# OpInfo case kind -> how the script calls and checks it (the rest: a plain call).
SCRIPT_KINDS = {"inplace": "inplace", "out": "out", "backward": "backward", "errors": "errors"}


# Runner glob -> builder; then suite name -> builder.
BY_RUNNER: dict[str, Builder] = {
    "torchcts.cases.suites.operators:elementwise_*": operators_elementwise,
    "torchcts.cases.explore.run:run": explore,
}
BY_SUITE: dict[str, Builder] = {
    "opinfo": opinfo,
}


# Runners whose cases no script comparing the device with CPU reproduces -> why (their records' `repro`
# command reruns the failing sample instead).
NO_SCRIPT: dict[str, str] = {
    "torchcts.cases.opinfo.agree:run": "it compares the op's forms with each other on the device, not with CPU",
}


def _registered(case: Case) -> Builder | None:
    if case.runner in NO_SCRIPT:
        return None
    for pattern, builder in BY_RUNNER.items():
        if fnmatch.fnmatchcase(case.runner, pattern):
            return builder
    return BY_SUITE.get(case.suite)


def has_script(case: Case) -> bool:
    """Whether `torchcts repro` can write a script for the case: a builder, and an oracle that
    compares values with CPU (random or uninitialised outputs have only properties)."""
    return _registered(case) is not None and case.oracle == "cpu"


def builder_for(case: Case) -> Builder:
    if case.runner in NO_SCRIPT:
        raise UsageError(f"case '{case.id}' has no standalone script: {NO_SCRIPT[case.runner]}; rerun it with "
                         f"'torchcts run --device D --case {shlex.quote(case.id)} --sample N' (its record's repro)")
    builder = _registered(case)
    if builder is not None and case.oracle != "cpu":
        raise UsageError(
            f"case '{case.id}' is checked by properties ({case.oracle}), not by CPU values, so a script "
            f"cannot compare it: rerun it with 'torchcts run --device D --case {shlex.quote(case.id)}'")
    if builder is not None:
        return builder
    raise UsageError(
        f"case '{case.id}' has no standalone repro builder (runner {case.runner}): rerun it with "
        f"'torchcts run --device D --case {shlex.quote(case.id)}', or register a builder in torchcts/cases/repro_builders.py"
    )
