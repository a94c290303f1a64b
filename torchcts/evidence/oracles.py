"""Running the oracles of a surface: the TorchCTS cases that cover it, in this process.

An oracle is one case family (a case id without its dtype: `operators/elementwise/add`); its
kind is the case's oracle (`cpu`, `property:<name>`). Each case runs at most once per
collection however many surfaces it covers. Claims apply as in `torchcts run`: an unclaimed dtype
or capability is `not_claimed` and does not count as a result.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from torchcts.engine.selection import claim_decision
from torchcts.errors import first_line
from torchcts.evidence.privacy import scrub
from torchcts.evidence.promoted import is_promoted
from torchcts.model.case import Case, NotApplicable
from torchcts.model.manifest import Manifest
from torchcts.model.status import FAILURES
from torchcts.oracle.compare import OracleMismatch

# Result of one surface (or one oracle) in an evidence record.
RESULTS: dict[str, str] = {
    "passed": "every executed case of its oracles passed",
    "failed": "an executed case failed, raised, crashed or timed out",
    "skipped": "no oracle result: no covering case, a pending oracle, or nothing claimed ran",
    "not_applicable": "the build cannot serve the gate, or every covering case does not apply",
}
PENDING_REASON = "oracle is a pending candidate (not promoted); pass --run-pending-candidates to run it"


def oracle_id(case: Case) -> str:
    """The case id without its dtype component: `opinfo/add/float32/forward` -> `opinfo/add/forward`."""
    parts = case.id.split("/")
    if case.dtype and case.dtype in parts[1:]:
        parts.remove(case.dtype)
    return "/".join(parts)


@dataclass
class Outcome:
    status: str
    message: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    dispatched: list[str] | None = None  # the overloads that reached the device (cases/observe.py)


def run_one(case: Case, device: Any, manifest: Manifest) -> Outcome:
    """Run one case in-process and classify it the way the pytest plugin does."""
    from torchcts.cases.context import CaseContext

    decision = claim_decision(case, manifest)
    if decision.status != "run":
        return Outcome(decision.status, decision.reason)
    ctx = CaseContext(device=device, manifest=manifest)
    out = _run(case, ctx)
    out.dispatched = ctx.verdict.dispatched
    return out


def _run(case: Case, ctx: Any) -> Outcome:
    from torchcts.engine.runner import run_case

    try:
        run_case(case, ctx)
    except NotApplicable as exc:
        return Outcome("not_applicable", scrub(str(exc)))
    except OracleMismatch as exc:
        return Outcome("failed", scrub(str(exc))[:500], {"case": case.id, **exc.mismatch.to_json()})
    except Exception as exc:  # noqa: BLE001 - the backend raised: an error result, recorded
        return Outcome("error", scrub(f"{type(exc).__name__}: {first_line(exc, 500)}"),
                       {"case": case.id, "exception": type(exc).__name__})
    finally:
        ctx.info.clear()
    return Outcome("passed")


class OracleRunner:
    """Runs covering cases once each and folds their outcomes into oracle and surface results."""

    def __init__(self, device: Any, manifest: Manifest, run_pending: bool) -> None:
        self.device = device
        self.manifest = manifest
        self.run_pending = run_pending
        self.outcomes: dict[str, Outcome] = {}

    def outcome(self, case: Case) -> Outcome:
        if case.id not in self.outcomes:
            self.outcomes[case.id] = run_one(case, self.device, self.manifest)
        return self.outcomes[case.id]

    def runs(self, case: Case) -> bool:
        """Whether this collection runs the case: its oracle is promoted, or pending ones are asked for."""
        return self.run_pending or is_promoted(oracle_id(case))

    def observed(self, cases: list[Case]) -> dict[str, list[Case]]:
        """Run each case this collection runs (once); surface -> the cases that dispatched it."""
        found: dict[str, list[Case]] = {}
        for case in cases:
            if self.runs(case):
                for name in self.outcome(case).dispatched or ():
                    found.setdefault(name, []).append(case)
        return found

    def oracle_result(self, oid: str, cases: list[Case], surface: str) -> dict[str, Any]:
        promoted = is_promoted(oid)
        base = {"id": oid, "oracle": cases[0].oracle, "promoted": promoted}
        if not promoted and not self.run_pending:
            return {**base, "status": "skipped", "reason": PENDING_REASON}
        outs = [(c, self.outcome(c)) for c in cases]
        counts = Counter(o.status for _, o in outs)
        base["cases"] = dict(sorted(counts.items()))
        if any(o.dispatched is not None for _, o in outs):
            # Observed: whether a case of this oracle really reached the device's kernel for it.
            base["dispatched"] = any(surface in o.dispatched for _, o in outs if o.dispatched is not None)
        bad = [(c, o) for c, o in outs if o.status in FAILURES]
        if bad:
            case, out = bad[0]
            return {**base, "status": "failed", "reason": f"{case.id}: {out.message}", "metrics": out.metrics}
        if counts.get("passed"):
            return {**base, "status": "passed", "reason": f"{counts['passed']} cases passed"}
        first = outs[0][1]
        status = "not_applicable" if set(counts) == {"not_applicable"} else "skipped"
        return {**base, "status": status, "reason": f"no case ran: {first.status}: {first.message}"}

    def surface_result(self, cases: list[Case], surface: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """(per-oracle results, the surface's result) for the cases covering (declaring or, observed,
        dispatching) one surface."""
        if not cases:
            return [], {"status": "skipped", "reason": "no TorchCTS case covers this surface"}
        groups: dict[str, list[Case]] = {}
        for c in cases:
            groups.setdefault(oracle_id(c), []).append(c)
        oracles = [self.oracle_result(oid, cs, surface) for oid, cs in sorted(groups.items())]
        by_status = {s: [o for o in oracles if o["status"] == s] for s in RESULTS}
        if by_status["failed"]:
            o = by_status["failed"][0]
            return oracles, {"status": "failed", "reason": f"oracle {o['id']}: {o['reason']}", "metrics": o["metrics"]}
        if by_status["passed"]:
            ids = ", ".join(o["id"] for o in by_status["passed"])
            return oracles, {"status": "passed", "reason": f"passed: {ids}"}
        if len(by_status["not_applicable"]) == len(oracles):
            return oracles, {"status": "not_applicable", "reason": oracles[0]["reason"]}
        o = (by_status["skipped"] or oracles)[0]
        return oracles, {"status": "skipped", "reason": f"oracle {o['id']}: {o['reason']}"}
