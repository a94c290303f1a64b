"""Every input axis proven against its own class (issue 50 item 2; torchcts/sim/faults_axes.py).

Each axis fault is wrong only where its axis puts a call (a host 0-dim operand, a non_blocking copy of
an offset or strided view, a dense permuted input): planted, a plain `torchcts run --device sim
--manifest <sim> --op OP` (one dtype, to keep the run small) fails exactly the axis's case, and every
other case of the op passes, OpInfo's own samples of every kind included: the sweep without the axis
misses it. A child process shows each fault wrong in its situation and right beside it, where only
the axis differs. This process never imports torchcts.sim (the catalog comes from a child).
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys

import pytest
import torch
from helpers import command_server
from helpers.paths import HELPERS

from torchcts.engine.selftest import fault_catalog, run_one
from torchcts.model.status import FAILURES
from torchcts.results.records import rundir

AXIS = {f["name"]: f for f in fault_catalog() if f["axis"]}
# what the failing explore record's recipe says the axis did (cases/explore/generate.py: Explored.recipe)
RECIPE = {"placement": "as a CPU scalar tensor", "memory order": "reversed in memory"}


def test_axis_faults_are_registered():
    assert {f["axis"] for f in AXIS.values()} >= {"placement", "transfers", "memory order"}
    for f in AXIS.values():
        assert f["selection"] == ["--op", f["op"]], f["name"]  # the plain focused run a user types
        assert f["dtype"] and len(f["catches"]) == 1 and not f["unlisted"], f["name"]
        assert f["catches"][0].split("/")[0] == f["suite"], f["name"]


def test_each_axis_fault_is_narrow():
    """Planted, each is wrong in its axis's situation and right beside it; clean, right in both."""
    r = subprocess.run([sys.executable, str(HELPERS / "sim_fault_axis_probes.py")], capture_output=True, text=True,
                       timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout.strip().endswith("DONE"), r.stdout + r.stderr
    assert {line.split()[0] for line in r.stdout.splitlines() if line.endswith(" ok")} == set(AXIS)


@pytest.mark.parametrize("name", sorted(AXIS))
def test_plain_op_run_catches_axis_fault_by_its_axis_only(name, tmp_path):
    fault = AXIS[name]
    out = run_one(name, [*fault["selection"], "--dtype", fault["dtype"]], tmp_path / "results", fault=name,
                  catches=tuple(fault["catches"]), stop_first=False, case_timeout=120, run_timeout=600,
                  isolation=False, launch=command_server.launch)
    assert out.returncode == 1 and out.planned > 0, out
    records = [json.loads(line) for line in (rundir.latest_run(tmp_path / "results") / "cases.jsonl").open()]
    # a field case replaying the report the fault plants (argmax of a transposed input, pytorch#160740;
    # a host 0-dim view, pytorch#187117) fails too: the suite of reports, not an OpInfo-vs-CPU case
    failing = [r for r in records if r["status"] in FAILURES and not r["id"].startswith("field/")]
    assert failing and all(fnmatch.fnmatchcase(r["id"], fault["catches"][0]) for r in failing), \
        [(r["id"], r["status"], r.get("message")) for r in failing]
    assert all(r["status"] == "failed" for r in failing), [(r["id"], r["status"]) for r in failing]
    others = [r for r in records if r not in failing]
    assert sum(r["status"] == "passed" for r in others) > len(failing)  # the op's other cases ran and passed
    if fault["suite"] == "opinfo":  # OpInfo's own cases of the op, planned in the same run, all pass
        assert any(r["id"].startswith(f"opinfo/{fault['op']}/") and r["status"] == "passed" for r in others)
        recipe = (failing[0].get("info") or {}).get("explore", {}).get("recipe", "")
        assert RECIPE[fault["axis"]] in recipe, recipe  # found where the axis put the call


def test_clean_sim_passes_copies_into_host(tmp_path):
    """The transfers cases issue 50 added (copy_ of a device view into a host tensor, blocking and not)
    pass on the clean sim, every view and dtype: the fault above, not the case, fails them."""
    out = run_one("clean", ["--case", "transfers/copy_into_host/*"], tmp_path / "results", fault=None,
                  stop_first=False, case_timeout=120, run_timeout=600, isolation=False, launch=command_server.launch)
    records = [json.loads(line) for line in (rundir.latest_run(tmp_path / "results") / "cases.jsonl").open()]
    assert out.returncode == 0 and len(records) == 18, out
    assert {r["status"] for r in records} == {"passed"}


def test_a_host_view_is_copied_as_a_view_in_its_own_dtype():
    """The placement axis's host 0-dim view (pytorch/pytorch#187117) reaches the device call as a view at
    its offset, over a copy made in its own dtype: a byte-storage copy showed the CPU reference computing
    in uint8, which excused a real backend's failure (pytorch_ocl's where) as an unclaimed dtype's."""
    from torchcts.cases.explore.codec import decode, encode
    from torchcts.cases.explore.placement import host_view
    from torchcts.cases.opinfo.recheck import computed_dtypes
    from torchcts.cases.opinfo.samples import HostArg, host_copy

    view = host_view(torch.tensor(True))
    assert view.storage_offset() == 1 and bool(view) and not bool(view.untyped_storage()[0])
    copy = host_copy(view)
    assert copy.storage_offset() == 1 and bool(copy) and copy.untyped_storage().data_ptr() != view.untyped_storage().data_ptr()
    assert computed_dtypes(lambda: host_copy(view)) == {torch.bool}
    back = decode(encode(HostArg(view)))  # records, corpora and repro scripts keep it a view
    assert isinstance(back, HostArg) and back.value.storage_offset() == 1 and bool(back.value)
