"""A run's outcome: run.json typed, from the run's opening to every report.

run.json holds what a run was asked and resolved to (engine/spec.py: `RunSpec.to_json`, written
when the run opens), what it opened with (versions, fallbacks, the sim's variables) and how it
ended (results/records/finalize.py: status, totals, the ledger's report, unreadable records, the plan's
state; reruns, merge and coverage add theirs). `RunOutcome` is that file typed, beside
`CaseRecord`: every command reads it through `rundir.read_run` and reads attributes, never keys.

`from_json` is the one reader of an untrusted run.json (a downloaded run folder): a field of the
wrong type is refused with one line (a `UsageError`, exit 2), never met later by a report (exit 3);
a key an older run.json lacks is tolerated as absent (None), as the dict readers did. Keys no field
names (python, os, arch, threads, merged_from, a newer TorchCTS's) travel unchanged in `extra`, and
`RunOutcome.from_json(d).to_json() == d` for every run.json TorchCTS writes: the key names on disk
are the ones reports, compare, merge and evidence always read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from torchcts.errors import UsageError
from torchcts.untrusted import device_type

_TEXT = (str,)
_INT = (int,)
_BOOL = (bool,)
_DICT = (dict,)
_LIST = (list,)


@dataclass
class RunOutcome:
    """run.json typed. None: the key is absent (an older run, or not yet finalised); `_keys` keeps
    the keys the source held, written back even when null (an open run's `ended`)."""

    # --- the run as asked and resolved (engine/spec.py: RunSpec.to_json, one key per field) ---
    name: str | None = None  # the run folder's name
    device: dict[str, Any] | None = None  # model/device.py: DeviceInfo.to_json (type, gate, count, model)
    gate: str | None = None  # the device's backend gate
    validation: bool | None = None  # --validation: a harness check on cpu, never backend evidence
    manifest: dict[str, Any] | None = None  # the claims (Manifest.to_json); its `expectations` is the ledger
    manifest_hash: str | None = None
    manifest_source: str | None = None
    manifest_arg: str | None = None  # --manifest as given, scrubbed
    command: list[Any] | None = None  # the command line, paths reduced to base names
    selection: dict[str, Any] | None = None  # engine/selection.py: Selection.to_json (shard: [I, N])
    started: str | None = None  # UTC; the ledger is judged at this date
    planned: int | None = None  # cases handed to pytest (plan.jsonl)
    filtered: int | None = None  # cases the selection left out
    sharded_out: int | None = None  # cases other shards run
    expectations_outside_selection: list[int] | None = None  # ledger entries naming only unselected cases
    strict_expectations: bool | None = None
    rerun_failures: int | None = None
    isolation: bool | None = None  # None: an older run.json, which ran isolated
    timeout_s: float | None = None
    crash_budget: int | None = None
    explore: int | None = None
    repeat: int | None = None  # --repeat N: each case ran N times (absent in older runs: once)
    # --- what it opened with (RunSpec.facts; engine/execute.py: opening_facts) ---
    torchcts: str | None = None  # TorchCTS's version
    torch: dict[str, Any] | None = None  # compat.build_info(): torch's version and build
    compat_fallbacks: dict[str, Any] | list[str] | None = None  # fallbacks taken (a list in older runs)
    sim_env: dict[str, Any] | None = None  # the sim's variables (results/repro/sim_env.py validates the values)
    # --- how it ended (results/records/finalize.py, engine/rerun.py, results/records/merge.py, coverage/observed.py) ---
    status: str | None = None  # running, complete, incomplete, interrupted
    ended: str | None = None  # UTC
    totals: dict[str, int] | None = None  # final records per status
    ledger: dict[str, Any] | None = None  # results/ledger/apply.py: ledger_report (its shape is the ledger's)
    unreadable_records: int | None = None  # lines of cases.jsonl no report could read
    internal_errors: int | None = None  # records where TorchCTS itself failed (exit 3)
    record_problems: list[str] | None = None  # the first unreadable lines, each with its problem
    plan_missing: bool | None = None  # True: no plan.jsonl, the run cannot be shown complete
    missing_records: int | None = None  # with plan_missing: planned cases without a record
    merged_from: list[str] | None = None  # a merged run's shard runs (results/records/merge.py)
    missing_shards: int | None = None  # a merge of fewer shards than N
    reruns: list[Any] | None = None  # --rerun-failures: one summary per attempt
    coverage: dict[str, Any] | None = None  # `coverage report RUN`'s headline (results/reports/coverage_section.py)
    # --- keys no field names: kept and written back unchanged ---
    extra: dict[str, Any] = field(default_factory=dict)
    _keys: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    @property
    def device_type(self) -> str | None:
        return (self.device or {}).get("type")

    @property
    def torch_drift(self) -> str | None:
        """The sentence saying the run's torch is outside the validated range (compat.build_info), if so."""
        value = (self.torch or {}).get("drift")
        return value if isinstance(value, str) and value else None

    @property
    def entries(self) -> list[dict[str, Any]]:
        """The ledger's entries (the manifest's expectations), in order: their indices are the ledger's."""
        return list((self.manifest or {}).get("expectations") or [])

    def unset(self, *names: str) -> None:
        """Drop these keys from run.json (finalize: the plan-missing marks once the plan is there)."""
        for name in names:
            setattr(self, name, None)
        self._keys = self._keys - set(names)

    def to_json(self) -> dict[str, Any]:
        """run.json: each field set (or held by the source), then `extra`."""
        out = dict(self.extra)
        for name in _FIELDS:
            value = getattr(self, name)
            if value is not None or name in self._keys:
                out[name] = value
        return out

    def scrubbed(self, scrub_obj: Callable[[Any], Any]) -> RunOutcome:
        """The same run with every text passed through `scrub_obj` (results/records/scrub.py, before rendering
        reports): it keeps every value's type, so nothing is checked again."""
        return self._typed(scrub_obj(self.to_json()))

    @classmethod
    def from_json(cls, data: Any, where: str = "run.json") -> RunOutcome:
        """A run.json's object, typed; `where` names the file in the one-line refusal (UsageError)."""
        if not isinstance(data, dict) or not all(isinstance(data.get(k, {}), dict) for k in _OBJECTS):
            raise UsageError(f"{where} is not a TorchCTS run description (not an object, or device/"
                             "manifest/selection of the wrong type): restore it or rerun")
        wrong = _wrong_field(data)
        if wrong:
            raise UsageError(f"{where}: {wrong} (edited or damaged): restore it or rerun")
        return cls._typed(data)

    @classmethod
    def _typed(cls, data: dict[str, Any]) -> RunOutcome:
        known = {k: v for k, v in data.items() if k in _FIELD_SET}
        if isinstance(known.get("device"), dict) and isinstance(known["device"].get("type"), str):
            # normalised once, here: every rule and report after sees `mps` for `MPS:0` or `mps\u200b`
            known["device"] = {**known["device"], "type": device_type(known["device"]["type"])}
        if "expectations_outside_selection" in known:
            known["expectations_outside_selection"] = entry_indices(known["expectations_outside_selection"])
        extra = {k: v for k, v in data.items() if k not in _FIELD_SET}
        return cls(**known, extra=extra, _keys=frozenset(known))


_FIELDS = tuple(f.name for f in fields(RunOutcome) if f.name not in ("extra", "_keys"))
_FIELD_SET = frozenset(_FIELDS)
_OBJECTS = ("device", "manifest", "selection")  # never null: run.json's shape (refused as "not a run")

# Each typed key's types (besides null, allowed unless the key is in _NOT_NULL). A bool is no int.
TYPES: dict[str, tuple[type, ...]] = {
    "name": _TEXT, "gate": _TEXT, "validation": _BOOL, "manifest_hash": _TEXT, "manifest_source": _TEXT,
    "manifest_arg": _TEXT, "command": _LIST, "started": _TEXT, "planned": _INT, "filtered": _INT,
    "sharded_out": _INT, "strict_expectations": _BOOL, "rerun_failures": _INT, "isolation": _BOOL,
    "timeout_s": (int, float), "crash_budget": _INT, "explore": _INT, "repeat": _INT, "torchcts": _TEXT, "torch": _DICT,
    "compat_fallbacks": (dict, list), "sim_env": _DICT, "status": _TEXT, "ended": _TEXT, "totals": _DICT,
    "ledger": _DICT, "unreadable_records": _INT, "internal_errors": _INT, "record_problems": _LIST,
    "plan_missing": _BOOL, "missing_records": _INT, "merged_from": _LIST, "missing_shards": _INT, "reruns": _LIST,
    "coverage": _DICT,
}
_NOT_NULL = frozenset({"torch", "compat_fallbacks"})


def _wrong_field(run: dict[str, Any]) -> str | None:
    """The first field whose type is wrong (a crafted or damaged file), said as `<field> has the
    wrong type`; None when every one is right."""
    for key, types in TYPES.items():
        value = run.get(key)
        if value is None and (key not in _NOT_NULL or key not in run):
            continue
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            return f"{key} has the wrong type ({type(value).__name__})"
    device_type = (run.get("device") or {}).get("type")
    if device_type is not None and not isinstance(device_type, str):
        return "device.type has the wrong type"
    entries = (run.get("manifest") or {}).get("expectations", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return "manifest.expectations has the wrong type"
    manifest = _manifest_problem(run.get("manifest") or {})
    if manifest:
        return manifest
    if not _all(run.get("compat_fallbacks"), str):
        return "compat_fallbacks has the wrong type"
    if not _all((run.get("totals") or {}).values(), int):
        return "totals has the wrong type (a count that is not a number)"
    if not _all(run.get("record_problems"), str):
        return "record_problems has the wrong type"
    return None


def _all(items: Any, kind: type) -> bool:
    """Every item of a list (or dict view) is `kind` (a bool is no int); anything else passes."""
    if isinstance(items, dict) or items is None:
        return True
    return all(isinstance(v, kind) and not (kind is int and isinstance(v, bool)) for v in items)


def _manifest_problem(manifest: dict[str, Any]) -> str | None:
    """`manifest: <why>` for the first key of run.json's manifest that the manifest's own validation
    refuses (a key or capability a run.json from an older TorchCTS lacks is no problem)."""
    from torchcts.manifest.validate import validate

    if not manifest:
        return None
    _, problems = validate(manifest, source="run.json")
    for problem in problems:
        if not problem.startswith("missing ") and "unknown key" not in problem:
            return f"manifest: {problem[:200]}"
    return None


def entry_indices(value: Any) -> list[int]:
    """run.json's "expectations_outside_selection" (engine/selection.py): entry indices; anything
    else (a crafted or older run.json) is none, so every entry not hit stays unmatched."""
    return [i for i in value if type(i) is int] if isinstance(value, list) else []
