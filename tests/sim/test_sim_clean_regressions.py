"""Regressions of the clean sim under the OpInfo suite: each was a sim (or harness) bug that failed
a clean run. The device checks run in a child process (importing torchcts.sim renames PrivateUse1)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
from helpers.runs import latest_run, records, run_cli
from helpers.versions import HAS_LINEAR_CROSS_ENTROPY, needs_linear_cross_entropy

from torchcts.cases.opinfo.samples import generate, lookup, pin_device_policy
from torchcts.engine.selftest import SIM_MANIFEST

CHILD = textwrap.dedent("""
    import torch
    import torchcts.sim  # noqa: F401

    # 1. A view shares its base's storage (C++ is_alias_of), a copy does not. matmul(out=) folds a
    #    batched input, writes a view of `out` and copies back only when that view is not an alias
    #    of `out`: with unshared storages it copied `out` onto itself and CPU refused the overlap.
    base = torch.randn(4, 6, device="sim")
    for view in (base[1:3], base.t(), base.view(24), base.unsqueeze(0).expand(2, 4, 6)):
        assert torch._C._is_alias_of(view, base) and torch._C._is_alias_of(base, view)
    assert not torch._C._is_alias_of(base.clone(), base)
    assert not torch._C._is_alias_of(base + 0, base)
    for sa, sb in [((2, 3, 4), (4,)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((3, 4), (4,))]:
        a, b = torch.randn(sa), torch.randn(sb)
        for out in (torch.zeros(torch.matmul(a, b).shape, device="sim"), torch.zeros(0, device="sim")):
            got = torch.matmul(a.to("sim"), b.to("sim"), out=out)
            assert got is out and torch.equal(out.cpu(), torch.matmul(a, b)), (sa, sb)

    # 2. CPU kernels run with the conjugate/negative fallbacks: linalg_pinv's CPU kernel multiplies
    #    by U.mH(), and with the fallback off (as in __torch_dispatch__) the conjugation was lost.
    torch.manual_seed(0)
    for dt in (torch.complex64, torch.complex128):
        a = torch.randn(5, 4, dtype=dt)
        assert torch.allclose(torch.pinverse(a.to("sim")).cpu(), torch.pinverse(a), atol=1e-5)
        x, y = torch.randn(3, dtype=dt), torch.randn(3, dtype=dt)
        assert torch.equal(torch.vdot(x.to("sim"), y.to("sim")).cpu(), torch.vdot(x, y))
        assert torch.equal((x.to("sim") * y.to("sim").conj()).cpu(), x * y.conj())
        assert torch.equal(torch.linalg.pinv(a.to("sim")).cpu(), torch.linalg.pinv(a))

    # 3. linalg_matrix_rank(out=) writes `out` (its composite kernel, given a tensor subclass, did not).
    a = torch.randn(5, 5)
    a[:, 4] = a[:, 3]
    for kwargs in ({}, {"hermitian": True}, {"atol": 0.5}, {"tol": 0.1}):
        x = a @ a.T if kwargs.get("hermitian") else a
        out = torch.zeros((), dtype=torch.int64, device="sim")
        assert torch.linalg.matrix_rank(x.to("sim"), out=out, **kwargs) is out
        assert out.item() == torch.linalg.matrix_rank(x, **kwargs).item(), kwargs
    print("OK")
""")


def test_sim_views_alias_and_conjugates_resolve():
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def _lce_samples(dtype: torch.dtype, device: str | None) -> list:
    op = lookup("nn.functional.linear_cross_entropy", "chunked_none")
    return list(generate(op, dtype, device=device))


@needs_linear_cross_entropy
def test_linear_cross_entropy_options_follow_the_device_under_test():
    """PyTorch resolves acc_policy="auto" per device type; the reference must compute the device's pick."""
    auto = _lce_samples(torch.bfloat16, None)
    assert auto and all(s.kwargs["options"].acc_policy == "auto" for s in auto)
    on_cpu = _lce_samples(torch.bfloat16, "cpu")
    assert all(s.kwargs["options"].acc_policy == "accurate" for s in on_cpu)
    assert all(s.kwargs["options"].acc_dtype == torch.float32 for s in on_cpu)
    # A device type PyTorch's table does not list (every PrivateUse1 backend) accumulates in bf16.
    elsewhere = _lce_samples(torch.bfloat16, "meta")
    assert all(s.kwargs["options"].acc_policy == "compact" for s in elsewhere)
    assert all(p.kwargs["options"].acc_dtype == torch.bfloat16
               for s, p in zip(auto, elsewhere, strict=True) if s.kwargs["options"].acc_dtype is None)
    # Pinned options are final: PyTorch resolving them again neither changes nor rejects them.
    fn = torch.nn.functional.linear_cross_entropy
    for s, p in zip(auto, elsewhere, strict=True):
        o = p.kwargs["options"]
        assert o.chunking_method is None and o.batch_chunk_size >= 1
        if s.kwargs["options"].batch_chunk_size is not None:
            assert o.batch_chunk_size == min(s.kwargs["options"].batch_chunk_size,
                                             s.input.shape[0] if s.input.dim() == 2 else 1)
        fn(p.input, *p.args, **p.kwargs)


@needs_linear_cross_entropy
def test_pinned_policy_changes_the_result_it_is_compared_with():
    """Without pinning, the CPU reference (fp32 accumulation) and a device accumulating in bf16
    compute different values: pinning is what makes them the same computation."""
    sample = _lce_samples(torch.bfloat16, None)[0]
    fn = torch.nn.functional.linear_cross_entropy
    cpu_auto = fn(sample.input, *sample.args, **sample.kwargs)
    pinned = pin_device_policy(sample, torch.device("meta"))
    cpu_compact = fn(pinned.input, *pinned.args, **pinned.kwargs)
    assert not torch.equal(cpu_auto, cpu_compact)


@pytest.mark.timeout(300)
def test_clean_sim_passes_the_opinfo_cases_that_failed(tmp_path):
    # an --op naming an op this PyTorch lacks is a user error (exit 2), so ask for it only where it exists
    lce_op = ["--op", "nn.functional.linear_cross_entropy*"] if HAS_LINEAR_CROSS_ENTROPY else []
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--suite", "opinfo", "--no-isolation",
                "--op", "matmul", "--op", "pinverse", "--op", "linalg.matrix_rank", *lce_op,
                "--dtype", "float32", "--dtype", "bfloat16", "--dtype", "complex64", "--", "-q", cwd=tmp_path)
    recs = records(latest_run(tmp_path))
    bad = [(x["id"], x["status"], x.get("message")) for x in recs if x["status"] not in ("passed", "not_applicable")]
    assert r.returncode == 0 and not bad, bad or r.stdout[-3000:]
    ids = {x["id"] for x in recs if x["status"] == "passed"}
    lce = {"opinfo/nn.functional.linear_cross_entropy.chunked_none/bfloat16/forward"} if HAS_LINEAR_CROSS_ENTROPY else set()
    assert {"opinfo/matmul/float32/out", "opinfo/pinverse/complex64/forward", "opinfo/linalg.matrix_rank/float32/out",
            "opinfo/pinverse/complex64/backward", *lce} <= ids


def test_selftest_clean_run_has_the_limits_of_a_plain_run(cli, monkeypatch, tmp_path):
    """The clean run covers every claimed level (all of OpInfo: tens of minutes on 2 cores, single
    cases up to ~100 s); a fault run's limits (20 s a case, 900 s a run) would report it failed."""
    import torchcts.engine.selftest as st

    seen: dict[str, dict] = {}

    def fake(name, *args, **kwargs):
        seen[name] = kwargs
        return st.Outcome(name, name != "clean", first_case="x", status="failed", meant=True)

    monkeypatch.setattr(st, "run_one", fake)
    monkeypatch.setattr(st, "fault_catalog", lambda: [
        {"name": "abs_zero_dim", "suite": "operators", "level": 1, "catches": ["x"], "description": "d",
         "selection": ["--suite", "operators", "--level-exact", "1"]}])
    assert cli(["selftest", "--fault", "abs_zero_dim", "--results-dir", str(tmp_path)]) == 0
    assert seen["clean"]["run_timeout"] is None and seen["clean"]["case_timeout"] == 300
    assert seen["abs_zero_dim"]["run_timeout"] == 900 and seen["abs_zero_dim"]["case_timeout"] == 20
    assert cli(["selftest", "--fault", "abs_zero_dim", "--run-timeout", "50", "--results-dir", str(tmp_path)]) == 0
    assert seen["clean"]["run_timeout"] == 50 == seen["abs_zero_dim"]["run_timeout"]
    assert cli(["selftest", "--fault", "abs_zero_dim", "--full", "--results-dir", str(tmp_path)]) == 0
    assert seen["abs_zero_dim"] == {**seen["abs_zero_dim"], "run_timeout": None, "case_timeout": 300}, \
        "a --full fault run covers the clean run's cases: a slow correct case must not count as a catch"
