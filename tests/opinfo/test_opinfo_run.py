"""End-to-end opinfo runs on CPU: every kind passes under --validation; a wrong kernel is caught."""

from __future__ import annotations

import os
import shlex
import textwrap

from helpers.runs import latest_run, records, run_cli

# A few ops that between them have every case kind, a random op and an uninitialised factory.
OPS = ("add", "cat", "bernoulli", "empty_like", "sum")
KINDS = {"forward", "method", "inplace", "out", "errors", "backward", "noncontiguous", "special_values", "explore",
         "agree"}


def test_validation_runs_every_kind_with_zero_failures(tmp_path):
    args = ["run", "--validation", "--suite", "opinfo", "--level", "5", "--dtype", "float32", "--max-samples", "2"]
    for op in OPS:
        args += ["--op", op]
    r = run_cli(*args, "--", "-q", "-p", "no:warnings", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = records(latest_run(tmp_path))
    assert {rec["status"] for rec in recs} <= {"passed", "not_applicable"}
    passed = [rec for rec in recs if rec["status"] == "passed"]
    assert {rec["kind"] for rec in passed} == KINDS
    assert all(rec["info"]["samples_run"] <= 2 for rec in passed if rec["kind"] != "explore")
    # explore cases explore from those samples; --level 5's default depth, raised to the switch points
    assert all(rec["info"]["explored"]["samples"] >= 4 for rec in passed if rec["kind"] == "explore")
    oracles = {rec["oracle"] for rec in passed}
    assert {"cpu", "property:random", "property:uninitialized"} <= oracles


BROKEN_ADD = '''
"""A planted fault: torch.add is wrong (+1) on float32 when the opinfo runner calls it as the device
(its `device_call`): on --device cpu the reference and the device are one torch.add. (Every second
call, as this was, made the verdict depend on how many calls the runner makes on a failure.)"""
import sys

import torch

_orig = torch.add


def _as_device() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "device_call":
            return True
        frame = frame.f_back
    return False


def add(*args, **kwargs):
    out = _orig(*args, **kwargs)
    if isinstance(out, torch.Tensor) and out.dtype == torch.float32 and "out" not in kwargs and _as_device():
        return out + 1
    return out


torch.add = add
'''

MANIFEST = '''
manifest = {
    "manifest_version": 1,
    "device_name": "cpu",
    "backend_import": "broken_add",
    "supported_dtypes": {"float32": True},
    "semantic_level": 2,
    "capabilities": {"inference": True, "training": False, "rng": False, "device_api": False,
                     "multi_device": False},
}
'''


def test_wrong_kernel_fails_with_metrics_and_sample_repro(tmp_path):
    (tmp_path / "broken_add.py").write_text(textwrap.dedent(BROKEN_ADD))
    (tmp_path / "manifest.py").write_text(textwrap.dedent(MANIFEST))
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--device", "cpu", "--case", "opinfo/add/float32/forward", "--max-samples", "3",
                "--", "-q", "-p", "no:warnings", cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    (rec,) = [x for x in records(latest_run(tmp_path)) if x["id"] == "opinfo/add/float32/forward"]
    assert rec["status"] == "failed"
    mismatch, info = rec["mismatch"], rec["info"]
    assert mismatch["max_abs_error"] == 1.0 and mismatch["mismatched"] >= 1 and "first_index" in mismatch
    assert info["op"] == "add" and info["dtype"] == "float32" and info["variant"] == ""
    assert info["sample_index"] == 0 and "float32" in info["sample"]
    assert info["tolerance"]["category"] == "elementwise"
    assert info["repro"] == "torchcts run --device cpu --case opinfo/add/float32/forward --sample 0"
    # the repro command reruns exactly that one sample, and it fails again
    repro = shlex.split(info["repro"])[1:]
    r = run_cli(*repro, "--", "-q", "-p", "no:warnings", cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    (again,) = [x for x in records(latest_run(tmp_path)) if x["id"] == "opinfo/add/float32/forward"]
    assert again["status"] == "failed" and again["info"]["sample_index"] == 0
