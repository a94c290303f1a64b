"""The run spec: everything one run was asked for and resolved to, in one typed object.

cli/common.py builds it from the flags and checks them there (every error a UsageError);
engine/setup.py: prepare resolves the claims and the device into it; engine/execute.py: open_run
adds what the run opened with and writes it as run.json (`to_json`); every other pytest process of
the run (xdist workers, rerun sessions) reads it back typed (`from_json`). run.json's key names are
the ones reports, compare, merge and users read; `finalize` later adds ended/status/totals there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts import settings
from torchcts.errors import UsageError
from torchcts.manifest.schema import Manifest
from torchcts.model.device import DeviceInfo
from torchcts.model.selection import Selection
from torchcts.results.records.outcome import RunOutcome
from torchcts.workers.crash_budget import DEFAULT_LIMIT

DEFAULT_RESULTS_DIR = Path(settings.RESULTS_DIR)


@dataclass
class RunSpec:
    """One run of `torchcts run` (or the would-be run of `show-skips`)."""

    # --- Asked: the flags, checked once in cli/common.py: run_spec ---
    # --device as given; with --validation it is ignored (cpu). Not in run.json (its "device" is
    # `device_info`); read back it is the resolved device's type.
    device: str | None = None
    # --manifest as given (None: manifest.py/torchcts.toml/pyproject.toml found here, the built-in
    # claims, or --validation); repro lines repeat it. run.json "manifest_arg", scrubbed there.
    manifest_arg: str | None = None
    # The user's selection flags (--suite, --op, --dtype, levels, --case, --shard...); run.json "selection".
    selection: Selection = field(default_factory=Selection)
    # --validation: a harness check on cpu with the built-in broad claims, never backend evidence.
    validation: bool = False
    # --strict-expectations: expired/unmatched ledger entries, xpassed and flaky cases fail the run.
    strict_expectations: bool = False
    # --rerun-failures N: rerun failing cases up to N times in fresh pytest processes (engine/rerun.py).
    rerun_failures: int = 0
    # --repeat N: each case runs N times in its process, a case failing some is `flaky` with its pass rate
    # (engine/repeat.py, results/reports/repeats.py); 1: once. run.json "repeat".
    repeat: int = 1
    # --timeout: the per-case limit in seconds, None for none (the flag's 0). run.json "timeout_s".
    timeout_s: float | None = None
    # --crash-budget N: after N crashes with one signature in an op family, the family's other cases
    # are recorded not_run (workers/crash_budget.py); None with --no-crash-budget. run.json "crash_budget".
    crash_budget: int | None = DEFAULT_LIMIT
    # False with --no-isolation: cases run in the pytest process itself, no xdist workers.
    isolation: bool = True
    # --warm/--no-warm; None: workers/warm.py decides (on in a terminal, off in CI). Not in run.json.
    warm: bool | None = None
    # --results-dir: where run folders go. Not in run.json (a path; the run folder lies in it).
    results_dir: Path = DEFAULT_RESULTS_DIR
    # Arguments after `--`, for pytest. Not in run.json as such (`command` holds them).
    pytest_args: list[str] = field(default_factory=list)
    # The command line with every path reduced to its base name (cli/common.py: command_intent).
    command: list[str] = field(default_factory=list)
    # --explore N: explored samples per explore case; None until setup resolves the default of the
    # selection's top level (cases/explore/budget.py). run.json "explore".
    explore: int | None = None
    # --corpus DIR as given: the counterexample corpus explore cases replay first and merge their finds
    # into. Not in run.json (a path): it travels on pytest's command line (--torchcts-corpus).
    corpus: str | None = None

    # --- Resolved by engine/setup.py: prepare (None before) ---
    # The device the cases run on; run.json "device" (and its gate again as "gate").
    device_info: DeviceInfo | None = None
    # The claims the run checks (validation, given/found or built-in); run.json "manifest", with
    # "manifest_hash" and "manifest_source" derived from it.
    manifest: Manifest | None = None

    # --- Set when the run opens (engine/execute.py: open_run) ---
    name: str | None = None  # the run folder's name
    started: str | None = None  # UTC, rundir.utc_now()
    planned: int = 0  # cases handed to pytest (plan.jsonl)
    filtered: int = 0  # cases the user's selection left out (counted, not recorded)
    sharded_out: int = 0  # cases other shards run (--shard)
    # ledger entries naming only cases outside the selection (engine/selection.py): not judged, never
    # "unmatched". run.json "expectations_outside_selection".
    ledger_outside: list[int] = field(default_factory=list)
    # Every other run.json key, as written or read: the versions and machine (torchcts, torch,
    # python, os, arch), compat_fallbacks, threads, and what finalize and reruns add (ended, status,
    # totals, reruns...). Descriptions for reports; nothing in a run decides on them.
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def device_type(self) -> str:
        """The device the cases run on (after prepare)."""
        if self.device_info is None:
            raise RuntimeError("the run spec is not prepared: no device resolved yet")
        return self.device_info.type

    def to_json(self) -> dict[str, Any]:
        """run.json: the facts, then every typed field under its run.json key."""
        data = dict(self.facts)
        data.update(
            name=self.name,
            device=self.device_info.to_json() if self.device_info else None,
            gate=self.device_info.gate if self.device_info else None,
            validation=self.validation,
            manifest=self.manifest.to_json() if self.manifest else None,
            manifest_hash=self.manifest.hash() if self.manifest else None,
            manifest_source=self.manifest.source if self.manifest else None,
            manifest_arg=self.manifest_arg,
            command=list(self.command),
            selection=self.selection.to_json(),
            started=self.started,
            filtered=self.filtered,
            sharded_out=self.sharded_out,
            expectations_outside_selection=list(self.ledger_outside),
            planned=self.planned,
            strict_expectations=self.strict_expectations,
            rerun_failures=self.rerun_failures,
            repeat=self.repeat,
            isolation=self.isolation,
            timeout_s=self.timeout_s,
            crash_budget=self.crash_budget,
            explore=self.explore,
        )
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        """A run.json's object: checked and typed by its one reader (RunOutcome.from_json), then resolved."""
        return cls.from_outcome(RunOutcome.from_json(data, f"run.json of run '{data.get('name')}'"))

    @classmethod
    def from_outcome(cls, run: RunOutcome) -> RunSpec:
        """The spec of a run.json read back typed (rundir.read_run): what a run's own processes run.
        Device, claims or selection that do not resolve are a UsageError naming the problem."""
        try:
            if run.manifest is None or run.selection is None:
                raise KeyError("manifest" if run.manifest is None else "selection")
            device_info = DeviceInfo(**(run.device or {}))
            manifest = Manifest.from_json(run.manifest, source=run.manifest_source or "<run.json>")
            return cls(
                device=device_info.type,
                manifest_arg=run.manifest_arg,
                selection=Selection.from_json(run.selection),
                validation=bool(run.validation),
                strict_expectations=bool(run.strict_expectations),
                rerun_failures=run.rerun_failures or 0,
                repeat=_repeat(run.repeat),
                timeout_s=run.timeout_s,
                explore=_depth(run.explore),
                isolation=run.isolation is not False,  # an older run.json without it ran isolated
                crash_budget=_crash_budget(run.crash_budget),
                command=list(run.command or []),
                device_info=device_info,
                manifest=manifest,
                name=run.name,
                started=run.started,
                planned=run.planned or 0,
                filtered=run.filtered or 0,
                sharded_out=run.sharded_out or 0,
                ledger_outside=list(run.expectations_outside_selection or []),
                facts={k: v for k, v in run.to_json().items() if k not in _TYPED_KEYS},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"run.json of run '{run.name}' does not describe a run "
                             f"({type(exc).__name__}: {str(exc)[:120]}): restore it or rerun") from None


# run.json keys the typed fields write (RunSpec.to_json); every other key travels in `facts`.
_TYPED_KEYS = frozenset({
    "name", "device", "gate", "validation", "manifest", "manifest_hash", "manifest_source", "manifest_arg",
    "command", "selection", "started", "filtered", "sharded_out", "planned", "strict_expectations",
    "rerun_failures", "repeat", "isolation", "timeout_s", "crash_budget", "explore", "expectations_outside_selection",
})


def _crash_budget(value: Any) -> int | None:
    """run.json's crash_budget: a positive count, else none (a run.json from before the budget: none)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _repeat(value: Any) -> int:
    """run.json's "repeat": 1 to MAX_REPEAT runs per case; anything else (an older run, an edit) once."""
    from torchcts.results.reports.repeat_rate import MAX_REPEAT

    return value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_REPEAT else 1


def _depth(value: Any) -> int | None:
    """run.json's "explore": a depth >= 0, or None (an older run, or a hand-edited value)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
