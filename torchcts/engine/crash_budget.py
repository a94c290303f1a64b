"""The crash budget: a crash signature already seen N times in an op family is not re-run.

Why: every crash costs a worker (a fresh process imports torch and the OpInfo database: 5-20 s on
a loaded machine), so a backend in bring-up that crashes on hundreds of cases made a run take
hours, mostly re-proving the same bug. After `limit` crashes with one crash signature
(results/crash_frames.py: the signal and the innermost stack frames) in one op family, the
family's cases that have not started are recorded `not_run`, with a reason naming the family,
the signature and the count. `run --crash-budget N` sets the limit (default DEFAULT_LIMIT),
`--no-crash-budget` runs every case.

Nothing is forgiven: each crash stays a `crashed` failure, `not_run` fails the run as well
(results/ledger.py: gate_failures), and a crash the ledger expects (xfailed) does not count.

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
every rerun's, runs its cases in forked children (engine/case_process.py), with or without a budget.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from torchcts.cases.model import Case
from torchcts.cases.ops import parse_op
from torchcts.results.crash_frames import budget_reason, crash_signature
from torchcts.results.records import CaseRecord
from torchcts.results.statuses import Status
from torchcts.safe_io import write_atomic

DEFAULT_LIMIT = 3
BUDGET_FILE = "crash-budget.json"


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
        self.fork_cases = False

    def crashed(self, case: Case, record: CaseRecord) -> None:
        """A judged crash record: counted when it stays a `crashed` failure (not forgiven by the ledger)."""
        if record.status != Status.CRASHED or not self.limit:
            return
        family, signature = family_of(case), crash_signature(record)
        self.counts[family, signature] += 1
        count = self.counts[family, signature]
        if count >= self.limit and family not in self.exhausted:
            self.exhausted[family] = {"signature": signature, "crashes": count}
            self._publish()

    def worker_died(self) -> None:
        """A worker died (a crash or a hang, forgiven by the ledger or not): cases fork from now on."""
        if not self.fork_cases:
            self.fork_cases = True
            self._publish()

    def _publish(self) -> None:
        data = {"limit": self.limit, "families": self.exhausted, "fork_cases": self.fork_cases}
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
        self.fork_cases = False  # a worker of this run died: cases run in forked children (engine/case_process.py)

    def stops(self, case: Case) -> str | None:
        """The reason `case` is not run, or None to run it."""
        self._refresh()
        return self.families.get(family_of(case)) if self.families else None

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
            self.fork_cases = data.get("fork_cases") is True
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return  # unreadable (never half-written: write_atomic): run every case, as without a budget
