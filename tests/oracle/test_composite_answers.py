"""Issue 40 item 4: no false failures on a backend built on PyTorch's fallbacks and composites.

1. A device without its own kernel for addr, native_layer_norm or native_group_norm runs their
   CompositeExplicitAutograd kernels, whose answers differ from CPU's fused kernels on explored
   extremes, non-finite values and eps = 0: that answer is allowed (oracle/allowed.py: CompositeRule,
   computed on CPU by oracle/composite.py), forward and backward, and only for such a device; an answer
   that is neither CPU's nor the composite's still fails.
2. OpInfo's output helper (the sign-fixing abs of an SVD's factors) runs on a CPU copy of the
   device's output: a device whose abs is broken still passes svd's cases.
"""

from __future__ import annotations

import json

import pytest
import torch
from helpers.runs import latest_run, run_cli

from torchcts.cases.opinfo.run import or_composite
from torchcts.oracle.allowed import RULES, CompositeRule
from torchcts.oracle.compare import Mismatch, OracleMismatch
from torchcts.oracle.composite import composite_answer, routed_to_composite


def _layer_norm_of_zeros() -> torch.Tensor:
    return torch.nn.functional.layer_norm(torch.zeros(2, 3), [3], eps=0.0)


def test_the_composite_answers_differ_from_cpus_on_these_inputs():
    assert torch.isnan(_layer_norm_of_zeros()).all()  # CPU's Welford kernel: NaN
    composite = torch.ops.aten.native_layer_norm.default._op_dk(
        torch._C.DispatchKey.CompositeExplicitAutograd, torch.zeros(2, 3), [3], None, None, 0.0)[0]
    assert torch.equal(composite, torch.zeros(2, 3))  # math_native_layer_norm: 0


def test_every_composite_rule_names_its_reason_and_a_composite_kernel():
    rules = [r for r in RULES if isinstance(r, CompositeRule)]
    assert {r.name for r in rules} == {"addr_composite", "layer_norm_composite", "group_norm_composite"}
    for rule in rules:
        assert rule.reason and "CompositeExplicitAutograd" in rule.source
        for overload in rule.overloads:
            name = f"aten::{overload.removesuffix('.default')}"
            assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd"), name


def test_only_a_device_without_its_own_kernel_gets_the_second_answer():
    assert routed_to_composite("cpu") == frozenset()  # CPU has its kernels: CPU's answer only
    assert composite_answer(_layer_norm_of_zeros, "cpu") is None
    assert composite_answer(_layer_norm_of_zeros, "meta") is None or "native_layer_norm.default" not in \
        routed_to_composite("meta")
    assert routed_to_composite("no-such-device") == frozenset()


def test_the_composite_answer_is_computed_on_cpu_for_the_routed_ops_only(monkeypatch):
    import torchcts.oracle.composite as composite

    monkeypatch.setattr(composite, "routed_to_composite", lambda device: frozenset({"native_layer_norm.default"}))
    out, rules = composite_answer(_layer_norm_of_zeros, "sim")
    assert torch.equal(out, torch.zeros(2, 3)) and rules == ["layer_norm_composite"]
    assert composite_answer(lambda: torch.sin(torch.zeros(2)), "sim") is None  # no routed op ran: no second answer


def _mismatch(what: str) -> OracleMismatch:
    return OracleMismatch(Mismatch(what))


class _Ctx:
    def __init__(self) -> None:
        self.info: dict = {}

    def describe(self, **kw: object) -> None:
        self.info.update(kw)


def test_an_answer_that_is_neither_cpus_nor_the_composites_still_fails():
    def cpu() -> None:
        raise _mismatch("differs from CPU")

    def other(reference: object) -> None:
        if reference != "composite":
            raise _mismatch("differs from the composite")

    ctx = _Ctx()
    or_composite(ctx, cpu, other, lambda: ("composite", ["layer_norm_composite"]))  # the composite's answer: passes
    assert ctx.info == {"allowed_answer": "layer_norm_composite"}
    with pytest.raises(OracleMismatch, match="differs from CPU"):  # neither: CPU's mismatch stands
        or_composite(_Ctx(), cpu, other, lambda: ("something else", ["layer_norm_composite"]))
    with pytest.raises(OracleMismatch, match="differs from CPU"):  # no composite for this device
        or_composite(_Ctx(), cpu, other, lambda: None)


SIM = ["--device", "sim", "--manifest", "torchcts:sim/manifest_decomp.py"]


@pytest.mark.main_only
def test_a_backend_running_the_composites_passes_their_explored_extremes(workdir):
    """The sim in composite mode runs PyTorch's C++ composite kernels (a C++ backend without these
    kernels): before the rule, the explore cases of addr and the norms failed (ledger entries)."""
    proc = run_cli("run", *SIM, "--op", "addr", "--op", "native_layer_norm", "--op", "nn.functional.group_norm",
                   "--dtype", "float32", "--suite", "opinfo", cwd=workdir, env={"TORCHCTS_SIM_DECOMP": "composite"})
    assert proc.returncode == 0, proc.stdout[-3000:]
    records = [json.loads(line) for line in (latest_run(workdir) / "cases.jsonl").open()]
    allowed = {r["id"]: r["info"]["allowed_answer"] for r in records if (r.get("info") or {}).get("allowed_answer")}
    assert any(k.startswith("opinfo/addr/") for k in allowed) and any("norm" in k for k in allowed), allowed
    assert all(r["status"] in ("passed", "not_applicable") for r in records if r["status"] != "filtered")
