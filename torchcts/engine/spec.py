"""The run spec: the run (model/run.py: `Run`, run.json typed) with what run.json does not keep.

cli/common.py builds it from the flags and checks them there (every error a UsageError);
engine/setup.py: prepare resolves the claims and the device into it (`resolved`); engine/execute.py:
open_run adds what the run opened with and writes it as run.json (`Run.to_json`, the one
serialiser); every other pytest process of the run (xdist workers, rerun sessions) reads run.json
back (`rundir.read_run`) and takes it as its spec (`from_run`). A spec is a `Run`: whatever reads a
run (repro lines, the ledger) reads the spec as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from torchcts import settings
from torchcts.errors import UsageError
from torchcts.model.device import DeviceInfo
from torchcts.model.manifest import Manifest
from torchcts.model.run import Run
from torchcts.model.selection import Selection
from torchcts.workers.crash_budget import DEFAULT_LIMIT

DEFAULT_RESULTS_DIR = Path(settings.RESULTS_DIR)

# run.json keys a spec always writes, null included (what the run asked and resolved to): a
# reader tells "not set" (null) from "an older run without it" (absent).
SPEC_KEYS = frozenset({
    "name", "device", "gate", "validation", "manifest", "manifest_hash", "manifest_source", "manifest_arg",
    "command", "selection", "started", "filtered", "sharded_out", "planned", "strict_expectations",
    "rerun_failures", "repeat", "isolation", "timeout_s", "crash_budget", "explore", "expectations_outside_selection",
})


@dataclass
class RunSpec(Run):
    """One run of `torchcts run` (or the would-be run of `show-skips`): the run.json fields with the
    values the engine runs by (an absent or crafted value read back is normalised, `from_run`), and
    the flags run.json does not keep."""

    # --- run.json's fields, as the engine runs by them (Run's docstrings say what each is) ---
    validation: bool = False
    command: list[Any] = field(default_factory=list)  # paths reduced to base names (cli/common.py: command_intent)
    selection: Selection = field(default_factory=Selection)
    planned: int = 0
    filtered: int = 0
    sharded_out: int = 0
    expectations_outside_selection: list[int] = field(default_factory=list)
    strict_expectations: bool = False
    rerun_failures: int = 0
    isolation: bool = True
    crash_budget: int | None = DEFAULT_LIMIT
    repeat: int = 1
    _keys: frozenset[str] = field(default=SPEC_KEYS, repr=False, compare=False)
    # --- asked, not in run.json ---
    # --device as given; with --validation it is ignored (cpu). run.json's "device" is the resolved one.
    device_arg: str | None = None
    # --warm/--no-warm; None: workers/warm.py decides (on in a terminal, off in CI).
    warm: bool | None = None
    # --results-dir: where run folders go (a path; the run folder lies in it).
    results_dir: Path = DEFAULT_RESULTS_DIR
    # Arguments after `--`, for pytest (`command` holds them).
    pytest_args: list[str] = field(default_factory=list)
    # --corpus DIR as given: the counterexample corpus explore cases replay first and merge their finds
    # into (a path): it travels on pytest's command line (--torchcts-corpus).
    corpus: str | None = None

    @property
    def device_type(self) -> str:  # type: ignore[override]  # a prepared spec always has its device
        """The device the cases run on (after prepare)."""
        if self.device is None:
            raise RuntimeError("the run spec is not prepared: no device resolved yet")
        return self.device.type

    def resolved(self, manifest: Manifest, device: DeviceInfo | None) -> RunSpec:
        """This spec with its claims and device (engine/setup.py: prepare), and what run.json derives
        from them."""
        return replace(self, manifest=manifest, manifest_hash=manifest.hash(), manifest_source=manifest.source,
                       device=device, gate=device.gate if device is not None else None)

    @classmethod
    def from_json(cls, data: Any, where: str = "run.json") -> RunSpec:
        """A run.json's object as a spec: read as `rundir.read_run` reads one (`Run.from_json`, then
        the claims' own checks), then `from_run`."""
        from torchcts.manifest.validate import check_run_claims

        return cls.from_run(check_run_claims(Run.from_json(data, where), where))

    @classmethod
    def from_run(cls, run: Run) -> RunSpec:
        """The spec of a run.json read back typed (rundir.read_run): what a run's own processes run.
        Device, claims or selection it lacks are a UsageError naming the problem."""
        missing = next((k for k in ("device", "manifest", "selection") if getattr(run, k) is None), None)
        problem = f"no {missing}" if missing else "no device type" if not run.device_type else next(
            (f"{k} holds {', '.join(run.unread_keys(k))[:120]}" for k in ("device", "manifest", "selection")
             if run.unread_keys(k)), None) or next(
            (f"{k} lacks {', '.join(run.missing_keys(k))}" for k in ("device", "manifest") if run.missing_keys(k)), None)
        if problem:
            raise UsageError(f"run.json of run '{run.name}' does not describe a run ({problem}): restore it or rerun")
        assert run.device is not None
        values = {f.name: getattr(run, f.name) for f in fields(Run)}
        values.update(
            validation=bool(run.validation), strict_expectations=bool(run.strict_expectations),
            rerun_failures=run.rerun_failures or 0, repeat=_repeat(run.repeat), explore=_depth(run.explore),
            isolation=run.isolation is not False,  # an older run.json without it ran isolated
            crash_budget=_crash_budget(run.crash_budget), command=list(run.command or []),
            planned=run.planned or 0, filtered=run.filtered or 0, sharded_out=run.sharded_out or 0,
            expectations_outside_selection=list(run.expectations_outside_selection or []),
        )
        return cls(**values, device_arg=run.device.type)


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
