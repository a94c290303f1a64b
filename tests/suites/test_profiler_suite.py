"""The profiler suite (issue 32 item 4, docs/semantic-suites.md): op events, device kernels, memory events.

The sim's planted fault (profiler_relu_decomposed) is measured in tests/sim/test_sim_faults.py (group
"data_profiler"); here: the cases pass on CPU under --validation, the claims gate them, and the
top-level rule keeps what the program called while dropping what an op calls inside.
"""

from __future__ import annotations

from pathlib import Path

import torch
from helpers.runs import latest_run, run_cli
from helpers.suite_runs import by_id, run_clean, write_manifest

from torchcts.cases.registry import suite_cases
from torchcts.cases.suites import profiler

CLEAN = ("profiler/ops/pointwise/float32", "profiler/ops/matmul/float32", "profiler/memory/alloc_free/float32")


def test_profiler_cases_levels_and_claims() -> None:
    cases = {c.id: c for c in suite_cases("profiler")}
    assert set(cases) == {*CLEAN, "profiler/device/kernels/float32"}
    assert all(c.level == 6 and c.requires[0] == "profiler" for c in cases.values())
    assert cases["profiler/device/kernels/float32"].requires == ("profiler", "profiler_device")
    assert cases["profiler/memory/alloc_free/float32"].requires == ("profiler", "profiler_memory")
    assert "aten::relu" in cases["profiler/ops/pointwise/float32"].ops


def test_profiler_cases_pass_on_cpu_validation(tmp_path: Path) -> None:
    recs = run_clean(tmp_path, CLEAN)
    assert recs["profiler/ops/pointwise/float32"]["info"]["ops"] == ["aten::add", "aten::mul", "aten::relu", "aten::sum"]
    assert recs["profiler/ops/matmul/float32"]["info"]["ops"] == ["aten::addmm", "aten::t", "aten::mm", "aten::neg"]
    mem = recs["profiler/memory/alloc_free/float32"]["info"]
    assert mem["add_charged"] >= mem["nbytes"] == 64 * 64 * 4 and min(mem["frees"]) <= -mem["nbytes"]


def test_profiler_claims_gate_and_device_kernels_on_cpu(tmp_path: Path) -> None:
    """Validation leaves profiler_device unclaimed; claimed on cpu it is not_applicable (no device
    activity); without `profiler` every case is not_claimed."""
    r = run_cli("run", "--validation", "--case", "profiler/device/kernels/*", "--no-isolation", "--",
                "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert by_id(latest_run(tmp_path))["profiler/device/kernels/float32"]["status"] == "not_claimed"
    write_manifest(tmp_path, profiler_device=True)
    r = run_cli("run", "--device", "cpu", "--case", "profiler/device/kernels/*", "--no-isolation", "--",
                "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert by_id(latest_run(tmp_path))["profiler/device/kernels/float32"]["status"] == "not_applicable"
    write_manifest(tmp_path, profiler=False)
    r = run_cli("run", "--device", "cpu", "--suite", "profiler", "--no-isolation", "--",
                "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert {rec["status"] for rec in by_id(latest_run(tmp_path)).values()} == {"not_claimed"}


def test_top_level_keeps_what_the_program_called() -> None:
    """matmul calls mm inside: only matmul is top-level; a user range is not an op; order is start order."""
    a = torch.randn(4, 4)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with torch.profiler.record_function(profiler.RANGE):
            torch.matmul(a, a).neg()
    top = profiler._top_level(prof.events())
    assert [e.name for e in top] == ["aten::matmul", "aten::neg"]
    assert all(profiler._in_range(e) for e in top)
    assert any(e.name == "aten::mm" for e in prof.events())  # recorded, nested, not compared
    assert profiler._activity_name("cpu") is None and profiler._activity_name("cuda") == "CUDA"
    assert profiler._activities("cpu") == [torch.profiler.ProfilerActivity.CPU]
