"""Which dispatcher surfaces get a generated case, and how each is checked.

A surface is *remaining* when no case of another registered TorchCTS suite names it in its `ops`
(by the rule of cases/ops.py: resolve_op_name, the one coverage/ uses), or when the cases naming it
were measured never to dispatch it (unreached.py). A remaining surface gets
one case per dtype of DTYPES unless it is excluded (cases/surface_exclusions.py), the generator
cannot make its arguments (synth.unsupported), or calling it with generated inputs is not a
conformance question (op facts of kind `no_generated_case`, oracle/opfacts/generated.py, as the
packets compared by properties only, the integer-only ones and each packet's tolerance category).
The case list is cached with the other suites' lists (cases/cache.py): building it loads every
other suite's list, which is cheap once they are cached.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from torchcts.cases.ops import case_op_names, is_random, resolve_op_name, schema_name, writes_out
from torchcts.cases.surface_exclusions import excluded_pattern
from torchcts.model.case import Case
from torchcts.oracle.opfacts import FACTS

SUITE = "generated"
LEVEL = 8
DTYPES = ("float32",)
RUNNER = "torchcts.cases.schema.run:run_surface"


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
    names = {name for case in cases for name in case_op_names(case)}
    return {o for name in names for o in resolve_op_name(name, packets, overloads)}


def skip_reason(s: Surface) -> str | None:
    """Why a remaining surface gets no case (excluded, unsafe, or no generator for an argument)."""
    from torchcts.cases.schema.synth import unsupported

    pattern = excluded_pattern(s.name)
    if pattern is not None:
        return f"excluded: {pattern}"
    why = FACTS.get("no_generated_case", s.base)
    if why is not None:
        return f"unsafe: {why}"
    why = unsupported(s.schema)
    return f"unsupported: {why}" if why else None


def check_of(s: Surface) -> tuple[str, str]:
    """("values", "") or ("properties", why) for one surface."""
    why = FACTS.get("properties_only", s.base)  # results that differ between two right backends
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
    """The packet's tolerance category by name, else "reduction": a generated input is not an OpInfo
    sample conditioned for its op, so the default is the loose end of the elementwise range."""
    return str(FACTS.get("generated_category", s.base) or "reduction")


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
        integer = FACTS.has("integer_only", s.base)  # its cases use int64 instead of DTYPES
        cases.extend(make_case(s, dtype) for dtype in (("int64",) if integer else DTYPES))
    return cases, skipped
