"""The one definition of "the cases that exercise op X", for `--op`, the ledger and coverage.

Why one place: `--op mul` once selected 7 cases while `--op aten::mul.Tensor` selected 30, so a
backend wrong only for non-contiguous `mul` passed a focused run. Torch-free (collection uses it).

What a case answers to (`case_refs`): every entry of `Case.ops` and, for an OpInfo case, its
OpInfo name with its variant (`params["op"]`, `params["variant"]`), each parsed into an `OpRef`:

- `aten::mul.Tensor` -> namespace aten, name `mul`, overload `Tensor`; `aten::mul` -> the whole
  packet (every overload); only aten names are split at the first dot;
- an OpInfo case -> namespace "", its name (`div`, `nn.functional.relu`), the variant as the
  overload (`floor_rounding`); a hand-written plain name (`add`, `torch.save`) -> namespace "".

How a pattern matches (`ref_matches`); `NS::` is optional and, when given, must equal the ref's
namespace (plain names count as aten):

- `X` (no glob): every ref named `X` (any overload or variant) and its in-place form `X_`;
- `X.Y`: the ref `X` with overload/variant `Y`, or named `X.Y`; also a whole aten packet `X`
  (it covers every overload), except in an OpInfo case of another variant of `X`
  (`div.floor_rounding` must not pick `div.trunc_rounding`; write `aten::div.Tensor_mode` for the
  aten overload, which every packet case answers to);
- a glob (`*?[`) is matched against the name and `name.overload`, never the namespace:
  `--op 'a*'` is the ops whose name starts with a.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

GLOB_CHARS = "*?["


@dataclass(frozen=True)
class OpRef:
    namespace: str  # "aten", "compile", ... ; "" for OpInfo and plain torch names
    name: str
    overload: str = ""  # aten overload or OpInfo variant; "" for a whole packet / no variant
    opinfo: bool = False

    @property
    def full(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    def __str__(self) -> str:
        return f"{self.namespace}::{self.full}" if self.namespace else self.full


@functools.lru_cache(maxsize=65536)
def parse_op(text: str) -> OpRef:
    ns, sep, rest = text.partition("::")
    if not sep:
        return OpRef("", text)
    if ns == "aten":
        name, _, overload = rest.partition(".")
        return OpRef(ns, name, overload)
    return OpRef(ns, rest)


def refs_from(ops: Iterable[str], params: Mapping[str, Any] | None = None) -> tuple[OpRef, ...]:
    """The refs of a case given its `ops` and `params` (a Case, its JSON or a record)."""
    op = (params or {}).get("op")
    variant = (params or {}).get("variant") or ""
    return _refs(tuple(str(o) for o in ops if o), op if isinstance(op, str) else "", str(variant))


@functools.lru_cache(maxsize=65536)
def _refs(ops: tuple[str, ...], op: str, variant: str) -> tuple[OpRef, ...]:
    out = [parse_op(o) for o in ops]
    if op:
        out.append(OpRef("", op, variant, opinfo=True))
    return tuple(dict.fromkeys(out))


def case_refs(case: Any) -> tuple[OpRef, ...]:
    """Refs of a `Case` or of a mapping with `ops`/`params` (Case.to_json(), a run record)."""
    if isinstance(case, Mapping):
        ops = list(case.get("ops") or ())
        if case.get("op"):  # records may carry the op name itself
            ops.append(str(case["op"]))
        return refs_from(ops, case.get("params") or {})
    return refs_from(case.ops, case.params)


def case_op_names(case: Any) -> list[str]:
    """The names a case declares, as written (coverage resolves each to aten overloads)."""
    return [r.name if r.opinfo else str(r) for r in case_refs(case)]


def schema_name(schema: Any) -> str:
    """The surface name of an overload's FunctionSchema: `aten::add.Tensor`, `aten::abs` (default)."""
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def writes_out(schema: Any) -> bool:
    """An out= overload: naming its packet (`aten::bernoulli`) never covers it, whatever its kind
    (a random op's out= is kind rng), so the static plan (coverage/mapping.py) and the generated
    suite (cases/schema/build.py) agree on which overloads a case calls. A backward's
    `grad_input` overload is the exception."""
    return any(getattr(a, "is_out", False) for a in schema.arguments) and "backward" not in schema.name


RNG_PREFIXES = ("rand", "dropout", "native_dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout",
                "fused_dropout", "bernoulli", "normal", "multinomial", "poisson", "binomial", "standard_gamma",
                "sample_dirichlet", "rrelu")


def is_random(schema: Any) -> bool:
    """Draws random numbers: takes a Generator, or a rand*/dropout/bernoulli/normal family op (the
    surface kind `rng`, coverage/surfaces.py)."""
    plain = schema.name.split("::", 1)[-1].strip("_")
    return any("Generator" in str(a.type) for a in schema.arguments) or plain.startswith(RNG_PREFIXES)


def packet_candidates(name: str) -> list[str]:
    """The aten packets an OpInfo-style name may mean, in order (docs/coverage.md)."""
    parts = name.split(".")
    cands = [name, name.replace(".", "_"), parts[-1], parts[0]]
    return [f"aten::{c}" for c in dict.fromkeys(cands) if c]


def resolve_op_name(name: str, packets: Mapping[str, Sequence[str]], overloads: Container[str]) -> list[str]:
    """The aten overloads a case's op name covers (the rule of docs/coverage.md).

    `packets` maps each aten packet to the overloads naming the packet covers (all but out=);
    `overloads` holds every overload name. Used by coverage/ and by the generated suite."""
    if name.startswith("aten::"):
        if name in overloads and "." in name:
            return [name]
        candidates = [name.split(".", 1)[0]] if "." not in name else [name]
    else:
        candidates = packet_candidates(name)
    for packet in candidates:
        if packet in packets:
            return list(packets[packet])
    return [name] if name in overloads else []


def _is_glob(text: str) -> bool:
    return any(c in text for c in GLOB_CHARS)


@functools.lru_cache(maxsize=65536)
def ref_matches(pattern: str, ref: OpRef, refs: tuple[OpRef, ...] = ()) -> bool:
    """Whether `pattern` names `ref`; `refs` (all of the case's refs) scopes the packet rule."""
    ns, sep, body = pattern.partition("::")
    if not sep:
        ns, body = "", pattern
    elif not fnmatch.fnmatchcase(ref.namespace or "aten", ns):
        return False
    if _is_glob(body):
        return fnmatch.fnmatchcase(ref.name, body) or fnmatch.fnmatchcase(ref.full, body)
    if body in (ref.name, ref.full) or (ref.name == f"{body}_" and not body.endswith("_")):
        return True
    head, dot, tail = body.partition(".")
    if not dot or ref.namespace != "aten" or ref.overload or ref.name != head:
        return False
    # A whole aten packet covers every overload, unless this pattern names an OpInfo variant
    # and the case is another variant of the same OpInfo op.
    return ns == "aten" or not any(r.opinfo and r.name == head and r.overload for r in refs)


def matches_op(pattern: str, refs: tuple[OpRef, ...]) -> bool:
    return any(ref_matches(pattern, r, refs) for r in refs)


def case_matches_op(case: Any, patterns: Iterable[str]) -> bool:
    """Whether any pattern names an op the case exercises (the `--op` and ledger `op` rule)."""
    refs = case_refs(case)
    return any(matches_op(p, refs) for p in patterns)


def op_vocabulary(cases: Iterable[Any]) -> list[str]:
    """Every name `--op` accepts exactly for these cases (for "did you mean")."""
    names: dict[str, None] = {}
    for case in cases:
        for r in case_refs(case):
            names[r.name] = None
            names[r.full] = None
    return sorted(names)
