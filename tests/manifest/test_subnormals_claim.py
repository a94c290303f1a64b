"""Issue 39 item 4: subnormals are a claim (manifest `subnormals`: preserve, the default, or flush),
judged bit for bit by the subnormals suite, both ways: a backend that flushes while claiming
preserve fails, one that claims flush is checked to flush consistently (float32 and float64; the
half types not_applicable, said), and one that claims flush but preserves fails too."""

from __future__ import annotations

import json

import pytest
from helpers.runs import latest_run, run_cli

FLUSH_MANIFEST = """import os, runpy, torchcts

_sim = runpy.run_path(os.path.join(os.path.dirname(torchcts.__file__), "sim", "manifest.py"))["manifest"]
manifest = {**_sim, "subnormals": "flush", "expectations": []}
"""


def _statuses(workdir, manifest: str, fault: str) -> dict[str, tuple[str, str]]:
    r = run_cli("run", "--device", "sim", "--manifest", manifest, "--suite", "subnormals", "--no-isolation",
                cwd=workdir, env={"TORCHCTS_SIM_FAULT": fault})
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]
    recs = [json.loads(line) for line in (latest_run(workdir) / "cases.jsonl").open()]
    return {rec["id"]: (rec["status"], rec.get("message") or "") for rec in recs if rec["status"] != "filtered"}


@pytest.mark.parametrize(("claim", "fault", "expected"), [
    ("preserve", "", {"float32": "passed", "float64": "passed", "float16": "passed"}),
    ("preserve", "subnormals_flushed", {"float32": "failed", "float64": "failed", "float16": "passed"}),
    ("flush", "subnormals_flushed", {"float32": "passed", "float64": "passed", "float16": "not_applicable"}),
    ("flush", "", {"float32": "failed", "float64": "failed", "float16": "not_applicable"}),
])
def test_the_claim_is_judged_both_ways(workdir, claim, fault, expected):
    manifest = "torchcts:sim/manifest.py"
    if claim == "flush":
        (workdir / "flush.py").write_text(FLUSH_MANIFEST)
        manifest = "flush.py"
    statuses = _statuses(workdir, manifest, fault)
    assert len(statuses) == 22, statuses
    for case_id, (status, message) in statuses.items():
        dtype = case_id.rsplit("/", 1)[1]
        if dtype == "bfloat16" and "/cast/" in case_id and fault:
            continue  # its casts go through float32 (bfloat16's subnormals are float32's): flushed there, rightly
        assert status == expected.get(dtype, expected["float16"]), (case_id, status, message)
        if status == "failed":
            other = "flush" if claim == "preserve" else "preserve"
            assert f"(subnormals: '{claim}')" in message and f"claim subnormals: '{other}'" in message
        if status == "not_applicable":
            assert "the 'flush' claim covers float32 and float64" in message


def test_the_claim_is_validated():
    from torchcts.manifest.validate import validate as validate_manifest

    raw = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
           "capabilities": {c: False for c in ("inference", "training", "rng", "device_api", "multi_device")}}
    manifest, problems = validate_manifest({**raw, "subnormals": "flush"}, "m")
    assert problems == [] and manifest.subnormals == "flush"
    assert validate_manifest(raw, "m")[0].subnormals == "preserve"
    _, problems = validate_manifest({**raw, "subnormals": "ftz"}, "m")
    assert problems and "subnormals" in problems[0] and "'preserve', 'flush'" in problems[0]
