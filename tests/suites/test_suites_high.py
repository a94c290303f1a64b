"""Level 4-8 suites: clean under --validation, and each one fails on a backend that breaks what it checks.

A broken backend is cpu plus a planted fault: a module under tests/helpers/ named as the manifest's
backend_import, which monkeypatches one thing (an optimizer step, SDPA, device_count...).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from helpers.runs import latest_run, records, run_cli
from helpers.suite_runs import by_id, helper_env, write_manifest

HIGH_SUITES = ("training", "device_api", "memory", "compiler", "workloads", "multi_device", "stress")


def test_validation_runs_clean(tmp_path: Path) -> None:
    args = ["run", "--validation"]
    for s in HIGH_SUITES:
        args += ["--suite", s]
    r = run_cli(*args, "--", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = records(latest_run(tmp_path))
    per_suite = Counter(rec["suite"] for rec in recs)
    assert set(per_suite) == set(HIGH_SUITES), per_suite
    bad = [rec for rec in recs if rec["status"] in ("failed", "error")]
    assert not bad, bad[:3]
    for rec in recs:
        if rec["status"] in ("not_claimed", "not_applicable"):
            assert rec.get("message") or rec.get("reason"), rec
    status = {rec["id"]: rec["status"] for rec in recs}
    # cpu lacks multiple devices and the validation claims leave compile out (inductor on CPU is slow)
    assert all(st == "not_claimed" for i, st in status.items() if i.startswith(("multi_device/", "compiler/")))
    assert status["training/optim/adamw/cnn/float32"] == "passed"
    assert status["memory/oom/recoverable"] == "passed"
    assert status["memory/stats/alloc_free"] == "not_applicable"  # torch.cpu reports no allocator stats
    assert status["device_api/accelerator/consistency"] == "not_applicable"
    assert status["workloads/transformer_causal/backward/train/float32"] == "passed"
    assert status["stress/large/near_limit"] == "passed"


def test_compiler_suite_runs_with_aot_eager(tmp_path: Path) -> None:
    """With compile claimed, the suite compiles (aot_eager keeps it fast) and records the backend."""
    write_manifest(tmp_path, compile=True)
    r = run_cli("run", "--device", "cpu", "--suite", "compiler", "--case", "compiler/function/*",
                "--case", "compiler/dynamic/shapes/matmul/*", "--case", "compiler/training/*", "--", "-q",
                cwd=tmp_path, env=helper_env(TORCHCTS_COMPILE_BACKEND="aot_eager"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = by_id(latest_run(tmp_path))
    assert len(recs) == 6 and all(rec["status"] == "passed" for rec in recs.values()), recs
    assert {rec["info"]["compile_backend"] for rec in recs.values()} == {"aot_eager"}


# (planted fault module, extra claims, selected cases, the case that must fail, env)
FAULTS = {
    "training": ("break_sgd_ascent", {}, ["training/optim/sgd_momentum/mlp/*", "training/optim/adam/mlp/*"],
                 "training/optim/sgd_momentum/mlp/float32", {}),
    "device_api": ("break_device_count", {}, ["device_api/module/*"], "device_api/module/device_count", {}),
    "memory": ("break_oom", {}, ["memory/oom/*", "memory/alloc/*"], "memory/oom/recoverable", {}),
    "compiler": ("break_compile", {"compile": True}, ["compiler/function/unary/*"],
                 "compiler/function/unary/static/float32", {"TORCHCTS_COMPILE_BACKEND": "aot_eager"}),
    "workloads": ("break_sdpa_causal", {}, ["workloads/transformer_causal/forward/*", "workloads/attention/sdpa_masks/*"],
                  "workloads/transformer_causal/forward/eval/float32", {}),
    "multi_device": ("break_multi_device", {"multi_device": True}, ["multi_device/copy/*/float32"],
                     "multi_device/copy/between_indices/float32", {}),
    "stress": ("break_large_ones", {}, ["stress/large/near_limit", "stress/shapes/empty_matmul/*"],
               "stress/large/near_limit", {}),
}


@pytest.mark.parametrize("suite", list(FAULTS))
def test_suite_fails_on_broken_backend(tmp_path: Path, suite: str) -> None:
    module, caps, selected, must_fail, env = FAULTS[suite]
    write_manifest(tmp_path, module, **caps)
    args = ["run", "--device", "cpu", "--suite", suite]
    for pattern in selected:
        args += ["--case", pattern]
    r = run_cli(*args, "--", "-q", cwd=tmp_path, env=helper_env(**env))
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    recs = by_id(latest_run(tmp_path))
    assert recs[must_fail]["status"] == "failed", recs[must_fail]
    assert "mismatch" in recs[must_fail] or recs[must_fail].get("message")
