"""A run: run.json typed, from the flags that asked for it to how it ended, one type for every reader.

run.json holds what a run was asked and resolved to (the flags, the device, the claims, the user's
selection: written when the run opens, engine/execute.py), what it opened with (versions,
fallbacks, the sim's variables) and how it ended (results/records/finalize.py: status, totals, the
ledger's report, unreadable records, the plan's state; reruns, merge and coverage add theirs).
`Run` is that file typed: the engine's spec is a `Run` with the flags run.json does not keep
(engine/spec.py: `RunSpec`), and every report reads a `Run` through `rundir.read_run`. The device,
the claims and the selection are typed too (`DeviceInfo`, `Manifest`, `Selection`).

`from_json` reads an untrusted run.json (a downloaded run folder): a field of the wrong type is
refused with one line (a `UsageError`, exit 2), never met later by a report (exit 3); a key an
older run.json lacks is absent (None). Keys no field names travel unchanged in `extra`, and
`Run.from_json(d).to_json() == d` for every run.json TorchCTS writes and every older one: a nested
object is written back as it was read (an older run's partial `device` stays partial) unless the
field was given a new value; a nested key no field names (a newer TorchCTS's) is read around and
written back, and refused by the run's own processes (engine/spec.py: `RunSpec.from_run`), as are
claims that lack a key a Manifest needs (`missing_keys`). The claims' own checks (manifest/validate.py) are the reader's
(`rundir.read_run`), since the model imports nothing of the manifest package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from torchcts.errors import UsageError
from torchcts.model.device import DeviceInfo
from torchcts.model.manifest import Manifest
from torchcts.model.selection import Selection
from torchcts.untrusted import device_type

_TEXT = (str,)
_INT = (int,)
_BOOL = (bool,)
_DICT = (dict,)
_LIST = (list,)


@dataclass
class Run:
    """run.json typed. None: the key is absent (an older run, or not yet finalised); `_keys` keeps
    the keys the source held, written back even when null (an open run's `ended`)."""

    # --- the run as asked and resolved (cli/common.py: run_spec, engine/setup.py: prepare) ---
    name: str | None = None  # the run folder's name
    device: DeviceInfo | None = None  # the device the cases run on (backends/devices.py: resolve_device)
    gate: str | None = None  # the device's backend gate
    validation: bool | None = None  # --validation: a harness check on cpu, never backend evidence
    manifest: Manifest | None = None  # the claims; its `expectations` is the ledger
    manifest_hash: str | None = None
    manifest_source: str | None = None
    manifest_arg: str | None = None  # --manifest as given, scrubbed
    command: list[Any] | None = None  # the command line, paths reduced to base names
    selection: Selection | None = None  # the user's selection (shard: (I, N))
    started: str | None = None  # UTC; the ledger is judged at this date
    planned: int | None = None  # cases handed to pytest (plan.jsonl)
    filtered: int | None = None  # cases the selection left out (counted, not recorded)
    sharded_out: int | None = None  # cases other shards run (--shard)
    # ledger entries naming only cases outside the selection (engine/selection.py): not judged, never "unmatched"
    expectations_outside_selection: list[int] | None = None
    strict_expectations: bool | None = None  # expired/unmatched entries, xpassed and flaky cases fail the run
    rerun_failures: int | None = None  # --rerun-failures N (engine/rerun.py)
    isolation: bool | None = None  # False with --no-isolation; None: an older run.json, which ran isolated
    timeout_s: float | None = None  # --timeout, None for none
    crash_budget: int | None = None  # --crash-budget N (workers/crash_budget.py); None: no budget
    explore: int | None = None  # --explore N: explored samples per explore case (cases/explore/budget.py)
    repeat: int | None = None  # --repeat N: each case ran N times (absent in older runs: once)
    # --- what it opened with (engine/execute.py: opening_facts) ---
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
    # --- keys no field names (python, os, arch, threads, a newer TorchCTS's): kept and written back ---
    extra: dict[str, Any] = field(default_factory=dict)
    _keys: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    # The nested objects as the source held them, with the typed value read from each: written back
    # unchanged while the field still holds that value (deepcopy keeps the pair together).
    _read: dict[str, tuple[Any, Any]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def device_type(self) -> str | None:
        return self.device.type if self.device is not None else None

    @property
    def torch_drift(self) -> str | None:
        """The sentence saying the run's torch is outside the validated range (compat.build_info), if so."""
        value = (self.torch or {}).get("drift")
        return value if isinstance(value, str) and value else None

    @property
    def entries(self) -> list[dict[str, Any]]:
        """The ledger's entries (the manifest's expectations), in order: their indices are the ledger's."""
        return list(self.manifest.expectations or []) if self.manifest is not None else []

    def unset(self, *names: str) -> None:
        """Drop these keys from run.json (finalize: the plan-missing marks once the plan is there)."""
        for name in names:
            setattr(self, name, None)
        self._keys = self._keys - set(names)

    def to_json(self) -> dict[str, Any]:
        """run.json: `extra`, then each field set (or held by the source), nested objects as JSON."""
        out = dict(self.extra)
        for name in _FIELDS:
            value = getattr(self, name)
            if value is not None or name in self._keys:
                read = self._read.get(name)
                if read is not None and read[1] is value:
                    out[name] = read[0]
                else:
                    out[name] = value.to_json() if name in _NESTED and value is not None else value
        return out

    def source_of(self, name: str) -> dict[str, Any]:
        """The nested object `name` (device, manifest, selection) as run.json holds it: as the source
        held it while the field keeps the value read from it, else the field's JSON; {} for none (the
        claims' own checks read it: rundir.read_run)."""
        read, value = self._read.get(name), getattr(self, name)
        raw = read[0] if read is not None and read[1] is value else value.to_json() if value is not None else {}
        return raw if isinstance(raw, dict) else {}

    def unread_keys(self, name: str) -> list[str]:
        """The keys of the nested object `name` as the source held it that its typed value has no
        field for (a newer TorchCTS's, or an edit); [] when none."""
        return sorted(str(k) for k in self.source_of(name) if k not in _KNOWN[name])

    def missing_keys(self, name: str) -> list[str]:
        """The keys the nested object `name` must hold to describe a run that the source lacks (its
        typed value has a default there: an older or edited run.json); [] when none."""
        source = self.source_of(name)
        return [k for k in _REQUIRED[name] if k not in source]

    def scrubbed(self, scrub_obj: Callable[[Any], Any]) -> Run:
        """The same run with every text passed through `scrub_obj` (results/records/scrub.py, before
        rendering reports): it keeps every value's type, so nothing is checked again."""
        return Run._typed(scrub_obj(self.to_json()))

    @classmethod
    def from_json(cls, data: Any, where: str = "run.json") -> Run:
        """A run.json's object, typed; `where` names the file in the one-line refusal (UsageError)."""
        if not isinstance(data, dict) or not all(isinstance(data.get(k, {}), dict) for k in _NESTED):
            raise UsageError(f"{where} is not a TorchCTS run description (not an object, or device/"
                             "manifest/selection of the wrong type): restore it or rerun")
        wrong = _wrong_field(data)
        if wrong:
            raise UsageError(f"{where}: {wrong} (edited or damaged): restore it or rerun")
        return Run._typed(data)

    @classmethod
    def _typed(cls, data: dict[str, Any]) -> Run:
        known = {k: v for k, v in data.items() if k in _FIELD_SET}
        read: dict[str, tuple[Any, Any]] = {}
        for name, make in _NESTED.items():
            if name in known:
                raw = known[name]
                known[name] = make(raw, data) if raw or name == "selection" else None  # {}: select all
                read[name] = (raw, known[name])
        if "expectations_outside_selection" in known:
            known["expectations_outside_selection"] = entry_indices(known["expectations_outside_selection"])
        extra = {k: v for k, v in data.items() if k not in _FIELD_SET}
        return cls(**known, extra=extra, _keys=frozenset(known), _read=read)


def _device(raw: dict[str, Any], run: dict[str, Any]) -> DeviceInfo:
    """run.json's "device" typed; its type normalised once, here: every rule and report after sees
    `mps` for `MPS:0` or `mps\u200b`. A key an older run lacks is None."""
    kind = raw.get("type")
    return DeviceInfo(type=device_type(kind) if isinstance(kind, str) else "", gate=raw.get("gate"),
                      count=raw.get("count"), model=raw.get("model"), note=raw.get("note"))


def _manifest(raw: dict[str, Any], run: dict[str, Any]) -> Manifest:
    """run.json's "manifest" typed: the claims as the run checked them (manifest/validate.py judged
    them there; the reader judges them again). A key an older or crafted one lacks: the default."""
    known = Manifest.known_fields(raw)
    source = run.get("manifest_source")
    return Manifest(**{"device_name": "", "supported_dtypes": {}, "capabilities": {}, **known},
                    source=source if isinstance(source, str) else "<run.json>")


def _selection(raw: dict[str, Any], run: dict[str, Any]) -> Selection:
    """run.json's "selection" typed; a key no Selection has (a newer TorchCTS's) is left out here,
    written back as read, and refused by the run's own processes (engine/spec.py: from_run)."""
    return Selection.from_json({k: v for k, v in raw.items() if k in SELECTION_TYPES})


_NESTED: dict[str, Callable[[dict[str, Any], dict[str, Any]], Any]] = {
    "device": _device, "manifest": _manifest, "selection": _selection,
}
_FIELDS = tuple(f.name for f in fields(Run) if f.name not in ("extra", "_keys", "_read"))

_FIELD_SET = frozenset(_FIELDS)
FIELD_KEYS = _FIELD_SET  # the run.json keys Run's fields name; any other travels in `extra`

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
# The nested objects' fields: their types besides null (device.type must be text when present).
DEVICE_TYPES: dict[str, tuple[type, ...]] = {"type": _TEXT, "gate": _TEXT, "count": _INT, "model": _TEXT, "note": _TEXT}
SELECTION_TYPES: dict[str, str] = {
    "suites": "texts", "ops": "texts", "dtypes": "texts", "cases": "texts", "level": "int", "level_exact": "int",
    "level_range": "pair", "max_samples": "int", "sample": "int", "shard": "pair",
}
# Each nested object's keys its type has a field for (`Run.unread_keys`), and those it must hold
# (`Run.missing_keys`: the typed value's default stands in for any other a source lacks).
_KNOWN = {"device": frozenset(f.name for f in fields(DeviceInfo)), "selection": frozenset(SELECTION_TYPES),
          "manifest": frozenset(f.name for f in fields(Manifest)) - {"source"}}
_REQUIRED = {"device": ("type", "gate", "count"), "selection": (),
             "manifest": ("device_name", "supported_dtypes", "capabilities")}


def _wrong_field(run: dict[str, Any]) -> str | None:
    """The first field whose type is wrong (a crafted or damaged file), said as `<field> has the
    wrong type`; None when every one is right."""
    for key, types in TYPES.items():
        value = run.get(key)
        if value is None and (key not in _NOT_NULL or key not in run):
            continue
        if not _is(value, types):
            return f"{key} has the wrong type ({type(value).__name__})"
    for key, types in DEVICE_TYPES.items():
        value = (run.get("device") or {}).get(key)
        if value is not None and not _is(value, types):
            return f"device.{key} has the wrong type"
    wrong = _selection_problem(run.get("selection") or {})
    if wrong:
        return wrong
    entries = (run.get("manifest") or {}).get("expectations", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return "manifest.expectations has the wrong type"
    if not _all(run.get("compat_fallbacks"), str):
        return "compat_fallbacks has the wrong type"
    if not _all((run.get("totals") or {}).values(), int):
        return "totals has the wrong type (a count that is not a number)"
    if not _all(run.get("record_problems"), str):
        return "record_problems has the wrong type"
    return None


def _selection_problem(selection: dict[str, Any]) -> str | None:
    """`selection.<key> ...` for a key no Selection has or a value of the wrong type; None if none."""
    for key, value in selection.items():
        kind = SELECTION_TYPES.get(key)
        if kind is None:  # a newer TorchCTS's: readers leave it out (Run.unread_keys)
            continue
        ok = (value is None and kind != "texts") or (
            kind == "texts" and isinstance(value, list) and all(isinstance(v, str) for v in value)) or (
            kind == "int" and _is(value, _INT)) or (
            kind == "pair" and isinstance(value, list) and len(value) == 2 and all(_is(v, _INT) for v in value))
        if not ok:
            return f"selection.{key} has the wrong type"
    return None


def _is(value: Any, types: tuple[type, ...]) -> bool:
    """`value` is one of `types`, a bool never an int."""
    return isinstance(value, types) and (not isinstance(value, bool) or bool in types)


def _all(items: Any, kind: type) -> bool:
    """Every item of a list (or dict view) is `kind` (a bool is no int); anything else passes."""
    if isinstance(items, dict) or items is None:
        return True
    return all(isinstance(v, kind) and not (kind is int and isinstance(v, bool)) for v in items)


def entry_indices(value: Any) -> list[int]:
    """run.json's "expectations_outside_selection" (engine/selection.py): entry indices; anything
    else (a crafted or older run.json) is none, so every entry not hit stays unmatched."""
    return [i for i in value if type(i) is int] if isinstance(value, list) else []
