"""An explore case's find reaches the case's rerun without the dispatch observer through its failure
(cases/explore/find.py, cases/observe.py: `hand_to_rerun`), never through state left in the process."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from torchcts.cases.context import CaseContext
from torchcts.cases.explore import run as explore
from torchcts.cases.explore.find import Find
from torchcts.cases.observe import DispatchObserver, hand_to_rerun, rerun_kwargs
from torchcts.engine.runner import run_case
from torchcts.manifest.templates import validation_manifest
from torchcts.model.case import Case


def _case(op: str = "abs") -> Case:
    return Case(id=f"opinfo/{op}/float32/explore", suite="opinfo", level=2, runner="torchcts.cases.explore.run:run",
                params={"op": op, "variant": "", "kind": "explore", "dtype": "float32"}, dtype="float32",
                kind="explore")


def _ctx(op: str = "abs") -> CaseContext:
    return CaseContext(device=torch.device("cpu"), manifest=validation_manifest(), case=_case(op), explore=2)


def _planted(calls: list[tuple[bool, int]]) -> Any:
    """A forward check failing on every sample with data; notes (observed?, elements) per call."""
    def check(sample: Any) -> None:
        calls.append((isinstance(_get_current_dispatch_mode(), DispatchObserver), sample.input.numel()))
        if sample.input.numel() > 0:
            raise RuntimeError("planted: the kernel is wrong")
    return check


def test_a_failure_hands_keyword_arguments_to_the_rerun_and_nothing_else_does():
    exc = RuntimeError("x")
    assert rerun_kwargs(exc) == {} and rerun_kwargs(ValueError("y")) == {}
    hand_to_rerun(exc, a=1)
    hand_to_rerun(exc, b=2)
    assert rerun_kwargs(exc) == {"a": 1, "b": 2}
    rerun_kwargs(exc)["c"] = 3  # a copy: the failure's own stays as handed
    assert rerun_kwargs(exc) == {"a": 1, "b": 2}


def test_the_rerun_without_the_observer_confirms_the_find_instead_of_exploring(monkeypatch):
    calls: list[tuple[bool, int]] = []
    monkeypatch.setattr(explore, "variants", lambda ctx, op, dtype: {"forward": _planted(calls)})
    ctx = _ctx()
    with pytest.raises(RuntimeError, match="planted"):
        run_case(_case(), ctx)
    observed = [n for seen, n in calls if seen]
    rerun = [n for seen, n in calls if not seen]
    assert len(observed) > 2  # explored, then shrunk under the observer
    shrunk = ctx.info["explore"]
    assert shrunk["variant"] == "forward" and shrunk["failure"] == "RuntimeError" and shrunk["shrink_calls"] > 0
    # the rerun ran only the find's shrunk input (its outcome, then its failure), never exploring again
    assert rerun == [1, 1] and ctx.info["sample"] and ctx.info["sample_index"] == shrunk["index"]
    assert ctx.info["explored"] == {"samples": 1, "checks": 1, "dropped": 0, "replayed": 0}  # the finding run's
    assert "nondeterministic" not in ctx.info and "observer_changed_result" not in ctx.info


def test_a_find_never_reaches_another_run_of_the_same_case(monkeypatch):
    """The find travels with its failure: a later run of the case in this process (a fixed backend,
    another oracle run) explores as a fresh one does, with nothing of the earlier find."""
    calls: list[tuple[bool, int]] = []
    monkeypatch.setattr(explore, "variants", lambda ctx, op, dtype: {"forward": _planted(calls)})
    with pytest.raises(RuntimeError, match="planted") as failure:
        explore.run(_ctx(), op="abs", dtype=torch.float32)  # no observer: nothing reruns it
    found = rerun_kwargs(failure.value)["found"]
    assert isinstance(found, Find) and found.entry.case == "opinfo/abs/float32/explore"
    assert found.explored["samples"] == 1 and found.record["variant"] == "forward"
    monkeypatch.setattr(explore, "variants", lambda ctx, op, dtype: {"forward": lambda sample: None})
    later, fresh = _ctx(), _ctx()
    explore.run(later, op="abs", dtype=torch.float32)
    explore.run(fresh, op="abs", dtype=torch.float32)
    assert later.info == fresh.info and "explore" not in later.info
    assert later.info["explored"]["samples"] == fresh.info["explored"]["samples"] >= 2


def test_two_cases_failing_in_one_process_each_confirm_their_own_find(monkeypatch):
    calls: list[tuple[bool, int]] = []
    monkeypatch.setattr(explore, "variants", lambda ctx, op, dtype: {"forward": _planted(calls)})
    confirmed: list[tuple[str, str]] = []
    confirm = explore._confirm

    def noted(ctx: CaseContext, found: Find, checks: Any) -> None:
        confirmed.append((ctx.case.id, found.entry.case))
        confirm(ctx, found, checks)

    monkeypatch.setattr(explore, "_confirm", noted)
    for op in ("abs", "neg", "abs"):
        with pytest.raises(RuntimeError, match="planted"):
            run_case(_case(op), _ctx(op))
    assert [case for case, _ in confirmed] == [_case(op).id for op in ("abs", "neg", "abs")]
    assert all(case == found for case, found in confirmed)
