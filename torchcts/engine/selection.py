"""Selection: from every case to the ones this run executes, and why the others do not run.

Order of decisions per case: the user's selection (filtered, counted only), then what is known
not to apply to this build (not_applicable), then the manifest's claims (not_claimed, recorded).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field

from torchcts.cases.ops import case_matches_op
from torchcts.errors import UsageError
from torchcts.levels import MAX_LEVEL, MIN_LEVEL
from torchcts.model.case import Case
from torchcts.model.manifest import Manifest
from torchcts.model.selection import Selection
from torchcts.model.status import Status


def parse_level_range(text: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(":"))
    except ValueError:
        raise UsageError(f"bad --level-range '{text}': use A:B, e.g. 2:4") from None
    if not MIN_LEVEL <= a <= b <= MAX_LEVEL:
        raise UsageError(f"bad --level-range '{text}': need {MIN_LEVEL} <= A <= B <= {MAX_LEVEL}")
    return a, b


def parse_shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UsageError(f"bad --shard '{text}': use I/N with 1 <= I <= N, e.g. 2/4") from None
    if not 1 <= i <= n:
        raise UsageError(f"bad --shard '{text}': use I/N with 1 <= I <= N, e.g. 2/4")
    return i, n


@dataclass
class Decision:
    case: Case
    status: str  # "run", or the Status it is recorded with: not_claimed, not_applicable
    reason: str = ""


@dataclass
class SelectionResult:
    decisions: list[Decision]
    filtered: int
    sharded_out: int = 0
    # ledger entries that name only cases the selection left out: not judged by this run, never
    # "unmatched" (results/ledger/apply.py: ledger_report)
    ledger_outside: list[int] = field(default_factory=list)

    @property
    def to_run(self) -> list[Case]:
        return [d.case for d in self.decisions if d.status == "run"]

    @property
    def skipped(self) -> list[Decision]:
        return [d for d in self.decisions if d.status != "run"]


def user_selects(case: Case, sel: Selection, lo: int, hi: int) -> bool:
    if not lo <= case.level <= hi:
        return False
    if sel.suites and case.suite not in sel.suites:
        return False
    if sel.dtypes and case.dtype is not None and case.dtype not in sel.dtypes:
        return False
    if sel.ops and not case_matches_op(case, sel.ops):
        return False
    if sel.cases and not any(fnmatch.fnmatchcase(case.id, p) for p in sel.cases):
        return False
    return True


def claim_decision(case: Case, manifest: Manifest) -> Decision:
    if case.not_applicable:
        return Decision(case, Status.NOT_APPLICABLE, case.not_applicable)
    for dtype in case.all_dtypes:
        if not manifest.claims_dtype(dtype):
            why = "claimed False" if manifest.supported_dtypes.get(dtype) is False else "not in supported_dtypes"
            return Decision(case, Status.NOT_CLAIMED, f"dtype {dtype} {why}")
    missing = case.missing_capabilities(manifest.capabilities)
    if missing:
        return Decision(case, Status.NOT_CLAIMED, "capability " + ", ".join(repr(m) for m in missing) + " not claimed")
    return Decision(case, "run")


def _closest(pattern: str, names: Iterable[str]) -> str:
    import difflib

    bare = pattern.partition("::")[2] or pattern
    found = difflib.get_close_matches(bare, near(bare, list(dict.fromkeys(names))), n=5, cutoff=0.6)
    return f" (closest: {', '.join(found)})" if found else ""


def near(word: str, names: list[str]) -> list[str]:
    """The names worth comparing with a mistyped `word`: difflib over all 47k case ids took 5 s of a
    typo's 6 (every id shares most of its characters with every other). For a path-like word, the ids
    differing from it in at most one `/` part (a typo is in one), else those of its suite; a short
    list (op names) whole."""
    if len(names) < 5000 or "/" not in word:
        return names
    parts = word.split("/")
    one_off = [n for n in names if len(split := n.split("/")) == len(parts)
               and sum(a != b for a, b in zip(split, parts, strict=True)) <= 1]
    return one_off or [n for n in names if n.split("/", 1)[0] == parts[0]] or names


def check_patterns(cases: list[Case], sel: Selection) -> None:
    """Each `--op` and `--case` must name some case of the chosen suites (at any level): a typo
    would otherwise run 0 cases and exit 0, a false clean. UsageError with the closest names."""
    from torchcts.cases.ops import op_vocabulary

    where = f" in suite(s) {', '.join(sel.suites)}" if sel.suites else ""
    for pattern in sel.ops:
        if not any(case_matches_op(c, (pattern,)) for c in cases):
            raise UsageError(f"--op '{pattern}' names no op of any case{where}{_closest(pattern, op_vocabulary(cases))}; "
                             "use an OpInfo or aten op name (see `torchcts coverage inventory`) or a glob")
    for pattern in sel.cases:
        if not any(fnmatch.fnmatchcase(c.id, pattern) for c in cases):
            raise UsageError(f"--case '{pattern}' matches no case id{where}{_closest(pattern, (c.id for c in cases))}; "
                             "pass a case id from a run's cases.jsonl or a glob such as 'operators/*'")


def _describe(sel: Selection, lo: int, hi: int) -> str:
    flags = [f"levels {lo}..{hi}"]
    for name in ("suites", "ops", "dtypes", "cases"):
        if getattr(sel, name):
            flags.append(f"{name} {', '.join(getattr(sel, name))}")
    return "; ".join(flags)


def select(cases: Iterable[Case], manifest: Manifest, sel: Selection) -> SelectionResult:
    """Decide every case of every suite; UsageError when the user's selection keeps no case at all.
    `filtered` counts every case the flags leave out (suite, op, dtype, level, case id alike), so a
    `--suite` run and an `--op` run of the same size report the same kind of number."""
    from torchcts.results.ledger.match import outside_selection

    cases = list(cases)
    check_patterns([c for c in cases if not sel.suites or c.suite in sel.suites], sel)
    lo, hi = sel.levels(manifest.semantic_level)
    decisions: list[Decision] = []
    left_out: list[Case] = []
    for case in cases:
        if user_selects(case, sel, lo, hi):
            decisions.append(claim_decision(case, manifest))
        else:
            left_out.append(case)
    filtered = len(left_out)
    if not decisions:
        raise UsageError(f"the selection matches no case ({_describe(sel, lo, hi)}): widen it, e.g. a higher "
                         "--level or another --dtype; `torchcts show-skips --details` lists the cases")
    moved = 0
    if sel.shard is not None:
        from torchcts.engine.shard import shard_decisions

        decided = decisions
        decisions, moved = shard_decisions(decisions, *sel.shard, durations=sel.shard_durations)
        mine = {d.case.id for d in decisions}
        left_out += [d.case for d in decided if d.case.id not in mine]  # other shards judge these
    outside = outside_selection(manifest.expectations, [d.case for d in decisions], left_out)
    return SelectionResult(decisions, filtered, moved, outside)
