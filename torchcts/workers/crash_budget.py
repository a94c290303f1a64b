"""The crash budget: a crash signature already seen N times in an op family is not re-run.

Why: every crash costs a worker (a fresh process imports torch and the OpInfo database: 5-20 s on
a loaded machine), so a backend in bring-up that crashes on hundreds of cases made a run take
hours, mostly re-proving the same bug. After `limit` crashes with one crash signature
(results/triage/crash_frames.py: the signal and the innermost stack frames) in one op family, the
family's cases that have not started are recorded `not_run`, with a reason naming the family,
the signature and the count. `run --crash-budget N` sets the limit (default DEFAULT_LIMIT),
`--no-crash-budget` runs every case.

Nothing is forgiven: each crash stays a `crashed` failure, `not_run` fails the run as well
(results/ledger/apply.py: gate_failures), and a crash the ledger expects (xfailed) does not count.

The op family (`family_of`) is the case's op and dtype: an OpInfo case's OpInfo name (variants
included: `div.floor_rounding` and `div.trunc_rounding` are one family), else the name of its first
declared op (`aten::sum.dim_IntList` -> `sum`), else its suite; with its dtype, because a
backend picks its kernel by op and dtype, so a crash in the complex128 kernel says nothing of
float32's.

How workers learn it: the controller, the one process that sees every crash (engine/plugin.py:
`Recorder.pytest_handlecrashitem`), writes the exhausted families to BUDGET_FILE in the run's
scratch folder (`--torchcts-work-dir`, beside the worker logs), atomically; a worker looks at the
file's size and mtime before each case and re-reads it only when they changed. Cases already
running or queued before the file changes still run, so a few more crashes than `limit` may be
recorded. Only the first attempt obeys it: a `--rerun-failures` rerun runs what it reruns.

The same file says when a worker died (`fork_cases`): from then on every worker of the run, and
every rerun's, runs its cases in forked children (workers/case_process.py), with or without a budget.

Crash storms (issue 40 item 2): one native bug (OpenReg's out= resize path) crashes a kind of case
across every op, one family at a time, so a family budget still pays `limit` crashes per op. The
crash scope of a case is its id with its op and dtype masked (`scope_of`: `opinfo/<op>/<dtype>/out`:
one bug crashes every dtype's kernel the same way, and the dtype in the scope stopped OpenReg's
out= storm once per dtype, issue 48); once one crash cluster (a signature, as triage clusters
crashes) has crashed at least `limit` cases of a scope across at least two op families (an op and
dtype each), and at least half (CLUSTER_SHARE) of that scope's finished cases, the scope's cases
that have not started are recorded `not_run` naming the cluster, its count and its families
(results/triage/crash_frames.py: cluster_reason). A scope where the bug hits a few ops among many (a
crashing reduction inside 10% of the forward cases) stays below the share and runs on.

Hangs (issue 40 item 3): a hang costs its whole timeout, so a backend whose `sort` never returns
spent 20 s on every sort case. After a case of an op times out (and stays a failure), the op's
later cases run with a short limit derived from each case's clean cost (`hang_limit`:
HANG_FACTOR x its estimated seconds, engine/shard.py: estimated_cost, at least HANG_FLOOR_S, never
above the run's timeout): a case that still hangs is `timeout` after seconds, a failure as before,
its record naming the earlier hang; one that runs normally passes. `--no-crash-budget`: every case
gets the run's timeout.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchcts.cases.ops import parse_op
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.status import EXECUTED, Status
from torchcts.results.triage.crash_frames import budget_reason, cluster_reason, crash_signature, died_in_reference
from torchcts.safe_io import write_atomic

DEFAULT_LIMIT = 3
BUDGET_FILE = "crash-budget.json"
HANG_FACTOR = 30.0  # a later case of a hung op may take this many times its clean cost...
HANG_FLOOR_S = 3.0  # ...and at least this long


CLUSTER_SHARE = 0.5  # a crash cluster stops a scope when it crashed at least half of the scope's finished cases


def scope_of(case: Case) -> str:
    """The kind of case a crash storm hits across ops and dtypes: the case id with its op and its
    dtype masked (`opinfo/<op>/<dtype>/out`, `out_variants/<op>/out/<dtype>`), else `suite/kind`.
    Issue 48: OpenReg's out= resize crash, one bug, was stopped once per dtype (7 storms of 3-5
    crashes each) while the dtype was part of the scope."""
    family = family_of(case)
    op = family.rsplit("/", 1)[0] if case.dtype else family
    parts = case.id.split("/")
    masked = ["<op>" if p == op or p.startswith(op + ".") else "<dtype>" if case.dtype and p == case.dtype else p
              for p in parts]
    if any(p == "<op>" for p in masked):
        return "/".join(masked)
    return "/".join(str(p) for p in (case.suite, case.kind) if p)


def hung_op(case: Case) -> str:
    """The op a hang is counted under: the family's op, every dtype (a kernel that never returns for
    one dtype is suspect for all; a case that runs normally still passes under the short limit)."""
    return family_of(case).split("/", 1)[0] if case.dtype else family_of(case)


def hang_note(op: str, first: str) -> str:
    return f"a short limit: op {op} hung earlier in this run ({first}; workers/crash_budget.py)"


def family_of(case: Case) -> str:
    """`<op>/<dtype>`: the OpInfo name, else the first declared op's name, else the suite; and the dtype."""
    op = case.params.get("op")
    if not op:
        op = parse_op(case.ops[0]).name if case.ops else case.suite
    return f"{op}/{case.dtype}" if case.dtype else str(op)


class CrashBudget:
    """Controller side: counts the crashes that stay failures per (family, signature) and publishes
    the families whose count reached `limit` (0: none ever does), and that a worker died."""

    def __init__(self, work_dir: Path, limit: int) -> None:
        self.work_dir = work_dir
        self.limit = limit
        self.counts: Counter[tuple[str, str]] = Counter()
        self.exhausted: dict[str, dict[str, Any]] = {}  # family -> {"signature", "crashes"}
        self.done: Counter[str] = Counter()  # scope -> finished cases
        self.clusters: dict[tuple[str, str], set[str]] = {}  # (scope, signature) -> the families it crashed
        self.cluster_counts: Counter[tuple[str, str]] = Counter()
        self.storms: dict[str, dict[str, Any]] = {}  # scope -> {"signature", "crashes", "done", "families"}
        self.hangs: dict[str, str] = {}  # op -> the first case of it that timed out
        self.fork_cases = False

    def crashed(self, case: Case, record: CaseRecord) -> None:
        """Every judged record of the run (its scope's count of finished cases); a crash is counted
        when it stays a `crashed` failure (not forgiven by the ledger)."""
        if not self.limit:
            return
        if record.status not in EXECUTED:  # not run (a budget stop, a skip): not a case the scope finished
            return
        scope = scope_of(case)
        self.done[scope] += 1
        if record.status != Status.CRASHED or died_in_reference(record):
            return  # a death in CPU's reference is settled by its run alone (workers/attribution.py), no storm
        family, signature = family_of(case), crash_signature(record)
        self.counts[family, signature] += 1
        count = self.counts[family, signature]
        changed = count >= self.limit and family not in self.exhausted
        if changed:
            self.exhausted[family] = {"signature": signature, "crashes": count}
        key = (scope, signature)
        self.cluster_counts[key] += 1
        families = self.clusters.setdefault(key, set())
        families.add(family)
        crashes = self.cluster_counts[key]
        if (scope not in self.storms and crashes >= self.limit and len(families) >= 2
                and crashes >= CLUSTER_SHARE * self.done[scope]):
            self.storms[scope] = {"signature": signature, "crashes": crashes, "done": self.done[scope],
                                  "families": sorted(families)}
            changed = True
        if changed:
            self._publish()

    def hung(self, case: Case, record: CaseRecord) -> None:
        """A judged timeout record that stays a failure: the op's later cases get a short limit."""
        if record.status != Status.TIMEOUT or not self.limit or hung_op(case) in self.hangs:
            return
        self.hangs[hung_op(case)] = case.id
        self._publish()

    def hang_note(self, case: Case, record: CaseRecord) -> None:
        """A timeout under a short limit says so in its record (the limit was not the run's)."""
        first = self.hangs.get(hung_op(case))
        if record.status == Status.TIMEOUT and first and first != case.id:
            record.message = f"{record.message} ({hang_note(hung_op(case), first)})"

    def worker_died(self) -> None:
        """A worker died (a crash or a hang, forgiven by the ledger or not): cases fork from now on."""
        if not self.fork_cases:
            self.fork_cases = True
            self._publish()

    def _publish(self) -> None:
        data = {"limit": self.limit, "families": self.exhausted, "fork_cases": self.fork_cases, "hangs": self.hangs,
                "storms": self.storms}
        try:
            write_atomic(self.work_dir, BUDGET_FILE, json.dumps(data), fsync=False)
        except OSError:  # a full scratch disk: the workers run every case, as without a budget
            pass


class BudgetReader:
    """Worker side: whether a case's family is exhausted (with `obey_families`: a first attempt's
    worker under a budget) and whether cases fork, from BUDGET_FILE. `stops`, asked before every
    case, re-reads the file when it changed (one `stat`), and with it `fork_cases`."""

    def __init__(self, work_dir: Path, obey_families: bool = True) -> None:
        self.path = work_dir / BUDGET_FILE
        self.obey_families = obey_families
        self.seen: tuple[int, int] | None = None
        self.families: dict[str, str] = {}  # family -> the reason its cases are not run
        self.storms: dict[str, str] = {}  # scope -> the reason its cases are not run (a crash storm)
        self.hangs: dict[str, str] = {}  # op -> its first case that timed out (hang_limit)
        self.fork_cases = False  # a worker of this run died: cases run in forked children (workers/case_process.py)

    def stops(self, case: Case) -> str | None:
        """The reason `case` is not run, or None to run it."""
        self._refresh()
        if not self.families and not self.storms:
            return None
        return self.families.get(family_of(case)) or self.storms.get(scope_of(case))

    def hang_limit(self, case: Case, regular: float | None, estimate: Callable[[Case], float]) -> float | None:
        """The short time limit of `case` when its op hung earlier in the run (a first attempt under a
        budget), else None (the run's own limit). `estimate`: a case's clean seconds (engine/shard.py:
        estimated_cost, handed in by the engine)."""
        self._refresh()
        if not self.hangs or hung_op(case) not in self.hangs:
            return None
        short = max(HANG_FLOOR_S, HANG_FACTOR * estimate(case))
        return short if regular is None or short < regular else None

    def _refresh(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError:
            return
        if (st.st_size, st.st_mtime_ns) == self.seen:
            return
        self.seen = (st.st_size, st.st_mtime_ns)
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            families = data["families"] if self.obey_families else {}
            self.families = {str(f): budget_reason(str(f), str(v["signature"]), int(v["crashes"]))
                             for f, v in families.items()}
            storms = (data.get("storms") or {}) if self.obey_families else {}
            self.storms = {str(scope): cluster_reason(str(scope), str(v["signature"]), int(v["crashes"]),
                                                      int(v["done"]), [str(f) for f in v["families"]])
                           for scope, v in storms.items()}
            self.hangs = {str(op): str(first) for op, first in (data.get("hangs") or {}).items()} \
                if self.obey_families else {}
            self.fork_cases = data.get("fork_cases") is True
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return  # unreadable (never half-written: write_atomic): run every case, as without a budget
