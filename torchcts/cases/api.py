"""Authoring API for hand-written suites.

    SUITE = CaseSet("strides")

    @SUITE.case("clone/channels_last", level=5, dtypes=FLOATS, ops=("aten::clone",))
    def clone_channels_last(ctx, dtype): ...

    cases = SUITE.cases      # the module-level hook the suite registry calls

Each decorated function becomes one case per dtype (and per entry of `params`), with the id
`<suite>/<name>[/<param key>]/<dtype>`. The function receives a CaseContext and, as keyword
arguments, `dtype` (a torch.dtype) when dtypes are given, and the entry of `params`.

An entry of `dtypes` may be a tuple of names (a pair such as ("float16", "int32")): the id part is
"float16-int32", the case's dtype is the first, every one must be claimed, and the function also
receives `dtypes`, the list of names.

Cases made in a loop (one per op of a table) use `CaseSet.family`, which also makes the function
reachable by the case's runner name.

This module is the one import of a suite (tests/test_layers.py enforces it): the context a case
function receives (cases/context.py), the input and property helpers (cases/helpers.py), and what
suites use from the rest of the package (the networks, aten overloads, OpInfo samples, random-op
checks, oracle rules, `compat`) are re-exported here, so a suite never imports another suite or a
lower layer directly.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from torchcts import compat  # the module: its functions are looked up when called, as tests patch them
from torchcts.cases.context import CaseContext, dtype_of
from torchcts.cases.helpers import (
    MB,
    budget_mb,
    compiled,
    contiguous_strides,
    cpu_reference,
    expect,
    expect_raises,
    not_on_host,
    on_cpu,
    run_both,
    same_storage,
    sample,
    sample_for_cast,
    synced,
    synchronize,
    to_device,
)
from torchcts.cases.model import Case, NotApplicable
from torchcts.cases.networks import (
    MODELS,
    OPTIMIZERS,
    EmbeddingLSTM,
    TrainPlan,
    TransformerBlock,
    compare_training,
    forward_backward,
    math_attention,
    seeded,
)
from torchcts.cases.observe import unobserved
from torchcts.cases.opinfo.samples import copy_sample, generate, load_op_db, lookup, select_samples
from torchcts.cases.opinfo.strengthen import strengthener
from torchcts.cases.overloads import mirror, overload_names, qualified, resolve, run_overloads, settle
from torchcts.cases.random_checks import ALPHA, STAT_ORACLE, expect_moments, expect_stat, randperm_is_permutation
from torchcts.cases.ranks import RankEnv, on_ranks
from torchcts.compat import is_missing_kernel
from torchcts.errors import first_line
from torchcts.manifest.schema import DTYPES as MANIFEST_DTYPES
from torchcts.oracle.allowed import out_cast_allowed
from torchcts.oracle.categories import oracle_for, tolerance_category
from torchcts.oracle.exactness import exactness_of
from torchcts.oracle.mismatch import OracleMismatch
from torchcts.oracle.properties import chi_square_check, ks_check, mean_check, normal_cdf, uniform_cdf
from torchcts.oracle.weak import FLOAT_PREDICATES, constant_by_definition, constant_overload

__all__ = [
    # the authoring API (this module) and the case model
    "ALL_DTYPES", "BOOL", "COMPLEX", "FLOATING", "INTEGRAL", "Case", "CaseContext", "CaseSet", "NotApplicable",
    "OracleMismatch", "dtype_of",
    # cases/helpers.py: inputs, property checks, CPU-vs-device runs, compile, allocation budget
    "MB", "budget_mb", "compiled", "contiguous_strides", "cpu_reference", "expect", "expect_raises", "not_on_host",
    "on_cpu", "run_both", "same_storage", "sample", "sample_for_cast", "synced", "synchronize", "to_device",
    # cases/: networks, aten overloads by schema, OpInfo samples, random-op checks, rank processes, the observer
    "ALPHA", "MODELS", "OPTIMIZERS", "STAT_ORACLE", "EmbeddingLSTM", "RankEnv", "TrainPlan", "TransformerBlock",
    "compare_training", "copy_sample", "expect_moments", "expect_stat", "forward_backward", "generate", "load_op_db",
    "lookup", "math_attention", "mirror", "on_ranks", "overload_names", "qualified", "randperm_is_permutation",
    "resolve", "run_overloads", "seeded", "select_samples", "settle", "strengthener", "unobserved",
    # lower layers: oracle rules, statistical checks, PyTorch version differences, the manifest's dtypes, errors
    "FLOAT_PREDICATES", "MANIFEST_DTYPES", "chi_square_check", "compat", "constant_by_definition", "constant_overload",
    "exactness_of", "first_line", "is_missing_kernel", "ks_check", "mean_check", "normal_cdf", "oracle_for",
    "out_cast_allowed", "tolerance_category", "uniform_cdf",
]

# Dtype groups by name; expanded to names present in the running torch at case-build time.
BOOL = ("bool",)
INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
FLOATING = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
ALL_DTYPES = BOOL + INTEGRAL + FLOATING + COMPLEX


@dataclass
class _Entry:
    fn: Callable[..., Any]
    name: str
    level: int
    ops: tuple[str, ...]
    dtypes: tuple[str | tuple[str, ...], ...] | None
    requires: tuple[str, ...]
    oracle: str
    params: Mapping[str, Mapping[str, Any]] | None


@dataclass
class CaseSet:
    suite: str
    _entries: list[_Entry] = field(default_factory=list)

    def case(
        self,
        name: str,
        *,
        level: int,
        ops: Iterable[str] = (),
        dtypes: Iterable[str | tuple[str, ...]] | None = None,
        requires: Iterable[str] = (),
        oracle: str = "cpu",
        params: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self._entries.append(
                _Entry(fn, name, level, tuple(ops), tuple(dtypes) if dtypes is not None else None,
                       tuple(requires), oracle, params)
            )
            return fn

        return register

    def family(self, name: str, *, qualname: str, level: int,
               **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a function made in a loop as a case, reachable as `<module>:<qualname>`.

        The runner names a case's function by module attribute, so a generated function is set on its
        module under `qualname` (one per member of the family); `options` are those of `case`.
        """
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            fn.__qualname__ = qualname
            setattr(sys.modules[fn.__module__], qualname, fn)
            return self.case(name, level=level, **options)(fn)

        return register

    def cases(self) -> list[Case]:
        out: list[Case] = []
        for e in self._entries:
            runner = f"{e.fn.__module__}:{e.fn.__qualname__}"
            variants = e.params.items() if e.params else [(None, {})]
            for key, extra in variants:
                for entry in e.dtypes if e.dtypes is not None else (None,):
                    group = entry if isinstance(entry, tuple) else ()
                    dtype = group[0] if group else entry
                    parts = [self.suite, e.name, key, "-".join(group) or dtype]
                    dparams = {"dtype": dtype, **({"dtypes": list(group)} if group else {})} if dtype else {}
                    out.append(
                        Case(
                            id="/".join(p for p in parts if p),
                            suite=self.suite,
                            level=e.level,
                            runner=runner,
                            params={**dparams, **dict(extra)},
                            ops=e.ops,
                            dtype=dtype,
                            dtypes=group,
                            requires=e.requires,
                            oracle=e.oracle,
                            kind=e.name.split("/")[0],
                        )
                    )
        return out
