"""Where an OpInfo sample's tensors go: factories run on the device, host-only arguments stay on CPU."""

from __future__ import annotations

from pathlib import Path

from helpers.runs import latest_run, records, run_cli

import torchcts

SIM_MANIFEST = Path(torchcts.__file__).parent / "sim" / "manifest.py"


def test_factory_sample_without_device_kwarg_runs_on_the_device(tmp_path):
    # sample 24 of arange is `arange(2)`: no device kwarg; before the fix it ran on CPU and failed
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--no-isolation",
                "--case", "opinfo/arange/uint8/forward", "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    [rec] = [x for x in records(latest_run(tmp_path)) if x["id"] == "opinfo/arange/uint8/forward"]
    assert rec["status"] == "passed"


def test_host_only_arguments_stay_on_the_host(tmp_path):
    # tensor_split requires tensor indices on the CPU whatever the device (PyTorch's docs)
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), "--no-isolation",
                "--case", "opinfo/tensor_split/float32/forward", "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def test_meta_error_inputs_and_partially_written_out_tensors(tmp_path):
    # gradient's error sample 3 passes a meta tensor (no data to copy); fft.ihfft2's out= kernel
    # leaves elements unwritten, so out tensors must not start as uninitialised memory
    cases = ("opinfo/gradient/float32/errors", "opinfo/fft.ihfft2/float32/out")
    r = run_cli("run", "--validation", "--no-isolation", *[a for c in cases for a in ("--case", c)],
                "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert {x["id"]: x["status"] for x in records(latest_run(tmp_path))} == dict.fromkeys(cases, "passed")
