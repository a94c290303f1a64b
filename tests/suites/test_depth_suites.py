"""The detection-depth suites (docs/depth.md) on CPU: clean cases pass, planted faults fail them.

The sim's faults for the six classes are measured in tests/sim/test_sim_faults.py ("depth"); the sim
compiles on PyTorch 2.12+ only (docs/depth.md), so a compiler fault is also planted in
torch.compile on CPU (tests/helpers/break_compile_mutation.py), which runs on every version.
"""

from __future__ import annotations

from pathlib import Path

from helpers.runs import latest_run, run_cli
from helpers.suite_runs import by_id, helper_env, run_clean, write_manifest

# One or two cheap cases per class: they must pass under --validation.
CLEAN = ("inplace_views/ops/index_add_/views/float32", "inplace_views/opinfo/add/views/float32",
         "limits/cumsum/high/int8", "limits/sum/unit/float16", "tiling/contraction/mm/K/float32",
         "mixed_dtypes/pair/cat/others/int32", "mixed_dtypes/index/gather/index_dtypes/float32",
         "random_ops/dropout/scaling/p0.1/float32", "random_ops/randperm/int16")


def test_depth_cases_pass_on_cpu_validation(tmp_path: Path) -> None:
    recs = run_clean(tmp_path, CLEAN)
    assert recs["mixed_dtypes/pair/cat/others/int32"]["info"]["other_dtypes_checked"][-1] == "complex128"


def test_compiler_ops_catches_lost_input_mutations(tmp_path: Path) -> None:
    """A compiler that drops the update of a graph input fails the in-place mode and only it."""
    write_manifest(tmp_path, "break_compile_mutation", compile=True)
    r = run_cli("run", "--device", "cpu", "--suite", "compiler_ops", "--case", "compiler_ops/elementwise/add/*",
                "--no-isolation", "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path,
                env=helper_env(TORCHCTS_COMPILE_BACKEND="aot_eager"))
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    status = {i: rec["status"] for i, rec in by_id(latest_run(tmp_path)).items()}
    assert status == {"compiler_ops/elementwise/add/static/float32": "passed",
                      "compiler_ops/elementwise/add/dynamic/float32": "passed",
                      "compiler_ops/elementwise/add/inplace/float32": "failed"}, status


def test_every_registered_suite_is_selectable() -> None:
    """`--suite NAME` accepts every suite of the registry (the known names live in manifest/schema.py)."""
    from torchcts.cases.registry import KNOWN_SUITE_NAMES, SUITES

    assert set(SUITES) <= set(KNOWN_SUITE_NAMES)
