"""The data_loading suite (issue 32 item 3, docs/semantic-suites.md): pinning, DataLoader, copies, sharing.

The sim's planted fault (non_blocking_copy_unordered) is measured in tests/sim/test_sim_faults.py (group
"data_profiler"); here: the cases pass on CPU under --validation, the claims gate them, pinned memory
is not_applicable on the host device, and the sim's emulated pinned allocator behaves as PyTorch's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.runs import latest_run, run_cli
from helpers.suite_runs import by_id, run_clean, write_manifest

from torchcts.cases.registry import suite_cases

CLEAN = ("data_loading/dataloader/workers/float32", "data_loading/non_blocking/pageable/float32",
         "data_loading/sharing/queue/float32")


def test_data_loading_cases_levels_and_claims() -> None:
    cases = {c.id: c for c in suite_cases("data_loading")}
    assert cases and all(c.level == 6 for c in cases.values())
    assert {c.dtype for c in cases.values() if c.kind == "pin_memory"} == {"float32", "float16", "int64", "bool"}
    assert cases["data_loading/pin_memory/tensor/int64"].requires == ("pinned_memory",)
    assert cases["data_loading/dataloader/workers/float32"].requires == ()
    assert set(cases["data_loading/dataloader/pinned/float32"].requires) == {"pinned_memory", "device_api"}
    assert cases["data_loading/non_blocking/pageable/float32"].requires == ("device_api",)
    assert cases["data_loading/sharing/queue/float32"].requires == ("ipc",)


def test_data_loading_cases_pass_on_cpu_validation(tmp_path: Path) -> None:
    recs = run_clean(tmp_path, CLEAN)
    # CPU tensors go to shared memory through a forked child (a device runtime needs spawn)
    assert recs["data_loading/sharing/queue/float32"]["info"]["start_method"] == "fork"
    assert recs["data_loading/non_blocking/pageable/float32"]["info"]["pinned"] is False


def test_pinned_cases_not_applicable_on_cpu_and_claims_gate(tmp_path: Path) -> None:
    """Claimed on cpu, pinned memory has no meaning (not_applicable); unclaimed ipc is not_claimed."""
    write_manifest(tmp_path, pinned_memory=True, ipc=False)
    r = run_cli("run", "--device", "cpu", "--case", "data_loading/pin_memory/tensor/float32",
                "--case", "data_loading/non_blocking/pinned/float32", "--case", "data_loading/sharing/queue/float32",
                "--no-isolation", "--", "-q", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    status = {i: rec["status"] for i, rec in by_id(latest_run(tmp_path)).items()}
    assert status == {"data_loading/pin_memory/tensor/float32": "not_applicable",
                      "data_loading/non_blocking/pinned/float32": "not_applicable",
                      "data_loading/sharing/queue/float32": "not_claimed"}, status


_COPY_ON_SHARE = """
import torch
from multiprocessing.reduction import ForkingPickler
# a backend whose tensors cross processes by value: the receiver gets a copy, not shared memory
ForkingPickler.register(torch.Tensor, lambda t: (torch.tensor, (t.tolist(),)))
"""


def test_sharing_fails_a_backend_that_copies(tmp_path: Path) -> None:
    """A tensor pickled by value reaches the child with the right values, but the child's write
    never shows in the parent: sharing/queue fails."""
    (tmp_path / "copy_on_share.py").write_text(_COPY_ON_SHARE)
    write_manifest(tmp_path, backend_import="copy_on_share")
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)}
    r = run_cli("run", "--device", "cpu", "--case", "data_loading/sharing/queue/float32", "--no-isolation", "--",
                "-q", "-p", "no:cacheprovider", cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    rec = by_id(latest_run(tmp_path))["data_loading/sharing/queue/float32"]
    assert rec["status"] == "failed" and "not visible to the parent" in rec["message"], rec


_UNPINNED = """
import torch
import torchcts.sim
from torchcts.sim import pinned
# a backend whose pin_memory copies into pageable memory (its host allocator is not the pinned one);
# the sim's kernels are dropped first: PyTorch 2.7 refuses a second Python kernel for one key
for lib in pinned._LIBS:
    lib._destroy()
pinned._LIBS.clear()
_LIB = torch.library.Library("aten", "IMPL")
_LIB.impl("_pin_memory", lambda self, device=None: self.clone(), "CPU")
_LIB.impl("is_pinned", pinned._is_pinned, "CPU")
"""


def test_pinned_cases_fail_a_pin_memory_that_does_not_pin(tmp_path: Path) -> None:
    """On the sim with its pin_memory replaced by a pageable copy: the pinning and pinned-batch
    cases fail, the workers case beside them passes."""
    (tmp_path / "unpinned_sim.py").write_text(_UNPINNED)
    (tmp_path / "manifest.py").write_text("from torchcts.sim.manifest import manifest as sim\n"
                                          "manifest = {**sim, 'backend_import': 'unpinned_sim', 'expectations': []}\n")
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)}
    cases = ("data_loading/pin_memory/tensor/float32", "data_loading/dataloader/pinned/float32",
             "data_loading/dataloader/workers/float32")
    r = run_cli("run", "--device", "sim", *(a for c in cases for a in ("--case", c)), "--no-isolation", "--",
                "-q", "-p", "no:cacheprovider", cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    recs = by_id(latest_run(tmp_path))
    assert {c: recs[c]["status"] for c in cases} == dict(zip(cases, ("failed", "failed", "passed"), strict=True))
    assert "is_pinned() calls pageable" in recs[cases[0]]["message"]
    assert "unpinned batch" in recs[cases[1]]["message"]


_SIM_PINNED = """
import gc, torch
x = torch.arange(6.0).reshape(2, 3)
try:
    x.pin_memory()
    raise SystemExit("a CPU-only PyTorch pinned without an accelerator")
except (RuntimeError, NotImplementedError):
    pass
import torchcts.sim
p = x.t().pin_memory()
assert p.is_pinned() and not x.is_pinned() and torch.equal(p, x.t()) and p.stride() == x.t().stride()
assert p.pin_memory().data_ptr() == p.data_ptr()  # pinning a pinned tensor returns it
view = p[1:]
del p
gc.collect()
assert view.is_pinned()  # a view keeps its pinned buffer
assert not view.to("sim").is_pinned()  # a device tensor is never pinned
del view
gc.collect()
assert not torch.randn(6).is_pinned()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(4, 2)), batch_size=2, pin_memory=True)
assert all(b.is_pinned() for (b,) in loader)
from torchcts.sim import pinned
held = [torch.randn(3).pin_memory() for _ in range(20)]
assert len(pinned._PINNED) >= 20
del held, loader
gc.collect()
assert not pinned._PINNED  # a freed buffer's entry goes with it (no scan of the live ones)
print("OK")
"""


def test_sim_emulates_a_pinned_allocator() -> None:
    """A Python backend's hooks cannot give PyTorch a pinned allocator; the sim's CPU kernels of
    _pin_memory / is_pinned do (sim/pinned.py): copies keep strides, views stay pinned, device tensors are not."""
    r = subprocess.run([sys.executable, "-c", _SIM_PINNED], capture_output=True, text=True, timeout=180,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr
