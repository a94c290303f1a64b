"""`coverage collect-backend-evidence`: run the oracles of the selected surfaces, append records.

Every usage check (gate vs device, device availability, manifest, `--surface` names) happens
before the store is touched. Surfaces are selected by `--surface`, or by default: every surface
covered by a case of the hand-written suites (all suites but DEFAULT_EXCLUDED_SUITES) at levels
up to `--level` (default: the manifest's semantic_level; 2 for the built-in claims), which keeps
a CPU collection to seconds. With `--surface`, every registered suite supplies oracles.
"""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts.backends.gates import IN_TREE_DEVICES, Gate, check_gates_for_device, parse_gates
from torchcts.errors import ExitCode, UsageError
from torchcts.evidence import store as st
from torchcts.evidence.privacy import leaks, local_identities
from torchcts.model.case import Case
from torchcts.model.manifest import Manifest

DEFAULT_EXCLUDED_SUITES = ("opinfo", "generated")
BUILTIN_LEVEL = 2


@dataclass
class CollectRequest:
    """What `coverage collect-backend-evidence` asks for, already checked by cli/ (device given,
    level in range, not a validation run)."""

    device: str
    store: str
    backend_gate: str  # gate names joined with "+"
    manifest: str | None = None
    level: int | None = None
    suites: list[str] = field(default_factory=list)
    surfaces: list[str] = field(default_factory=list)
    run_pending: bool = False
    require_oracle_results: bool = False
    fail_on_oracle_failure: bool = False
    intent: list[str] = field(default_factory=list)  # the command, paths reduced to base names


@dataclass
class Plan:
    gates: list[Gate]
    device: Any  # DeviceInfo
    manifest: Manifest
    level: int
    suites: list[str]
    surfaces: list[str]
    cases_by_surface: dict[str, list[Case]]
    cases: list[Case] = field(default_factory=list)
    # Default selection: the surfaces the cases declare and those they are observed to dispatch.
    observe: bool = False


def evidence_claims(req: CollectRequest) -> Manifest:
    """The manifest given or found here; without one, in-tree devices use the broad built-in claims."""
    from torchcts.manifest.load import find_manifest
    from torchcts.manifest.templates import validation_manifest

    if req.manifest or find_manifest() is not None or req.device not in IN_TREE_DEVICES:
        from torchcts.engine.setup import load_claims

        return load_claims(req.device, req.manifest)
    m = validation_manifest()
    m.device_name = req.device
    m.semantic_level = BUILTIN_LEVEL
    m.source = "<built-in evidence claims>"
    return m


def choose_suites(req: CollectRequest) -> list[str]:
    from torchcts.cases.registry import SUITES

    for s in req.suites:
        if s not in SUITES:
            raise UsageError(f"unknown or unavailable suite '{s}' for --suite; registered: {', '.join(SUITES)}")
    if req.suites:
        return list(dict.fromkeys(req.suites))
    if req.surfaces:
        return list(SUITES)
    return [s for s in SUITES if s not in DEFAULT_EXCLUDED_SUITES]


def plan(req: CollectRequest) -> Plan:
    """Everything decided, nothing written: raises UsageError for any bad input."""
    from torchcts.backends.devices import resolve_device
    from torchcts.compat import check_torch_version
    from torchcts.coverage.inventory import load_cases
    from torchcts.coverage.mapping import build_coverage, select_surfaces

    gates = parse_gates(req.backend_gate)
    check_gates_for_device(gates, req.device)
    check_torch_version()
    if req.device in IN_TREE_DEVICES:  # say "not available" before "no manifest"
        resolve_device(req.device)
    manifest = evidence_claims(req)
    device = resolve_device(req.device, manifest.backend_import)
    level = req.level or manifest.semantic_level
    suites = choose_suites(req)
    cases = [c for c in load_cases(tuple(suites)) if c.level <= level]
    cov = build_coverage(cases)
    surfaces = select_surfaces(req.surfaces) if req.surfaces else sorted(cov.cases_by_surface)
    return Plan(gates, device, manifest, level, suites, surfaces,
                {s: cov.covering(s) for s in surfaces}, cases, observe=not req.surfaces)


def add_observed(p: Plan, observed: dict[str, list[Case]]) -> None:
    """The default selection grows by the surfaces the run cases dispatched; a surface's oracles are
    the cases declaring it and the cases that dispatched it."""
    for surface, cases in observed.items():
        declared = p.cases_by_surface.setdefault(surface, [])
        ids = {c.id for c in declared}
        declared.extend(c for c in cases if c.id not in ids)
    p.surfaces = sorted(set(p.surfaces) | set(observed))


def build_records(p: Plan, intent: list[str], run_pending: bool,
                  source_id: str) -> tuple[dict[str, list[dict[str, Any]]], str]:
    """(gate file name -> this collection's records, one per surface, sorted; run status).

    On Ctrl-C the surfaces that finished are kept with run status `interrupted`.
    """
    import torch

    from torchcts.coverage.surfaces import all_surfaces, kernel_table, registration
    from torchcts.evidence.oracles import OracleRunner

    kinds = {s.name: s.kind for s in all_surfaces()}
    runner = OracleRunner(torch.device(p.device.type), p.manifest, run_pending)
    served = {g.name: g.why_not_served() for g in p.gates}
    results: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {}
    run_status = "complete"
    if any(gap is None for gap in served.values()):
        try:
            if p.observe:
                add_observed(p, runner.observed(p.cases))
            for s in p.surfaces:
                results[s] = runner.surface_result(p.cases_by_surface[s], s)
        except KeyboardInterrupt:  # keep what finished; the caller records it and re-raises
            run_status = "interrupted"
    done = [s for s in p.surfaces if s in results] if run_status == "interrupted" else p.surfaces
    table = kernel_table()
    out: dict[str, list[dict[str, Any]]] = {}
    for g in p.gates:
        recs = []
        for s in done:
            gap = served[g.name]
            if gap is None:
                oracles, result = results[s]
            else:
                oracles, result = [], {"status": "not_applicable", "reason": f"gate {g.name}: {gap}"}
            recs.append({
                "surface": s,
                "kind": kinds.get(s, "functional"),
                "gate": g.name,
                "device": p.device.type,
                "source": source_id,
                "registration": registration(s, g.dispatch_key, table),
                "oracles": oracles,
                "result": result,
                "level": p.level,
                "intent": intent,
                "run_status": run_status,
            })
        out[st.gate_file(g.name)] = recs
    return out, run_status


def exit_status(records: dict[str, list[dict[str, Any]]], p: Plan, require: bool, fail_on_failure: bool) -> tuple[int, list[str]]:
    served = [st.gate_file(g.name) for g in p.gates if g.why_not_served() is None]
    problems: list[str] = []
    if require:
        if not served:
            problems.append("no gate of --backend-gate is served by this build: no oracle results")
        for name in served:
            for r in records[name]:
                if r["result"]["status"] not in ("passed", "failed"):
                    problems.append(f"no oracle result for {r['surface']} ({r['gate']}): {r['result']['reason']}")
    if fail_on_failure:
        for name in served:
            for r in records[name]:
                if r["result"]["status"] == "failed":
                    problems.append(f"oracle failed for {r['surface']} ({r['gate']}): {r['result']['reason']}")
    return (ExitCode.FAILURES if problems else ExitCode.OK), problems


def collect(req: CollectRequest) -> int:
    from torchcts.evidence.sources import make_source
    from torchcts.results.records.rundir import utc_now

    st.check_store(Path(req.store))  # a wrong --store said before the oracles run
    p = plan(req)
    source = make_source(p.device, utc_now())
    records, run_status = build_records(p, req.intent, req.run_pending, source["id"])
    ids = local_identities()  # once per collection, not per record
    for rec in [source, *(r for recs in records.values() for r in recs)]:
        found = leaks(rec, ids)
        if found:
            raise UsageError(f"refusing to write evidence that identifies this machine: {found[0]}")
    store = st.open_store(Path(req.store))
    refuse_unverified(store)
    st.append_all(store, {st.SOURCES: [source], **records})
    if run_status == "interrupted":
        done = max((len(recs) for recs in records.values()), default=0)
        print(f"torchcts: interrupted: recorded the {done} surfaces that finished", file=sys.stderr)
        raise KeyboardInterrupt
    code, problems = exit_status(records, p, req.require_oracle_results, req.fail_on_oracle_failure)
    print_summary(records, source, Path(req.store).name, problems)
    return code


def refuse_unverified(store: Path) -> None:
    """Collect appends only to a store that verifies (the same reader and checks as verify-evidence):
    appending to an edited store would rewrite its index and make the edit verify clean again."""
    from torchcts.evidence.verify import verify_store

    if not st.data_files(store) and not (store / st.INDEX).exists():
        return  # a new store
    problems = verify_store(store)  # with its git history: collect refuses whatever verify-evidence refuses
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"{store.name} does not verify, so nothing was appended: {problems[0]}{more}; run "
                         f"`torchcts coverage verify-evidence {shlex.quote(store.name)}` and restore the store from "
                         "version control")


def print_summary(records: dict[str, list[dict[str, Any]]], source: dict[str, Any], store_name: str,
                  problems: list[str], out=None) -> None:
    out = out or sys.stdout
    for name, recs in records.items():
        counts = Counter(r["result"]["status"] for r in recs)
        shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        print(f"{store_name}/{name}: appended {len(recs)} records (source {source['id']}): {shown}", file=out)
        for r in recs:
            if r["result"]["status"] == "failed":
                print(f"  FAILED {r['surface']}: {r['result']['reason']}", file=out)
    for line in problems[:20]:
        print(f"torchcts: {line}", file=out)
    if len(problems) > 20:
        print(f"torchcts: ... and {len(problems) - 20} more", file=out)
