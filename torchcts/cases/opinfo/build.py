"""Case list generation from op_db: a pure function of (PyTorch version, op_db), no op is run.

One case per (OpInfo, dtype of the schema, kind). Dtypes the op does not support on CPU get a
single `forward` case marked not_applicable, so the gap shows in the results instead of vanishing.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import torch

from torchcts.cases.opinfo.kinds import KINDS, Slot, has_variant, op_key
from torchcts.manifest.schema import DTYPES, ordered_dtypes
from torchcts.model.case import Case
from torchcts.oracle.categories import namespace, oracle_for
from torchcts.oracle.opfacts import FACTS

SUITE = "opinfo"
FAMILY_LEVEL = 5
# error_inputs take no dtype: one errors case per op, under this dtype when the op supports it.
ERRORS_DTYPE = "float32"


def _dtype_names(dtypes: Iterable[torch.dtype]) -> set[str]:
    return {str(d).removeprefix("torch.") for d in dtypes}


def errors_dtype(supported: set[str]) -> str | None:
    """The dtype the dtype-less errors case is filed under: float32, else the first supported."""
    if ERRORS_DTYPE in supported:
        return ERRORS_DTYPE
    return next((d for d in DTYPES if d in supported), None)


def explores(op: Any, oracle: str) -> bool:
    """Whether the op gets explore cases: values compared with CPU (random ops and ops with
    property oracles have nothing to compare explored inputs with), no sparse layouts, a CPU
    reference for its forward."""
    sparse = op.name.split(".", 1)[0] == "sparse" or op.name == "to_sparse"
    return oracle == "cpu" and not sparse and not FACTS.has("no_cpu_reference", op.name, case_kind="forward")


@functools.lru_cache(maxsize=1)
def _decomposed_packets() -> frozenset[str]:
    """The aten packets with an overload in PyTorch's decomposition table."""
    from torch._decomp import decomposition_table

    return frozenset(f._overloadpacket.__name__ for f in decomposition_table if hasattr(f, "_overloadpacket"))


def agrees(op: Any, oracle: str) -> bool:
    """Whether the op gets an agree case: values that are a function of the inputs (no property
    oracle: random ops draw anew on each call) and a second form to run (a method, an in-place or
    out= form, or a decomposition of its aten op)."""
    if oracle != "cpu":
        return False
    aten = (op.aten_name or op.name).split(".", 1)[0]
    return (has_variant(op.method_variant) or has_variant(op.inplace_variant) or bool(op.supports_out)
            or aten in _decomposed_packets())


def _case(op: Any, key: str, dtype: str, kind: str, aten: str, oracle: str, why: str | None) -> Case:
    level, requires = KINDS[kind].level, KINDS[kind].requires
    if op.name.split(".", 1)[0] == "sparse" or op.name == "to_sparse":
        requires = (*requires, "sparse")  # its samples or outputs are sparse tensors
    if namespace(op) is not None:
        level = max(level, FAMILY_LEVEL)
    if kind == "special_values" and oracle != "cpu":
        why = why or f"{key} has a {oracle} oracle: its values cannot be compared"
    why = why or FACTS.get("no_cpu_reference", op.name, op.variant_test_name, case_kind=kind)
    if "." in aten:  # no aten name (masked.sum, nn.functional.alpha_dropout): the OpInfo name itself
        ops = op.name
    else:
        ops = {"inplace": f"aten::{aten}_", "out": f"aten::{aten}.out"}.get(kind, f"aten::{aten}")
    return Case(
        id=f"{SUITE}/{key}/{dtype}/{kind}",
        suite=SUITE,
        level=level,
        runner=KINDS[kind].runner,
        params={"op": op.name, "variant": op.variant_test_name, "kind": kind, "dtype": dtype},
        ops=(ops,),
        dtype=dtype,
        requires=requires,
        oracle=oracle,
        kind=kind,
        not_applicable=why,
    )


def op_cases(op: Any) -> list[Case]:
    """Every case of one OpInfo, in a stable order."""
    key = op_key(op)
    aten = op.aten_name or op.name
    oracle = oracle_for(op)
    supported = _dtype_names(op.supported_dtypes("cpu"))
    backward = _dtype_names(op.supported_backward_dtypes("cpu")) if op.supports_autograd else set()
    agree, explore = agrees(op, oracle), explores(op, oracle)  # per op, whatever the dtype
    errors_in = errors_dtype(supported)
    cases: list[Case] = []
    # DTYPES, then any dtype the OpInfo declares that DTYPES does not name (a release's new dtype,
    # bcomplex32 in 2.14): covered by the generic machinery the day it ships, never silently absent
    for dtype in ordered_dtypes({*DTYPES, *supported}):
        if getattr(torch, dtype, None) is None:
            continue
        if dtype not in supported:
            why = f"{key} is not supported for {dtype} on CPU (the oracle)"
            cases.append(_case(op, key, dtype, "forward", aten, oracle, why))
            continue
        slot = Slot(op, dtype, frozenset(backward), errors_in, agree, explore, dtype in DTYPES)
        cases.extend(_case(op, key, dtype, kind.name, aten, oracle, kind.unsupported(slot))
                     for kind in KINDS.values() if kind.applies(slot))
    return cases


def build_cases(op_db: Iterable[Any]) -> list[Case]:
    """The whole opinfo suite; deterministic for a given op_db."""
    return [case for op in op_db for case in op_cases(op)]
