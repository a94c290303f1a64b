"""Case records: one typed object per case, from the worker that ran it to every report.

`CaseRecord` is THE record. The worker builds it (engine/plugin.py: `CaseItem`), the ledger and
the Recorder complete it, pytest's report carries it from an xdist worker to the controller, and
cases.jsonl holds its `to_json()`; every reader gets it back through `from_json`, the one place
that reads untrusted records: a field of the wrong type is coerced (never a crash while
reporting) and an unknown status becomes `error` with `recorded_status` kept, so it fails the run
instead of vanishing from the totals. Fields no TorchCTS writes travel unchanged in `extra`, and
`CaseRecord.from_json(d).to_json() == d` for every well-formed record.
"""

from __future__ import annotations

import copy as _copy
import json
import math
import sys
from dataclasses import dataclass, field, fields
from typing import Any

from torchcts.errors import first_line
from torchcts.model.case import Case
from torchcts.model.status import STATUSES, Status
from torchcts.untrusted import check_depth, loads

__all__ = ["MAX_DEPTH", "CaseRecord", "base_record", "plain", "skip_record"]

# Written for every case built from a Case (even when None); the other fields only when set.
_BASE = frozenset({"id", "suite", "level", "ops", "dtype", "kind", "oracle", "requires"})


@dataclass(slots=True)  # no per-record __dict__: a report holds every final record (issue 51: 10^6 of them)
class CaseRecord:
    """One case's result. Field groups: what the case is, its verdict, its evidence, where and
    how it ran, and what the controller side added (repro lines, ledger, reruns)."""

    # -- the case (model/case.py: Case), written for every record --
    id: str  # the case id, `suite/.../dtype`: the key every report and rerun uses
    suite: str | None = None  # the suite that made the case
    level: int | None = None  # its semantic level (levels.py)
    ops: list[str] = field(default_factory=list)  # the ops it declares (`aten::mul.Tensor`, OpInfo names)
    dtype: str | None = None  # its dtype name, None for dtype-free cases
    kind: str | None = None  # what it checks (elementwise, forward, backward, ...)
    oracle: str | None = None  # what it is compared with (cpu, ...)
    requires: list[str] = field(default_factory=list)  # the capabilities it needs
    cite: str | None = None  # the URL of the real bug report a field case replays (Case.cite); None elsewhere
    # -- the verdict --
    status: Status | None = None  # statuses.py; from_json always gives a Status
    message: str | None = None  # one line saying why (the exception, the mismatch, the skip reason)
    duration_s: float | None = None  # wall seconds of the case (a crash: since its start marker)
    recorded_status: str | None = None  # the status a record held that no STATUSES has (from_json: now `error`)
    # How the oracle compared values (cases/context.py): "exact" when every tensor was compared bit
    # for bit (oracle/exactness.py, integer and bool dtypes), "tolerance" when one was not; None: no values
    exactness: str | None = None
    # A pass that proves nothing (oracle/weak.py: every reference was empty, zeros, constant, all NaN or
    # below the tolerance's atol): the reason, counted per suite in the reports; None otherwise
    weak: str | None = None
    # -- evidence of a failure --
    exception: str | None = None  # the exception's type name (error)
    traceback: str | None = None  # the last 30 lines of its traceback (error)
    mismatch: dict[str, Any] | None = None  # oracle/mismatch.py: Mismatch.to_json() (failed); kept a dict,
                                            # its schema is the oracle's (read back with Mismatch.from_json)
    # oracle/precision.py: Precision.to_json(), the worst errors of the case's floating outputs against
    # CPU and the float64 truth in ulps and relative (OpInfo forward cases); kept a dict, its schema is
    # the oracle's (read back with Precision.from_json, which checks each field)
    precision: dict[str, Any] | None = None
    info: dict[str, Any] | None = None  # CaseContext.info: what `describe` noted (sample, tolerance, repro...); free-form
    signal: str | None = None  # a crashed worker's signal name (workers/isolation.py: crash_record)
    exit_code: int | None = None  # a crashed worker's exit code (negative: the signal)
    timeout_s: float | None = None  # the time limit a `timeout` record exceeded
    output_tail: str | None = None  # the dead worker's log tail: faulthandler output, timeout stacks
    # What the case printed (a backend's own output: OpenCL sources on a failed build), captured by
    # pytest and kept here, never on the terminal: its line count and last characters (engine/plugin.py)
    case_output: str | None = None
    # Which case a crash or a poisoned device belongs to. workers/attribution.py: a crash that may have landed
    # in an innocent case, its suspects rerun alone: {"landed_in", "belongs_to" (id or None), "alone": {id:
    # status alone}}; workers/canary.py: the device failed a canary after this case: {"canary", "process_replaced"}
    attribution: dict[str, Any] | None = None
    # The op that raised or produced the wrong value when it is not the op under test: a device op the
    # case needed besides its own (CaseContext.helper_op); triage counts the failure under it.
    failed_op: str | None = None
    # TorchCTS's own error while judging, writing or sending this case's record (never the backend's):
    # where and what (`CaseRecord.internal`); the status is `error` and the run exits 3
    internal_error: str | None = None
    # -- where and how it ran (engine/probe.py, cases/observe.py, compat.py) --
    started_at: float | None = None  # epoch seconds when the case started
    worker: str | None = None  # xdist's worker id ("gw0"), "main" in-process
    cpu_s: float | None = None  # the worker's CPU seconds in the case, all threads
    # The worker's one-time warm-up that happened inside this case (compat.WARMUP_S: importing the
    # OpInfo database), left out of duration_s: it is the worker's cost, not the case's ("slowest")
    warmup_s: float | None = None
    maxrss_mb: float | None = None  # the worker's resident-set high-water mark after the case
    rss_grew_mb: float | None = None  # how much the case raised that high-water mark
    rss_mb: float | None = None  # the worker's resident set after the case, freed heap returned
    threads: int | None = None  # torch's intra-op threads the case ran with
    # The next two are kept as read (not coerced): coverage counts a malformed `dispatched` apart.
    compat_fallbacks: list[str] | None = None  # compat.FALLBACKS behind this result (setup's and the case's)
    dispatched: list[str] | None = None  # aten overloads that reached the device; None: not observed
    dispatch_unobserved: str | None = None  # why `dispatched` is None
    fallback: list[str] | None = None  # of `dispatched`, what ran on the backend's CPU fallback (cases/fallback.py)
    # -- added after the case ran (engine/plugin.py, results/ledger/annotate.py, results/ledger/apply.py) --
    op: str | None = None  # the OpInfo name of an OpInfo case (ledger selectors, triage)
    attempt: int | None = None  # which --rerun-failures attempt recorded it (2 and up)
    repro: str | None = None  # the `torchcts run --case` line that reruns it
    repro_script: str | None = None  # the `torchcts repro` line writing a standalone script
    signature: str | None = None  # results/triage/signatures.py: the failure's signature (failing records)
    expectation: dict[str, Any] | None = None  # results/ledger/note.py: LedgerNote.to_json() of the entry that matched;
                                               # kept a dict, its schema is the ledger's (read back with LedgerNote.from_json)
    first_failure: dict[str, Any] | None = None  # a flaky record's first failure
                                                 # (status, message, signature, mismatch, exception)
    # --repeat N (results/reports/repeats.py: combine): how many times the case ran, and how many of those passed
    repeats: int | None = None
    repeat_passes: int | None = None
    # -- fields no TorchCTS writes (a newer or foreign record): kept, written back unchanged --
    extra: dict[str, Any] = field(default_factory=dict)
    # Which fields the source held: these are written even when None or empty (exact round trip).
    _keys: frozenset[str] = field(default=_BASE, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.status, str) and not isinstance(self.status, Status) and self.status in STATUSES:
            self.status = Status(self.status)

    @classmethod
    def from_case(cls, case: Case, **values: Any) -> CaseRecord:
        return cls(id=case.id, suite=case.suite, level=case.level, ops=list(case.ops), dtype=case.dtype,
                   kind=case.kind, oracle=case.oracle, requires=list(case.requires), cite=case.cite, **values)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseRecord:
        """The record in `data` (cases.jsonl, a report from a worker), its fields coerced to their
        types; an unknown or missing status becomes `error`, the recorded one kept."""
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for k, v in data.items():  # one pass over what the line holds (a record sets a third of the fields)
            if k in _FIELD_SET:
                known[k] = _coerce(k, v)
            else:
                extra[k] = v
        status = data.get("status")
        if isinstance(status, str) and status in STATUSES:
            known["status"] = Status(status)
        else:
            known["status"] = Status.ERROR
            known["recorded_status"] = str(status)
            known["message"] = (f"cases.jsonl holds unknown status {str(status)[:40]!r}, counted as error: "
                                f"{data.get('message', '')}")
        return cls(**known, extra=extra, _keys=_key_set(known))

    def copy(self, **changes: Any) -> CaseRecord:
        """A shallow copy with `changes` set: what `dataclasses.replace` gives, without running
        `__init__` over every field (a record is copied a few times per case, 30,000 cases a run)."""
        out = _copy.copy(self)
        for name, value in changes.items():
            if not hasattr(out, name):
                raise TypeError(f"CaseRecord has no field {name!r}")
            setattr(out, name, value)
        out.__post_init__()
        return out

    def to_json(self) -> dict[str, Any]:
        """The JSON object cases.jsonl holds: the fields set (or present in the source), then `extra`."""
        out: dict[str, Any] = {}
        keys = self._keys
        for name in _FIELDS:
            value = getattr(self, name)
            if name in keys or (value is not None and not (value == [] and name in _LISTS)):
                out[name] = value.value if type(value) is Status else value
        return {**out, **self.extra}

    def to_text(self) -> str:
        """The record as one line of JSON: what crosses from a worker to the controller and what
        cases.jsonl holds. Whatever a case put in it gets there: a value JSON cannot hold becomes
        its text, keys become text, nesting past `MAX_DEPTH` becomes its text (a record never ends
        a run because of what it holds; its consumers read it with `from_text`)."""
        data = self.to_json()
        try:
            check_depth(data, MAX_DEPTH)  # what `from_text` (untrusted.loads) would refuse is sent as text
            return json.dumps(data, sort_keys=True, default=str)
        except (TypeError, ValueError, RecursionError):  # keys of mixed types, a cycle, deep nesting
            return json.dumps(plain(data), sort_keys=True)

    @classmethod
    def from_text(cls, text: str, case_id: str = "?") -> CaseRecord:
        """The record `to_text` wrote; a line that is not one (garbled in transit) is the case's
        internal error, never a lost case."""
        try:
            data = loads(text)
        except ValueError as exc:
            data = exc
        if isinstance(data, dict) and "id" in data:
            return cls.from_json(data)
        problem = data if isinstance(data, Exception) else ValueError(f"a {type(data).__name__}, not a record")
        return cls(id=case_id).internal("reading its record", problem)

    def internal(self, where: str, exc: BaseException) -> CaseRecord:
        """This case's record when TorchCTS itself failed `where` (judging, writing, sending it):
        status `error`, the cause in `internal_error`, what the case had found kept in the message.
        Not the backend's failure: the run goes on, and exits 3 (engine/execute.py: exit_code)."""
        cause = f"{type(exc).__name__}: {first_line(exc, 300)}"
        found = f"{self.status}: {str(self.message or '')[:300]}" if self.status is not None else "no verdict yet"
        return CaseRecord(id=self.id, suite=self.suite, level=self.level, ops=list(self.ops), dtype=self.dtype,
                          kind=self.kind, oracle=self.oracle, requires=list(self.requires), cite=self.cite,
                          status=Status.ERROR,
                          message=f"TorchCTS internal error while {where} (not the backend's): {cause}; "
                                  f"the case had found: {found}",
                          exception=type(exc).__name__, internal_error=f"{where}: {cause}",
                          duration_s=self.duration_s, started_at=self.started_at, worker=self.worker)

    def selector_view(self) -> dict[str, Any]:
        """The fields ledger selectors and `cases/ops.py` match on, as the mapping they read."""
        return {"id": self.id, "suite": self.suite, "ops": self.ops, "dtype": self.dtype, "kind": self.kind,
                "op": self.op, "level": self.level}

    @property
    def is_failure(self) -> bool:
        """Listed as a failure (reports, triage, the exit status)."""
        return isinstance(self.status, Status) and self.status.is_failure

    @property
    def info_dict(self) -> dict[str, Any]:
        """`info`, or an empty mapping when the case noted nothing."""
        return self.info or {}


_FIELDS = tuple(f.name for f in fields(CaseRecord) if f.name not in ("extra", "_keys"))
# The key sets records were read with, each held once: records of one run share a few (a frozenset of
# ten names is ~700 bytes, as much again as the record). Bounded: a crafted file's many sets stop sharing.
_KEY_SETS: dict[frozenset[str], frozenset[str]] = {}


def _key_set(keys: Any) -> frozenset[str]:
    found = frozenset(keys)
    if len(_KEY_SETS) < 4096:
        return _KEY_SETS.setdefault(found, found)
    return _KEY_SETS.get(found, found)
_FIELD_SET = frozenset(_FIELDS)
_STRS = frozenset({"suite", "dtype", "kind", "oracle", "cite", "message", "recorded_status", "exactness", "weak", "exception",
                   "traceback", "signal", "output_tail", "case_output", "failed_op", "internal_error", "worker",
                   "dispatch_unobserved", "op", "repro", "repro_script", "signature"})
_NUMS = frozenset({"duration_s", "timeout_s", "started_at", "cpu_s", "warmup_s", "maxrss_mb", "rss_grew_mb",
                   "rss_mb"})
_INTS = frozenset({"level", "exit_code", "threads", "attempt", "repeats", "repeat_passes"})
_DICTS = frozenset({"mismatch", "precision", "info", "expectation", "first_failure", "attribution"})
_LISTS = frozenset({"ops", "requires"})


# How deep a record's free-form dicts may nest before `plain` writes the rest as text.
MAX_DEPTH = 32


def plain(value: Any, depth: int = 0) -> Any:
    """`value` as JSON can hold it: text keys, text for any other leaf, a note below `MAX_DEPTH`."""
    if depth >= MAX_DEPTH:
        return f"<{type(value).__name__} nested deeper than {MAX_DEPTH} levels>"
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return str(value)


# Text fields of few distinct values (a suite, a dtype, an op name): held once for every record of a
# report (sys.intern), as list items are (ops, requires, dispatched): 10^6 records share them.
_NAMES = frozenset({"suite", "dtype", "kind", "oracle", "exactness", "worker", "op", "exception", "failed_op",
                    "dispatch_unobserved", "weak", "recorded_status"})


def _coerce(name: str, value: Any) -> Any:
    """`value` as field `name` needs it: a crafted or garbled value of another type never crashes a report."""
    if name == "id":
        return str(value)
    if value is None:
        return [] if name in _LISTS else None
    if name in _STRS:
        if isinstance(value, str):
            return sys.intern(value) if name in _NAMES and len(value) <= 64 else value
        return json.dumps(value, default=str) if isinstance(value, (dict, list)) else str(value)
    if name in _NUMS and (isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) > 1e300
                          or not math.isfinite(value)):  # abs first: an int past float's range overflows isfinite
        return None
    if name in _INTS and (isinstance(value, bool) or not isinstance(value, int)):
        return None
    if name in _DICTS and not isinstance(value, dict):
        return {"value": str(value)}
    if name in _LISTS:
        items = value if isinstance(value, list) else [value]
        return [sys.intern(v) if isinstance(v, str) and len(v) <= 64 else str(v) for v in items]
    return value


def base_record(case: Case) -> CaseRecord:
    return CaseRecord.from_case(case)


def skip_record(case: Case, status: str, reason: str) -> CaseRecord:
    return CaseRecord.from_case(case, status=Status(status), message=reason, duration_s=0.0)
