"""Which dispatcher surfaces get a generated case, and how each is checked.

A surface is *remaining* when no case of another registered TorchCTS suite names it in its `ops`
(by the rule of cases/ops.py: resolve_op_name, the one coverage/ uses), or when the cases naming it
were measured never to dispatch it (unreached.py). A remaining surface gets
one case per dtype of DTYPES unless it is excluded (cases/surface_exclusions.py), the generator
cannot make its arguments (synth.unsupported), or it is one of UNSAFE (calling it with generated
inputs is not a conformance question). The case list is cached with the other suites' lists
(cases/cache.py): building it loads every other suite's list, which is cheap once they are cached.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from torchcts.cases.model import Case
from torchcts.cases.ops import is_random, resolve_op_name, schema_name, writes_out
from torchcts.cases.surface_exclusions import excluded_pattern

SUITE = "generated"
LEVEL = 8
DTYPES = ("float32",)
RUNNER = "torchcts.cases.schema.run:run_surface"

# Results that differ between two correct backends: only shapes, dtypes and types are compared.
PROPERTIES_ONLY: dict[str, str] = {
    "*empty*": "uninitialised memory",
    "resize*": "grown storage is uninitialised",
    "_resize_output*": "grown storage is uninitialised",
    "set*": "storage-dependent",
    "get_device": "the device index differs from CPU's -1",
    "cumprod_backward": "takes the forward's output; generated inputs are inconsistent with it, where "
                        "the formulas for plain tensors and subclasses legitimately differ",
    "_fused_sdp_choice": "the attention backend chosen differs by device",
    # Generated indices repeat: which of several writes to one element wins is unspecified.
    "max_unpool*": "duplicate generated indices: the winning write is unspecified",
    "scatter": "duplicate generated indices: the winning write is unspecified",
    "scatter_": "duplicate generated indices: the winning write is unspecified",
    "index_put*": "duplicate generated indices: the winning write is unspecified",
    "_index_put_impl*": "duplicate generated indices: the winning write is unspecified",
    "_unsafe_index_put": "duplicate generated indices: the winning write is unspecified",
    "put": "duplicate generated indices: the winning write is unspecified",
    "put_": "duplicate generated indices: the winning write is unspecified",
    "index_copy*": "duplicate generated indices: the winning write is unspecified",
    "*rand*": "random",
    "*dropout*": "random",
    "bernoulli*": "random",
    "normal*": "random",
    "multinomial*": "random",
    "poisson*": "random",
    "binomial*": "random",
    "_standard_gamma": "random",
    "_sample_dirichlet*": "random",
    "rrelu*": "random",
    "random*": "random",
    "exponential*": "random",
    "geometric*": "random",
    "cauchy*": "random",
    "log_normal*": "random",
    "uniform*": "random",
}

# Surfaces whose generated call is not a conformance question (reason per pattern): no case.
UNSAFE: dict[str, str] = {
    "pin_memory": "host (CPU) memory op: a device tensor cannot be pinned",
    "_pin_memory*": "host (CPU) memory op: a device tensor cannot be pinned",
    "_to_cpu": "copies to CPU by definition",
    "from_file*": "reads a file",
    "_assert_*": "an assertion with no result",
    "_functional_assert_*": "an assertion with no result",
    "_debug_has_internal_overlap": "reports the memory layout of the storage, not a value",
    "_has_same_storage_numel": "storage-dependent",
    "_sobol_engine_*": "a host-only kernel: it reads its tensors' data on the host (torch.quasirandom.SobolEngine "
                       "keeps its state on the CPU)",
    # CPU kernels that trust their callers' shapes: generated inputs read or write out of bounds
    # (SIGSEGV, SIGABRT, or garbage that differs from run to run).
    "batch_norm_backward": "CPU kernel does not check generated shapes (segfaults)",
    "native_batch_norm_backward": "CPU kernel does not check generated shapes (segfaults)",
    "_batch_norm_no_update": "CPU kernel does not check generated shapes (segfaults)",
    "_batch_norm_impl_index*": "CPU kernel does not check generated shapes (segfaults)",
    "_native_batch_norm_legit*": "CPU kernel does not check generated shapes (segfaults)",
    "_embedding_bag*": "CPU kernel does not check generated offsets (aborts)",
    "_weight_norm_interface*": "CPU kernel does not check generated shapes (reads uninitialised memory)",
    "lstm_cell": "CPU kernel of torch 2.7 does not check generated weight shapes (segfaults)",
    "gru_cell": "CPU kernel of torch 2.7 does not check generated weight shapes (segfaults)",
    "rnn_tanh_cell": "CPU kernel of torch 2.7 does not check generated weight shapes (segfaults)",
    "rnn_relu_cell": "CPU kernel of torch 2.7 does not check generated weight shapes (segfaults)",
}

# Integer-only ops: their cases use int64 instead of DTYPES.
INTEGER_ONLY = ("*bitwise*", "*shift*", "__and__", "__or__", "__xor__", "__iand__", "__ior__", "__ixor__",
                "gcd*", "lcm*")

# Tolerance category by name (first match), else "reduction": a generated input is not an
# OpInfo sample conditioned for its op, so the default is the loose end of the elementwise range.
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("*backward*", "backward"), ("*linalg*", "linalg"), ("*fft*", "fft"), ("*conv*", "conv"),
    ("*mm*", "matmul"), ("*matmul*", "matmul"), ("*norm*", "normalization"), ("special_*", "special"),
    ("_fused_*", "training"), ("_foreach_*", "elementwise"),
)


@dataclass(frozen=True)
class Surface:
    name: str  # "aten::abs.out"
    schema: Any

    @property
    def base(self) -> str:
        return self.name.removeprefix("aten::").split(".", 1)[0]

    @property
    def is_out(self) -> bool:
        return writes_out(self.schema)


def aten_surfaces() -> list[Surface]:
    """Every aten overload the dispatcher knows that has a schema, sorted by name."""
    import torch

    registered = {n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    found: dict[str, Surface] = {}
    for s in torch._C._jit_get_all_schemas():
        name = schema_name(s)
        if name in registered:
            found.setdefault(name, Surface(name, s))
    return [found[n] for n in sorted(found)]


def covered(surfaces: list[Surface], cases: Iterable[Case]) -> set[str]:
    """The surfaces some case names (cases/ops.py: resolve_op_name), except that a random op is
    covered only by a case naming its exact overload: a packet name (`aten::randint_like`, OpInfo's
    `bernoulli`) says which distribution a case draws from, not which of its generator, Tensor-bound
    or dtype overloads it calls, so those get a generated properties case of their own."""
    packets: dict[str, list[str]] = {}
    for s in surfaces:
        packets.setdefault(s.name.split(".", 1)[0], [])
        if not s.is_out and (not is_random(s.schema) or "backward" in s.base):  # kind rng (coverage/surfaces.py)
            packets[s.name.split(".", 1)[0]].append(s.name)
    overloads = frozenset(s.name for s in surfaces)
    names = {name for case in cases for name in case.covered_ops}
    return {o for name in names for o in resolve_op_name(name, packets, overloads)}


@functools.lru_cache(maxsize=16)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def _match(table: dict[str, str], base: str) -> str | None:
    """The reason of the first pattern of `table` matching `base` (one regex decides whether any does)."""
    if not _compiled(tuple(table)).match(base):
        return None
    return next(why for pat, why in table.items() if fnmatch.fnmatchcase(base, pat))


def skip_reason(s: Surface) -> str | None:
    """Why a remaining surface gets no case (excluded, unsafe, or no generator for an argument)."""
    from torchcts.cases.schema.synth import unsupported

    pattern = excluded_pattern(s.name)
    if pattern is not None:
        return f"excluded: {pattern}"
    why = _match(UNSAFE, s.base)
    if why is not None:
        return f"unsafe: {why}"
    why = unsupported(s.schema)
    return f"unsupported: {why}" if why else None


def check_of(s: Surface) -> tuple[str, str]:
    """("values", "") or ("properties", why) for one surface."""
    why = _match(PROPERTIES_ONLY, s.base)
    if why is None and any("Generator" in str(a.type) for a in s.schema.arguments):
        why = "random"
    return ("properties", why) if why else ("values", "")


def requires_of(s: Surface, why: str) -> tuple[str, ...]:
    """The capabilities a case needs; `why` is check_of's reason (random ops need `rng`)."""
    if s.base.startswith("_foreach_"):
        return ("foreach",)
    if why == "random":
        return ("rng",)
    return ("training",) if "backward" in s.base or s.base.startswith("_fused_") else ()


def category_of(s: Surface) -> str:
    return next((cat for pat, cat in CATEGORIES if fnmatch.fnmatchcase(s.base, pat)), "reduction")


def make_case(s: Surface, dtype: str) -> Case:
    check, why = check_of(s)
    short = s.name.removeprefix("aten::")
    return Case(
        id=f"{SUITE}/{short}/{dtype}", suite=SUITE, level=LEVEL, runner=RUNNER,
        params={"overload": s.name, "dtype": dtype, "check": check, "category": category_of(s), "why": why},
        ops=(s.name,), dtype=dtype, requires=requires_of(s, why), kind="schema",
    )


def plan(other_cases: Iterable[Case]) -> tuple[list[Case], dict[str, str]]:
    """The generated cases, and each remaining surface without one -> why."""
    from torchcts.cases.schema.unreached import UNREACHED

    surfaces = aten_surfaces()
    done = covered(surfaces, other_cases) - UNREACHED.keys()  # declared, yet never dispatched: cases too
    cases: list[Case] = []
    skipped: dict[str, str] = {}
    for s in surfaces:
        if s.name in done:
            continue
        why = skip_reason(s)
        if why is not None:
            skipped[s.name] = why
            continue
        integer = any(fnmatch.fnmatchcase(s.base, p) for p in INTEGER_ONLY)
        cases.extend(make_case(s, dtype) for dtype in (("int64",) if integer else DTYPES))
    return cases, skipped
