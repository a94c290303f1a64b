"""Inner-loop speed (issue 21): what makes a one-op run cheaper must not change what it computes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from torchcts.manifest import load
from torchcts.manifest.literal import literal_manifest
from torchcts.manifest.templates import TEMPLATES, render_python


def _both_ways(path, monkeypatch):
    fast = load.load_manifest(path)
    monkeypatch.setattr(load, "literal_manifest", lambda source: (False, None))
    return fast, load.load_manifest(path)


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_template_manifests_read_without_torch_equal_executed(template, tmp_path, monkeypatch):
    path = tmp_path / "manifest.py"
    path.write_text(render_python(template, "cpu"))
    assert literal_manifest(path.read_text())[0], "init's templates are plain literals"
    fast, executed = _both_ways(path, monkeypatch)
    assert fast.to_json() == executed.to_json() and fast.hash() == executed.hash()


def test_aliases_collapse_like_torch_and_dtype_values_in_expectations(tmp_path, monkeypatch):
    path = tmp_path / "manifest.py"
    text = render_python("complete", "cpu").replace("torch.float16: True,", "torch.half: True, torch.float16: False,")
    text = text.replace('"expectations": [],', '"expectations": [{"match": {"op": "add", "dtype": [torch.double]}, '
                        '"status": "xfail", "reason": "r", "expires": "2099-01-01"}],')
    text = text.replace('"tolerance_overrides": {},',
                        '"tolerance_overrides": {"elementwise": {torch.float64: {"atol": 1e-3, "rtol": 0.5}}},')
    assert text.count("torch.half") == 1 and text.count("torch.double") == 1 and "1e-3" in text
    path.write_text(text)
    assert literal_manifest(path.read_text())[0]
    fast, executed = _both_ways(path, monkeypatch)
    assert fast.to_json() == executed.to_json()
    assert fast.supported_dtypes["float16"] is False and fast.expectations[0]["match"]["dtype"] == ["float64"]


@pytest.mark.parametrize("source", [
    "import torch\nmanifest = {torch.bananas: True}",  # no dtype's typo: exec's error message names it
    "manifest = {torch.float32: True}\nimport torch",  # NameError when executed
    "import os\nmanifest = {'device_name': os.environ['X']}",
    "import torch\nx = dict(a=1)\nmanifest = {}",
    "import torch\nmanifest = {**{}}",
    "import torch\nmanifest = {[1]: 2}",
    "import torch\nmanifest = {'a': torch.float32.is_floating_point}",
    "import torch\nmanifes = {}",
    "import torch as t\nmanifest = {t.float32: True}",
])
def test_anything_but_literals_is_executed(source):
    assert literal_manifest(source) == (False, None)


def test_a_dtype_typo_fails_as_executing_it_would_without_importing_torch(tmp_path, monkeypatch):
    """issue 30: a typo of a dtype took a torch import (16 s under load) to report."""
    path = tmp_path / "manifest.py"
    path.write_text(render_python("minimal", "cpu").replace("torch.int64: True", "torch.int46: True"))
    with pytest.raises(load.DtypeTypo):
        literal_manifest(path.read_text())
    messages = []
    for _ in range(2):  # read here, then executed
        with pytest.raises(load.ManifestError) as err:
            load.load_manifest(path)
        messages.append(str(err.value))
        monkeypatch.setattr(load, "literal_manifest", lambda source: (False, None))
    assert messages[0] == messages[1] and "unknown dtype 'torch.int46' at line" in messages[0]
    assert "did you mean 'torch.int64'?" in messages[0]
    code = ("import sys; from torchcts.manifest.load import load_manifest\n"
            f"try:\n    load_manifest({str(path)!r})\n"
            "except Exception as e:\n    print(type(e).__name__, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ManifestError False"


def test_plain_manifest_run_never_imports_torch_in_the_controller(tmp_path):
    path = tmp_path / "manifest.py"
    path.write_text(render_python("complete", "cpu"))
    code = ("import sys; from torchcts.manifest.load import load_manifest; "
            f"load_manifest({str(path)!r}); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_probe_names_the_worker_and_sees_a_case_raise_the_memory_peak(monkeypatch):
    """maxrss is a high-water mark, inherited across fork and exec on Linux, so a real allocation
    cannot be relied on to raise it inside a test worker: the probe's arithmetic is checked on a
    scripted mark, and the real reading is checked for sanity."""
    from torchcts.engine import probe as probe_mod

    assert probe_mod._maxrss_mb() > 0
    marks = iter([500.0, 564.0])
    monkeypatch.setattr(probe_mod, "_maxrss_mb", lambda: next(marks))
    probe = probe_mod.CaseProbe("gw3")
    sum(range(10**5))  # some CPU time
    fields = probe.fields()
    assert fields["worker"] == "gw3" and fields["cpu_s"] >= 0 and fields["started_at"] > 0
    assert fields["rss_grew_mb"] == 64.0 and fields["maxrss_mb"] == 564.0


def test_shards_without_durations_balance_estimated_cost_not_count(monkeypatch):
    from torchcts.engine import shard
    from torchcts.engine.selection import Decision
    from torchcts.model.case import Case

    table = {"suite": {"s": 2.0}, "kind": {"s/heavy": 10.0, "s/light": 1.0}, "op": {"s/slowop": 4.0, "s/fastop": 2.0}}
    monkeypatch.setattr(shard, "cost_table", lambda: table)
    cases = [Case(id=f"s/h{i:02d}", suite="s", level=1, runner="m:f", kind="heavy") for i in range(8)]
    cases += [Case(id=f"s/l{i:02d}", suite="s", level=1, runner="m:f", kind="light") for i in range(40)]
    assert shard.estimated_cost(Case(id="s/x", suite="s", level=1, runner="m:f", kind="light",
                                     params={"op": "slowop"})) == 2.0  # light kind, an op twice the suite's mean
    assert shard.estimated_cost(Case(id="t/x", suite="t", level=1, runner="m:f")) == 2.0  # unknown: median suite
    decisions = [Decision(c, "run") for c in cases]
    parts = [shard.shard_decisions(decisions, i, 4)[0] for i in range(1, 5)]
    cost = [sum(shard.estimated_cost(d.case) for d in p) for p in parts]
    assert max(cost) - min(cost) <= 1.0 and sorted(len(p) for p in parts) == [12, 12, 12, 12]
    heavy = [sum(d.case.kind == "heavy" for d in p) for p in parts]
    assert heavy == [2, 2, 2, 2]
    again = [shard.shard_decisions(list(reversed(decisions)), i, 4)[0] for i in range(1, 5)]
    assert [{d.case.id for d in p} for p in parts] == [{d.case.id for d in p} for p in again]  # order-free


def _decided(result):
    return [(d.case, d.status, d.reason) for d in result.decisions], result.filtered, result.sharded_out


def _prepare(path, **selection):
    from torchcts.engine.setup import prepare
    from torchcts.engine.spec import RunSpec
    from torchcts.model.selection import Selection

    return prepare(RunSpec(device_arg="cpu", manifest_arg=str(path), selection=Selection(**selection))).result


def test_selection_memo_returns_what_selecting_returns_and_misses_on_any_change(tmp_path, monkeypatch):
    """The rerun of a command reuses its selection (engine/selection_memo.py): exactly select()'s
    result; another manifest, flag or shard is another key; a foreign file is a miss, not a result."""
    from torchcts.engine import selection_memo, setup

    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "manifest.py"
    path.write_text(render_python("complete", "cpu"))
    first = _decided(_prepare(path, ops=["add"], dtypes=["float32"]))
    files = list((tmp_path / "cache" / "selections").glob("*.marshal"))
    assert len(files) == 1 and first[0] and first[1] > 0
    real_select = setup.select
    monkeypatch.setattr(setup, "select", lambda *a: pytest.fail("a rerun must hit the memo"))
    assert _decided(_prepare(path, ops=["add"], dtypes=["float32"])) == first
    monkeypatch.setattr(setup, "select", real_select)
    # Other flags, another shard, other claims: each selects afresh, and gets what select() gets.
    for extra in ({"ops": ["add"], "dtypes": ["float64"]}, {"ops": ["add"], "dtypes": ["float32"], "shard": (1, 2)}):
        assert _decided(_prepare(path, **extra)) != first
    path.write_text(render_python("complete", "cpu").replace("torch.float32: True", "torch.float32: False"))
    unclaimed = _decided(_prepare(path, ops=["add"], dtypes=["float32"]))
    def runs(decided):
        return sum(status == "run" for _, status, _ in decided[0])

    assert unclaimed != first and runs(unclaimed) < runs(first) - 50
    assert len(list((tmp_path / "cache" / "selections").glob("*.marshal"))) == 4
    # A file that is not exactly ours (edited, truncated, another format) is a miss.
    key_file = files[0]
    for junk in (b"", b"not marshal", __import__("marshal").dumps(("x", [], 0, 0, []))):
        key_file.write_bytes(junk)
        assert selection_memo.load(key_file.stem) is None
    monkeypatch.setenv("TORCHCTS_NO_CACHE", "1")
    from torchcts.model.selection import Selection

    assert selection_memo.memo_key(setup.load_claims("cpu", str(path)), Selection()) is None


def test_the_selection_memo_key_reads_every_file_it_names():
    """A file of the key's list that moved makes every key None: the memo silently off (every rerun
    selects afresh). Each must exist, so a move fails here instead."""
    from torchcts.engine import selection_memo

    assert all((selection_memo._HERE / name).is_file() for name in selection_memo._CODE)


def test_release_memory_trims_once_the_resident_set_grew(monkeypatch):
    """engine/probe.py: malloc_trim(0) only after TRIM_MB of growth since the last release; the
    record's rss_mb is the resident set after it."""
    from torchcts.engine import probe

    rss, trims = [500.0], []

    def trim(pad):
        trims.append(pad)
        rss[0] = 420.0

    monkeypatch.setattr(probe, "_current_rss_mb", lambda: rss[0])
    monkeypatch.setattr(probe, "_TRIM", trim)
    monkeypatch.setattr(probe, "_released_at", [])
    assert probe.release_memory() == 500.0 and not trims  # the first case sets the mark
    rss[0] = 500.0 + probe.TRIM_MB - 1
    assert probe.release_memory() == rss[0] and not trims
    rss[0] = 500.0 + probe.TRIM_MB + 1
    assert probe.release_memory() == 420.0 and trims == [0]
    rss[0] = 430.0
    assert probe.release_memory() == 430.0 and trims == [0]  # measured from the new mark
