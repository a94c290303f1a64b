"""The amp suite (issue 32 item 2, docs/semantic-suites.md): autocast op classes and GradScaler.

The sim's planted amp faults are measured in tests/sim/test_sim_faults.py (group "amp"); here: the
cases pass on CPU under --validation, the claims gate them, and the sim's own autocast lists
(PyTorch registers none for PrivateUse1) behave like CUDA's documented ones.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from helpers.runs import latest_run, run_cli
from helpers.suite_runs import by_id, run_clean, write_manifest

from torchcts.cases.registry import suite_cases

CLEAN = ("amp/autocast/lower/mm/bfloat16", "amp/autocast/lower/conv2d/float16", "amp/autocast/float32/mse_loss/bfloat16",
         "amp/autocast/float32/nll_loss/float16", "amp/autocast/promote/cat/bfloat16", "amp/autocast/region/bfloat16",
         "amp/gradscaler/skip_nonfinite/nan/float32", "amp/gradscaler/growth/float32")


def test_amp_cases_levels_claims_and_ops() -> None:
    cases = {c.id: c for c in suite_cases("amp")}
    autocast = [c for c in cases.values() if c.kind == "autocast"]
    scaler = [c for c in cases.values() if c.kind == "gradscaler"]
    assert autocast and all(c.level == 4 and c.requires == ("autocast",) for c in autocast)
    assert {c.dtype for c in autocast} == {"float16", "bfloat16"}
    assert scaler and all(c.level == 6 and c.requires == ("training",) and c.dtype == "float32" for c in scaler)
    assert cases["amp/autocast/lower/linear/float16"].ops == ("aten::linear",)
    # one case per op of each class and low dtype, reachable by its runner name
    assert sum(c.id.startswith("amp/autocast/float32/") for c in autocast) == 2 * 10
    mod, _, fn = cases["amp/autocast/promote/stack/float16"].runner.partition(":")
    assert callable(getattr(importlib.import_module(mod), fn))


def test_amp_cases_pass_on_cpu_validation(tmp_path: Path) -> None:
    recs = run_clean(tmp_path, CLEAN)
    assert recs["amp/autocast/lower/mm/bfloat16"]["info"]["autocast_dtype"] == "torch.bfloat16"
    assert recs["amp/gradscaler/skip_nonfinite/nan/float32"]["info"]["scale"] == [1024.0, 512.0, 512.0]


def test_autocast_cases_not_claimed_without_the_capability(tmp_path: Path) -> None:
    write_manifest(tmp_path, autocast=False)
    r = run_cli("run", "--device", "cpu", "--case", "amp/autocast/lower/mm/*", "--case", "amp/gradscaler/growth/*",
                "--no-isolation", "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    status = {i: rec["status"] for i, rec in by_id(latest_run(tmp_path)).items()}
    assert status == {"amp/autocast/lower/mm/float16": "not_claimed", "amp/autocast/lower/mm/bfloat16": "not_claimed",
                      "amp/gradscaler/growth/float32": "passed"}, status


_SIM_AUTOCAST = """
import torch
F = torch.nn.functional
assert not torch._C._dispatch_has_kernel_for_dispatch_key("aten::mm", "AutocastPrivateUse1")
import torchcts.sim
a = torch.randn(4, 4, device="sim")
with torch.autocast("sim", dtype=torch.float16):
    got = [(a @ a).dtype, F.mse_loss(a.half(), a.half()).dtype, torch.cat([a.half(), a]).dtype, (a + a).dtype,
           torch.softmax(a.half(), 0).dtype]
assert got == [torch.float16, torch.float32, torch.float32, torch.float32, torch.float32], got
print("OK")
"""


def test_sim_registers_its_own_autocast_lists() -> None:
    """PyTorch has no AutocastPrivateUse1 kernels; the sim's follow CUDA's lists (softmax: float32,
    unlike CPU's), and ops on no list pass through unchanged."""
    r = subprocess.run([sys.executable, "-c", _SIM_AUTOCAST], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout + r.stderr
