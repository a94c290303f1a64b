"""The registry of op facts: the one way every suite and oracle asks what is known of an op.

The most specific selector that holds any fact of the asked kind decides (`keys` order): a
variant's fact overrides its op's, an aten packet's its in-place form's functional op. A selector
with glob characters (`*rand*`, `gcd*`: fnmatch, as `--op` globs) is a pattern, less specific than
any name: patterns are asked, in the order they were added, only where no name of the op holds a
fact of the kind. Among the deciding facts the first whose condition holds answers; none holding
answers None, as no fact.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

from torchcts.oracle.opfacts.model import Fact, is_aten, keys

GLOB_CHARS = "*?["  # a selector holding one is a pattern (cases/ops.py reads `--op` globs alike)

# The kinds of fact, and what each says of its ops (a new kind is one entry here).
KINDS: dict[str, str] = {
    "exact": "the result has one right answer: compared bit for bit (value: opfacts.exact.Exact)",
    "constant": "the result is the same everywhere whatever a right backend does: a constant reference is no "
                "weakness (oracle/weak.py)",
    "zero_gradient": "the gradient is zero wherever it is defined: a constant gradient is no weakness",
    "random": "the values depend on the random generator: a property oracle, never CPU's values",
    "seeded_deterministic": "its OpInfo uses wrapper_set_seed, yet its values are deterministic: not random",
    "uninitialized": "a factory of uninitialised memory: a property oracle",
    "matmul_category": "a contraction (its rounding grows with the reduced dimension): tolerance category "
                       "matmul (value: the category)",
    "conv_category": "a convolution: tolerance category conv (value: the category), by aten name only",
    "no_cpu_reference": "CPU cannot be the reference for this kind of case: not_applicable (value: why)",
    "no_truth": "the float64 result is another answer, not a more precise one: no truth (value: why)",
    "one_device": "every tensor must be on one device, a 0-dim CPU tensor too: no placement axis",
    "near_zero": "accurate near zero by design: exploration adds tiny inputs (cases/explore/magnitude.py)",
    "no_lazy_views": "refuses a lazily conjugated view by definition, on every device: exploration never passes "
                     "one (cases/explore/layout.py: lazy_view)",
    "extremes_unbounded": "an extreme input value costs without bound (an output sized by it, a loop that many "
                          "times): no extreme or uniform values explored",
    "values_kept": "exploration keeps OpInfo's values and varies the arguments only (LAPACK-backed ops, grid "
                   "samplers: non-finite, huge or singular inputs crash CPU or have no unique answer)",
    "cpu_unsafe_arguments": "arguments exploration never switches, CPU reads out of bounds or aborts on some "
                            "values (value: the arguments, by position after the input or name)",
    "cpu_unsafe_variants": "exploration checks never run, CPU aborts on explored inputs (value: the checks)",
    "strengthen": "the op's samples are rewritten to tell a right result from a wrong one (value: the rewrite "
                  "and its arguments, cases/opinfo/strengthen.py: REWRITES)",
    "device_policy": "the sample's options are resolved per device type before computing, on both sides",
    "pins_on_host": "a non-blocking copy to the host pins the host tensor on a device (`to('cpu', ..., "
                    "non_blocking=True)`: non_blocking= or the first bool argument): a sample asking for one needs "
                    "the pinned_memory claim",
    "writes_through_view": "writes a source through the strided view its arguments describe (value: the indices "
                           "into the sample's args of its size, stride and storage offset): a view overlapping itself "
                           "leaves which write lands last, so the result, undefined",
    "normalization": "a normalisation op: tolerance category normalization, its absolute floor from the sample's "
                     "conditioning (value: how it groups the sample's input, oracle/conditioning.py)",
    "running_stats": "updates running statistics in place without a schema mark (value: where the sample holds "
                     "them and its momentum)",
    "properties_only": "the generated suite compares only shapes, dtypes and types: two right backends differ "
                       "(value: why)",
    "no_generated_case": "calling the packet with generated inputs is no conformance question: no generated "
                         "case (value: why)",
    "integer_only": "the packet takes integers only: its generated cases use int64",
    "generated_category": "the tolerance category of the packet's generated cases (value: the category)",
    "int_dividing": "divides integers: CPU traps (SIGFPE) on INT_MIN / -1, so no integer extremes are explored",
    "integer_args_kept": "explored samples keep OpInfo's values in its integer arguments",
    "switch_points": "the op's own switch points, tried first (value: argument -> values)",
    "nondeterministic_kernel": "PyTorch names an accelerator kernel of it nondeterministic: its forms agree "
                               "within the tolerance, never bit for bit (cases/opinfo/agree.py)",
}


class OpFacts:
    """Facts indexed by (kind, selector); `get` and `find` are the lookups."""

    def __init__(self, facts: Iterable[Fact]) -> None:
        self.facts: list[Fact] = []
        self._index: dict[tuple[str, str], list[Fact]] = {}
        self._patterns: dict[str, list[tuple[str, Fact]]] = {}
        for fact in facts:
            self.add(fact)

    def add(self, fact: Fact) -> None:
        """Register one fact (an unknown kind or a fact without a reason is a programming error)."""
        if fact.kind not in KINDS:
            raise ValueError(f"unknown op fact kind {fact.kind!r}")
        if not fact.reason.strip() or not fact.ops:
            raise ValueError(f"op fact of kind {fact.kind!r} for {fact.ops!r} has no reason or no op")
        self.facts.append(fact)
        for op in fact.ops:
            if any(c in op for c in GLOB_CHARS):
                self._patterns.setdefault(fact.kind, []).append((op, fact))
            else:
                self._index.setdefault((fact.kind, op), []).append(fact)

    def find(self, kind: str, op: str, variant: str = "", *, dtype: str | None = None,
             case_kind: str | None = None, aten: bool = False, sample: Any = None) -> Fact | None:
        """The fact of `kind` that holds for op (an OpInfo name with its variant, or an aten name:
        `aten::x.overload`, or any name with `aten=True`), None when none holds or it says "not"."""
        fact = next(iter(self._holding(kind, op, variant, dtype, case_kind, aten, sample)), None)
        return fact if fact is not None and fact.value is not None else None

    def find_all(self, kind: str, op: str, variant: str = "", *, dtype: str | None = None,
                 case_kind: str | None = None, aten: bool = False, sample: Any = None) -> list[Fact]:
        """Every fact of `kind` that holds at the deciding selector, in the order they were added
        (a kind whose facts add up, such as switch points a backend registers besides ours)."""
        return [f for f in self._holding(kind, op, variant, dtype, case_kind, aten, sample) if f.value is not None]

    def _holding(self, kind: str, op: str, variant: str, dtype: str | None, case_kind: str | None, aten: bool,
                 sample: Any) -> list[Fact]:
        """The facts of `kind` whose condition holds at the most specific selector holding any of that kind."""
        if kind not in KINDS:
            raise KeyError(f"unknown op fact kind {kind!r}")
        spelled_aten = is_aten(op, aten)
        names = keys(op, variant, aten)
        for key in names:
            found = self._index.get((kind, key))
            if found:
                return [f for f in found if f.when.holds(dtype, case_kind, spelled_aten, sample)]
        patterns = self._patterns.get(kind, ())
        for key in names if patterns else ():
            found = [f for pattern, f in patterns if fnmatch.fnmatchcase(key, pattern)]
            if found:
                return [f for f in found if f.when.holds(dtype, case_kind, spelled_aten, sample)]
        return []

    def get(self, kind: str, op: str, variant: str = "", **where: Any) -> Any:
        """The value of the fact `find` gives, None without one."""
        fact = self.find(kind, op, variant, **where)
        return None if fact is None else fact.value

    def has(self, kind: str, op: str, variant: str = "", **where: Any) -> bool:
        return self.find(kind, op, variant, **where) is not None

    def selectors(self, kind: str) -> dict[str, Any]:
        """selector -> value of the first unconditional-or-not fact of `kind` at it (the old tables' view)."""
        out: dict[str, Any] = {}
        for fact in self.facts:
            if fact.kind == kind:
                for op in fact.ops:
                    out.setdefault(op, fact.value)
        return out
