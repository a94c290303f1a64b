"""The distributed suite (issue 32 item 1, docs/semantic-suites.md): c10d collectives on 2 local ranks.

Here: the cases' shape; a clean --validation run (gloo on CPU); the sim's planted fault is caught by
`--suite distributed` on its c10d backend (`simccl`) and by nothing else; ranks
that hang, die or raise become failures with the rank named, and the next case gets fresh ranks;
the claim gates the suite; the manifest's `distributed_backend` is validated.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest
from helpers.paths import TESTS
from helpers.runs import latest_run, run_cli
from helpers.suite_runs import by_id, write_manifest

from torchcts import compat
from torchcts.cases.registry import suite_cases
from torchcts.engine.selftest import ENV, SIM_MANIFEST
from torchcts.manifest.validate import validate

CHECKS = ("init_destroy", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
          "reduce_scatter_tensor", "all_to_all", "send_recv", "barrier", "async_work", "object_collectives", "ddp")
OPS = ("sum", "product", "min", "max", "avg")


def test_distributed_cases_levels_claims_and_runners() -> None:
    cases = {c.id: c for c in suite_cases("distributed")}
    want = {f"distributed/{k}/float32" for k in CHECKS} | {f"distributed/all_reduce/{op}/float32" for op in OPS}
    assert set(cases) == want
    assert all(c.level == 7 and c.requires == ("distributed",) for c in cases.values())
    assert cases["distributed/reduce_scatter_tensor/float32"].ops == ("c10d::_reduce_scatter_base_",)
    mod, _, fn = cases["distributed/ddp/float32"].runner.partition(":")
    assert callable(getattr(importlib.import_module(mod), fn))


def test_validation_run_of_the_suite_is_clean(tmp_path: Path) -> None:
    r = run_cli("run", "--validation", "--suite", "distributed", "--no-isolation", "--", "-q", "-p", "no:cacheprovider",
                cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = by_id(latest_run(tmp_path))
    assert len(recs) == len(CHECKS) + len(OPS)
    # older PyTorch's gloo (the reference) lacks AVG, reduce_scatter and alltoall (2.7): those cases
    # are then not_applicable, naming gloo; on 2.13 none is
    refused = {i for i, rec in recs.items() if rec["status"] == "not_applicable"}
    assert all("gloo (the reference c10d backend) does not support" in recs[i]["message"] for i in refused)
    assert not refused or not compat.gloo_has_every_collective()
    assert {rec["status"] for i, rec in recs.items() if i not in refused} == {"passed"}, \
        {i: r["status"] for i, r in recs.items()}
    info = recs["distributed/all_reduce/max/float32"]["info"]
    assert info["c10d_backend"] == "gloo" and info["world_size"] == 2
    # the ranks' ops are not this process's: the record says why nothing was observed
    assert "rank processes" in recs["distributed/barrier/float32"]["dispatch_unobserved"]


@pytest.mark.skipif(not compat.gloo_has_every_collective(),
                    reason="the sim claims distributed on PyTorch 2.12+ only (2.7's gloo lacks AVG, reduce_scatter, alltoall)")
def test_sim_fault_caught_by_the_suite_and_nothing_else(tmp_path: Path) -> None:
    """`--suite distributed` on the sim (c10d backend simccl) with the planted fault: exactly the
    reduce_scatter_tensor case fails (reduce_scatter of lists, the neighbour, passes); without the
    fault that case passes too (the other cases just passed with the fault planted)."""
    for fault, selection in (("reduce_scatter_drops_own_chunk", ("--suite", "distributed")),
                             ("", ("--case", "distributed/reduce_scatter_tensor/float32"))):
        root = tmp_path / (fault or "clean")
        root.mkdir()
        r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), *selection, "--no-isolation",
                    "--", "-q", "-p", "no:cacheprovider", cwd=root, env={ENV: fault}, timeout=600)
        recs = by_id(latest_run(root))
        failing = {i for i, rec in recs.items() if rec["status"] not in ("passed", "not_applicable")}
        if fault:
            assert len(recs) == len(CHECKS) + len(OPS)
            assert r.returncode == 1 and failing == {"distributed/reduce_scatter_tensor/float32"}, r.stdout[-3000:]
            assert "rank 1: reduce_scatter_tensor's chunk" in r.stdout
            assert recs["distributed/ddp/float32"]["info"]["c10d_backend"] == "simccl"
        else:
            assert r.returncode == 0 and not failing and len(recs) == 1, r.stdout[-3000:]


def test_hung_dead_and_raising_ranks_are_failures_and_the_next_case_restarts(tmp_path: Path) -> None:
    env = {"TORCHCTS_EXTRA_SUITES": "dist_planted=helpers.dist_planted",
           "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--validation", "--suite", "dist_planted", "--no-isolation", "--timeout", "120",
                "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path, env=env, timeout=600)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    recs = by_id(latest_run(tmp_path))
    status = {i: rec["status"] for i, rec in recs.items()}
    assert status == {"dist_planted/a_hang/float32": "failed", "dist_planted/b_segfault/float32": "failed",
                      "dist_planted/c_raises/float32": "error", "dist_planted/d_ok/float32": "passed",
                      "dist_planted/c_one_rank_not_applicable/float32": "not_applicable"}, status
    skipped = recs["dist_planted/c_one_rank_not_applicable/float32"]
    assert "rank 0's CPU reference raises; ranks 1 then waited in" in skipped["message"], skipped["message"]
    assert skipped["duration_s"] < 60  # the others' grace, not the check's 120 s
    hang = recs["dist_planted/a_hang/float32"]
    assert "ranks 0 did not finish skips_collective within 4 s: a hang" in hang["message"], hang["message"]
    assert hang["duration_s"] < 60  # bounded by the check's limit, not the case's 120 s
    # where the waiting rank hung: its stack, inside the collective
    assert "all_reduce" in hang["mismatch"]["extra"]["stacks"]["0"], hang["mismatch"]
    crash = recs["dist_planted/b_segfault/float32"]["message"]
    assert "rank 1 was killed by SIGSEGV during segfault" in crash, crash
    raised = recs["dist_planted/c_raises/float32"]["message"]
    assert "rank 0: RuntimeError: planted collective error on rank 0" in raised, raised
    assert "rank 1: RuntimeError: planted collective error on rank 1" in raised, raised


def test_not_claimed_without_the_capability(tmp_path: Path) -> None:
    write_manifest(tmp_path, distributed=False)
    r = run_cli("run", "--device", "cpu", "--suite", "distributed", "--no-isolation", "--", "-q",
                "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    status = {i: rec["status"] for i, rec in by_id(latest_run(tmp_path)).items()}
    assert len(status) == len(CHECKS) + len(OPS) and set(status.values()) == {"not_claimed"}, status


def test_distributed_backend_is_validated() -> None:
    base = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
            "capabilities": dict.fromkeys(("inference", "training", "rng", "device_api", "multi_device"), False)}
    manifest, problems = validate({**base, "distributed_backend": "gloo"})
    assert problems == [] and manifest is not None and manifest.distributed_backend == "gloo"
    assert validate(base)[0].distributed_backend is None
    _, problems = validate({**base, "distributed_backend": 3})
    assert problems == ["expected a c10d backend name such as 'gloo' or None, got 3 under distributed_backend"]
