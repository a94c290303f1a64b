"""Each semantic suite fails on a backend that breaks its property (planted faults on device cpu).

tests/helpers/faults.py is the manifest's backend_import; it monkeypatches the torch functions
named by TORCHCTS_FAULT. The faults touch disjoint functions, so one run carries all of them (one
subprocess instead of nine); each expected failure is pinned to its case id and to the message of
the property that fault breaks, and a control run proves the same cases pass without faults.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers.paths import HELPERS
from helpers.runs import latest_run, records, run_cli

from torchcts.manifest.templates import validation_manifest

# fault -> (the case that must fail, a fragment of its failure message)
FAULT_CASES = {
    "transpose_copies": ("operators/aliasing/view/transpose/float32", "returned a copy, not a view"),
    "linspace_drops_end": ("operators/core/linspace/float32", "end exactly at end"),
    "clone_drops_format": ("strides/clone/channels_last/float32", "clone(preserve_format) must keep"),
    "cast_rounds": ("dtypes/cast/float32-int32", "truncate toward zero"),
    "index_select_clamps": ("errors/index_out_of_range/index_select/float32", "no exception raised"),
    "seed_ignored": ("rng/manual_seed/randn/float32", "manual_seed did not make the draw reproducible"),
    "rand_biased": ("rng/distribution/rand/float32", "test failed (false-alarm rate 1e-06)"),
    "load_drops_strides": ("serialization/layout/float32", "strides or storage offset changed"),
    "sin_wrong_backward": ("autograd/gradcheck/trig/float64", "disagrees with finite differences"),
}
# cases next to the faulty ones that the faults do not touch: they must still pass
UNTOUCHED = ("autograd/gradcheck/poly/float64", "operators/aliasing/view/narrow/float32")


def write_manifest(path: Path, backend_import: str) -> Path:
    """The validation claim set, for device cpu, importing the fault module."""
    m = validation_manifest()
    dtypes = "\n".join(f"{d} = {str(v).lower()}" for d, v in m.supported_dtypes.items())
    caps = "\n".join(f"{c} = {str(v).lower()}" for c, v in m.capabilities.items())
    path.write_text(
        f'manifest_version = 1\ndevice_name = "cpu"\nbackend_import = "{backend_import}"\nsemantic_level = 8\n'
        f"[supported_dtypes]\n{dtypes}\n[capabilities]\n{caps}\n"
    )
    return path


def _case_args() -> list[str]:
    ids = [case for case, _ in FAULT_CASES.values()] + list(UNTOUCHED)
    return [a for case in ids for a in ("--case", case)]


def test_each_fault_fails_its_case(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path / "torchcts.toml", "faults")
    env = {"TORCHCTS_FAULT": ",".join(FAULT_CASES),
           "PYTHONPATH": os.pathsep.join([str(HELPERS), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--device", "cpu", "--manifest", str(manifest), *_case_args(), "--", "-q",
                "-p", "no:cacheprovider", cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    by_id = {rec["id"]: rec for rec in records(latest_run(tmp_path))}
    for fault, (case, fragment) in FAULT_CASES.items():
        rec = by_id[case]
        assert rec["status"] == "failed", (fault, rec)
        assert fragment in rec["message"], (fault, rec["message"])
    for case in UNTOUCHED:
        assert by_id[case]["status"] == "passed", by_id[case]


def test_fault_cases_pass_without_faults(tmp_path: Path) -> None:
    r = run_cli("run", "--validation", *_case_args(), "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = records(latest_run(tmp_path))
    assert len(recs) == len(FAULT_CASES) + len(UNTOUCHED)
    assert {rec["status"] for rec in recs} == {"passed"}
