"""Sharding, merging and the case-list cache (issue 9)."""

from __future__ import annotations

import json
import os
import unittest

import pytest
from helpers.runs import latest_run, records, run_cli

from torchcts.cases import cache
from torchcts.engine.selection import Decision
from torchcts.engine.shard import partition, shard_decisions
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord


def _decisions(n: int, status: str = "run") -> list[Decision]:
    return [Decision(Case(id=f"s/c{i:03d}", suite="s", level=1, runner="m:f"), status) for i in range(n)]


def test_shards_partition_every_case_exactly_once_and_balance_counts():
    decisions = _decisions(100) + _decisions(7, "not_claimed")
    kept = [shard_decisions(decisions, i, 4)[0] for i in range(1, 5)]
    ids = [d.case.id for part in kept for d in part]
    assert sorted(ids) == sorted(d.case.id for d in decisions)
    runs = [sum(d.status == "run" for d in part) for part in kept]
    assert max(runs) - min(runs) <= 1


def test_shards_balance_recorded_durations():
    weights = [(f"c{i}", 10.0) for i in range(4)] + [(f"d{i}", 1.0) for i in range(40)]
    owner = partition(weights, 4)
    loads = {s: sum(w for c, w in weights if owner[c] == s) for s in range(1, 5)}
    # four long cases land on four different shards; the short ones fill around them
    assert len({owner[f"c{i}"] for i in range(4)}) == 4
    assert max(loads.values()) - min(loads.values()) <= 1.0


def test_partition_is_deterministic():
    weights = [(f"x{i}", float(i % 7)) for i in range(50)]
    assert partition(weights, 3) == partition(list(reversed(weights)), 3)


def test_cache_hit_skips_the_build_and_key_tracks_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHCTS_NO_CACHE", raising=False)
    built = []
    case = Case(id="s/a/float32", suite="s", level=2, runner="m:f", params={"dtype": "float32"}, ops=("aten::a",))

    def build():
        built.append(1)
        return [case]

    assert cache.cached_cases("s", build) == [case]
    assert cache.cached_cases("s", build) == [case]
    assert len(built) == 1
    cache.source_key.cache_clear()
    from torchcts import compat

    real = compat.torch_version_file()
    monkeypatch.setattr(compat, "torch_version_file", lambda: real.replace("__version__ = '", "__version__ = '9.9.9-"))
    try:
        cache.cached_cases("s", build)
        assert len(built) == 2, "another torch version must miss the cache"
    finally:
        cache.source_key.cache_clear()


@pytest.mark.main_only  # shard split and merge are PyTorch-independent; the matrix skips the slow run
def test_shard_runs_merge_into_one_run(tmp_path):
    for i in (1, 2):
        r = run_cli("run", "--device", "cpu", "--level", "1", "--shard", f"{i}/2", "--", "-q", "-p", "no:warnings", cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
    shards = sorted(p for p in (tmp_path / "results").iterdir() if p.is_dir() and not p.name.startswith(".")
                    and not p.is_symlink())
    # `results/latest` (a link to shard 2 here) given beside the shards, as `results/*` does, counts once
    r = run_cli("merge", *[str(p) for p in shards], "results/latest", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    merged = latest_run(tmp_path)
    whole = run_cli("run", "--device", "cpu", "--level", "1", "--", "-q", "-p", "no:warnings", cwd=tmp_path)
    assert whole.returncode == 0
    run = json.loads((merged / "run.json").read_text())
    assert run["status"] == "complete" and run["merged_from"] == [p.name for p in shards]
    whole_dir = [p for p in (tmp_path / "results").iterdir() if p.is_dir() and not p.is_symlink()
                 and p.name not in {s.name for s in shards} and p != merged and not p.name.startswith(".")][0]
    assert sorted(r["id"] for r in records(merged)) == sorted(r["id"] for r in records(whole_dir))
    # a shard mixed with a non-shard run is refused
    bad = run_cli("merge", str(shards[0]), str(whole_dir), cwd=tmp_path)
    assert bad.returncode == 2 and "not a shard run" in bad.stderr


@pytest.mark.parametrize("flag", ["--shard-durations"])
def test_shard_durations_need_shard(tmp_path, flag):
    r = run_cli("run", "--device", "cpu", "--level", "1", flag, "x", cwd=tmp_path)
    assert r.returncode == 2 and "--shard" in r.stderr


def test_extra_suites_are_never_cached(tmp_path, monkeypatch):
    """A suite from outside the package may change without touching TorchCTS's source."""
    from torchcts.cases import registry

    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHCTS_NO_CACHE", raising=False)
    mod = tmp_path / "extra_suite_mod.py"
    mod.write_text("from torchcts.model.case import Case\nN = 2\n"
                   "def cases():\n    return [Case(id=f'x/{i}', suite='x', level=1, runner='m:f') for i in range(N)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.SUITES, "x", registry.Suite("x", "extra_suite_mod", "test"))
    assert len(registry.suite_cases("x")) == 2
    import extra_suite_mod

    monkeypatch.setattr(extra_suite_mod, "N", 5)
    assert len(registry.suite_cases("x")) == 5
    assert not list(tmp_path.glob("x-*"))


def test_corrupt_cache_file_is_a_miss_and_is_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHCTS_NO_CACHE", raising=False)
    case = Case(id="s/a", suite="s", level=1, runner="m:f", params={"shape": [2, 3]}, requires=("training|autograd",))
    assert cache.cached_cases("s", lambda: [case]) == [case]
    (path,) = tmp_path.glob("s-*")
    path.write_bytes(b"\x00garbage")
    assert cache.cached_cases("s", lambda: [case]) == [case]
    assert cache.cached_cases("s", lambda: pytest.fail("a rewritten cache must hit")) == [case]


def test_stale_cache_files_of_other_keys_are_pruned(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHCTS_NO_CACHE", raising=False)
    old, recent = tmp_path / "s-0000old.marshal", tmp_path / "s-0000new.marshal"
    for f in (old, recent):
        f.write_bytes(b"x")
    os.utime(old, (1, 1))
    cache.cached_cases("s", lambda: [])
    assert not old.exists() and recent.exists()


def test_warm_collection_never_imports_torch(tmp_path):
    """Collection from the cache (show-skips, and a run before its workers start) skips torch."""
    import subprocess
    import sys

    env = {**os.environ, "TORCHCTS_CACHE_DIR": str(tmp_path / "cache"), "CI": "true"}
    env.pop("TORCHCTS_NO_CACHE", None)
    # asked at exit (the command line ends through engine/lean.py's exit_now, which runs exit handlers)
    probe = ("import atexit, sys, runpy; sys.argv = ['torchcts', 'show-skips', '--validation', '--suite', 'dtypes']\n"
             "atexit.register(lambda: print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr))\n"
             "runpy.run_module('torchcts', run_name='__main__')\n")
    first = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert "TORCH" in first.stderr.splitlines()[-1], "a cache miss builds the cases (with torch)"
    warm = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert warm.stderr.splitlines()[-1] == "NO-TORCH", warm.stderr
    assert "would run" in warm.stdout


def test_build_fields_parsed_from_version_py_match_the_imported_torch(monkeypatch):
    """Collection reads torch's build without importing it: the parse must agree with torch itself."""
    import sys

    import torch

    from torchcts import compat

    imported = compat.build_info()
    monkeypatch.delitem(sys.modules, "torch")
    parsed = compat.build_info()
    assert parsed == imported and parsed["torch"] == torch.__version__
    assert compat.installed_torch_version() == torch.__version__
    monkeypatch.setattr(compat, "torch_version_file", lambda: "__version__ = '2.6.0'\ncuda = '12.4'\n")
    assert compat.build_info()["family"] == "cu124" and compat.installed_torch_version() == "2.6.0"


class _LookupProbe(unittest.TestCase):
    """A module-level TestCase (id `module.Class.test`): PyTorch 2.7's lookup takes the third dotted
    part of the id as the test name, so it finds a test of this class but not of one nested in a
    function (2.13's finds both)."""

    __test__ = False  # run by the test below, not collected
    lookups: tuple = ()
    seen: list = []

    def test_probe(self) -> None:
        type(self).seen = [fn() for fn in self.lookups]


def test_frames_only_test_fn_lookup_gives_the_same_answer():
    """The replacement of OpInfo's inspect.stack() lookup: None outside unittest, the test inside."""
    import unittest

    from torch.testing._internal import common_utils
    from torch.testing._internal.opinfo import core

    from torchcts import compat

    before = common_utils.extract_test_fn  # already replaced if this worker loaded op_db
    compat._frames_only_test_fn_lookup()
    compat._frames_only_test_fn_lookup()  # idempotent: never wraps the replacement
    try:
        fast = common_utils.extract_test_fn
        original = fast.__wrapped__
        assert fast is not original and core.extract_test_fn is fast and not hasattr(original, "__wrapped__")
        assert fast() is None and original() is None
        _LookupProbe.lookups = (fast, original)
        unittest.TextTestRunner(stream=open(os.devnull, "w")).run(_LookupProbe("test_probe"))  # noqa: SIM115
        assert _LookupProbe.seen == [_LookupProbe.test_probe, _LookupProbe.test_probe]
    finally:
        common_utils.extract_test_fn = core.extract_test_fn = before


def test_cost_table_keeps_the_cases_its_means_misjudge():
    """One op's slow dtype gets its own entry (its estimate from the means would be far off), a
    worker's first case (it pays the imports) and cases near their estimate do not."""
    from torchcts.engine import shard

    recs = [{"id": f"opinfo/op{i}/float32/forward", "suite": "opinfo", "kind": "forward", "op": f"op{i}",
             "duration_s": 0.05, "worker": "gw0", "started_at": 10.0 + i} for i in range(40)]
    recs += [{"id": f"opinfo/slow/{dt}/backward", "suite": "opinfo", "kind": "backward", "op": "slow",
              "duration_s": s, "worker": "gw1", "started_at": 100.0 + s} for dt, s in
             (("float32", 2.0), ("float64", 2.2), ("bfloat16", 2.1), ("float16", 60.0))]
    recs[0]["duration_s"] = 5.0  # gw0's first case: the OpInfo database's import
    table = shard.cost_table_from([CaseRecord.from_json({**r, "status": "passed"}) for r in recs])
    assert table["case"]["opinfo/slow/float16/backward"] == 60.0
    assert not any(k.startswith("opinfo/op") for k in table["case"])  # gw0's first and the cheap ones
    case = Case(id="opinfo/slow/float16/backward", suite="opinfo", level=8, runner="m:f", kind="backward",
                params={"op": "slow"})
    assert abs(shard._from_means(table, case) - 60.0) > 30  # what the means alone would say
