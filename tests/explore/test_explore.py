"""Exploration (issue 29, docs/exploration.md): switch points, explored samples, shrinking, corpus, repro."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from helpers.paths import HELPERS
from helpers.runs import latest_run, records, run_cli

from torchcts.cases.context import CaseContext
from torchcts.cases.explore import codec, corpus, switches
from torchcts.cases.explore.budget import default_depth, samples_for
from torchcts.cases.explore.generate import explored, usable_bases
from torchcts.cases.explore.run import run as explore_run
from torchcts.cases.explore.shrink import MAX_CALLS, shrink
from torchcts.cases.explore.switches import (
    add_switch_points,
    by_schema,
    op_positions,
    schema_keywords,
    switch_points,
)
from torchcts.cases.opinfo.samples import lookup, selected_samples
from torchcts.manifest.templates import validation_manifest
from torchcts.model.case import Case, NotApplicable
from torchcts.oracle.opfacts import OpFacts


def bases_of(name: str, dtype: torch.dtype = torch.float32, variant: str = "") -> list:
    return usable_bases(list(selected_samples(lookup(name, variant), dtype, None, None)))


def explore_case(op: str, dtype: str = "float32", variant: str = "") -> Case:
    key = f"{op}.{variant}" if variant else op
    return Case(id=f"opinfo/{key}/{dtype}/explore", suite="opinfo", level=2, runner="torchcts.cases.explore.run:run",
                params={"op": op, "variant": variant, "kind": "explore", "dtype": dtype}, dtype=dtype, kind="explore")


def context(case: Case, **extra) -> CaseContext:
    return CaseContext(device=torch.device("cpu"), manifest=validation_manifest(), case=case, **extra)


# --- switch points ------------------------------------------------------------------------------

def test_switch_points_come_from_the_schema_and_the_samples() -> None:
    points = switch_points(lookup("sum"), [s for _, s in bases_of("sum")])
    assert ("dim", []) in points and ("dim", [0, 0]) in points  # empty and repeated dim lists (schema: int[]?)
    assert ("keepdim", True) in points and ("keepdim", False) in points
    assert ("dim", -1) in points and ("dim", None) in points
    # div without rounding_mode in its samples: the schema's optional string keyword, from the enum table
    div = switch_points(lookup("div", "no_rounding_mode"), [s for _, s in bases_of("div", variant="no_rounding_mode")])
    assert {v for w, v in div if w == "rounding_mode"} == {None, "trunc", "floor"}
    assert dict(schema_keywords("sum"))["keepdim"] == "bool"
    assert by_schema("bool", "flag") == (True, False)
    assert None in by_schema("int?", "k") and -1 in by_schema("int?", "k")
    assert by_schema("Tensor", "other") == ()


def test_torchscript_scalar_overloads_give_no_keyword() -> None:
    """`aten::acos.int(int a) -> float` is TorchScript's math, not the op's tensor API: a keyword `a`
    made every explored sample of acos-like ops one CPU rejects (TypeError), so none was checked."""
    assert "a" not in dict(schema_keywords("acos")) and "b" not in dict(schema_keywords("add"))
    assert "alpha" in dict(schema_keywords("add"))  # the tensor overloads' keywords stay
    ctx = context(explore_case("acos"), explore=16)
    explore_run(ctx, op="acos", dtype=torch.float32)
    bases = bases_of("acos")
    points = switch_points(lookup("acos"), [s for _, s in bases])
    samples = [explored("opinfo/acos/float32/explore", i, bases, points).sample for i in range(16)]
    for s in samples:  # every explored call is one CPU accepts
        torch.acos(s.input, *s.args, **s.kwargs)
    # only the in-place variant is dropped, where the layout axis expanded the input (stride 0)
    expanded = sum(1 for s in samples if s.input.numel() > 1 and 0 in s.input.stride())
    assert ctx.info["explored"]["dropped"] == expanded and ctx.info["explored"]["checks"] > 0


def test_no_keyword_an_every_base_passes_positionally_nor_an_enum_in_int_clothing() -> None:
    # eye(n[, m]): `m=` goes only to bases that do not pass m positionally (else: a TypeError, dropped)
    bases = bases_of("eye")
    points = switch_points(lookup("eye"), [s for _, s in bases])
    assert ("m", 0) in points and not any(w == "n" for w, _ in points)  # n: the input, every base has it
    for i in range(40):
        made = explored("opinfo/eye/float32/explore", i, bases, points, 0, positional=op_positions(lookup("eye")))
        assert "m" not in made.sample.kwargs or not made.sample.args
    # topk(x, k): k is positional in every sample, so its schema-given points go to that position
    assert (0, 0) in switch_points(lookup("topk"), [s for _, s in bases_of("topk")])
    # mm.dtype's out_dtype is a ScalarType (an int in TorchScript's types): no int values for it
    mm = switch_points(lookup("mm"), [s for _, s in bases_of("mm")])
    assert not any(w == "out_dtype" for w, _ in mm)


def test_bases_with_data_come_first_and_a_weak_case_explores_past_its_budget() -> None:
    # searchsorted's first 32 OpInfo samples are empty; one empty base stays (an edge worth a look)
    bases = bases_of("searchsorted")
    assert len(bases) == 8 and sum(1 for _, s in bases if s.input.numel() == 0) == 1
    ctx = context(explore_case("searchsorted"), explore=2)
    explore_run(ctx, op="searchsorted", dtype=torch.float32)
    assert ctx.verdict.weak is None
    # nonzero_static with size=0 answers empty whatever the input: exploration goes on, bounded
    ctx = context(explore_case("nonzero_static"), explore=2)
    explore_run(ctx, op="nonzero_static", dtype=torch.float32)
    stats = ctx.info["explored"]
    budget = samples_for(2, len(switch_points(lookup("nonzero_static"), [s for _, s in bases_of("nonzero_static")])) + 1)
    assert stats["samples"] <= budget * 3 and (ctx.verdict.weak is None or stats["past_budget"] == 2 * budget)


def test_arguments_cpu_cannot_take_are_never_switched() -> None:
    # circular padding by negative amounts reads outside the input on CPU: the mode stays
    pad = switch_points(lookup("nn.functional.pad", "replicate_negative"),
                        [s for _, s in bases_of("nn.functional.pad", variant="replicate_negative")])
    assert pad and not any(w in (1, "mode") for w, _ in pad)


def test_the_hook_puts_an_ops_own_points_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(switches, "FACTS", OpFacts(switches.FACTS.facts))  # the points added stay in this test
    add_switch_points("abs", "planted", ["x", "y"])
    bases = bases_of("abs")
    points = switch_points(lookup("abs"), [s for _, s in bases])
    assert points[:2] == [("planted", "x"), ("planted", "y")]
    first = [explored("opinfo/abs/float32/explore", i, bases, points, hooked=2).switches[0] for i in range(2)]
    assert first == [("planted", "x"), ("planted", "y")]


# --- explored samples ---------------------------------------------------------------------------

def test_the_same_case_id_gives_the_same_samples_and_another_id_others() -> None:
    bases = bases_of("clamp")
    points = switch_points(lookup("clamp"), [s for _, s in bases])

    def encoded(case_id: str) -> list:
        return [codec.encode_sample(explored(case_id, i, bases, points).sample) for i in range(6)]

    first = encoded("opinfo/clamp/float32/explore")
    assert encoded("opinfo/clamp/float32/explore") == first
    assert encoded("opinfo/clamp/float64/explore") != first
    # sample i does not depend on how many were asked for (a deeper run is a superset)
    assert codec.encode_sample(explored("opinfo/clamp/float32/explore", 4, bases, points).sample) == first[4]


def test_every_switch_point_is_tried_within_one_round() -> None:
    bases = bases_of("sum")
    points = switch_points(lookup("sum"), [s for _, s in bases])
    seen = {(w, json.dumps(v, default=str)) for i in range(len(points) + 1)
            for w, v in explored("opinfo/sum/float32/explore", i, bases, points).switches[:1]}
    assert seen == {(w, json.dumps(v, default=str)) for w, v in points}


def test_an_int32_case_explores_and_shrinks_int32_calls_only() -> None:
    """pytorch_ocl's eye: the int32 case's dtype= switch made eye(1, 1, dtype=float32), and the
    shrinker then dropped dtype=, so an int32 case reported the float32 kernel's bug as its own."""
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.cases.explore.generate import carries, plan

    made_from = plan(lookup("eye"), selected_samples(lookup("eye"), torch.int32, None, None), torch.int32)
    assert any(w == "dtype" for w, _ in made_from.points)  # the switch point is there, for sum's sake
    made = [made_from.sample("opinfo/eye/int32/explore", i) for i in range(3 * (len(made_from.points) + 1))]
    assert all(carries(m.sample, torch.int32) for m in made)
    assert all(w != "dtype" for m in made for w, _ in m.switches)
    # sum of an int32 tensor keeps its dtype= switch: the input is still int32
    summed = plan(lookup("sum"), selected_samples(lookup("sum"), torch.int32, None, None), torch.int32)
    switched = {v for i in range(3 * (len(summed.points) + 1))
                for w, v in summed.sample("opinfo/sum/int32/explore", i).switches if w == "dtype"}
    assert torch.float64 in switched
    sample = SampleInput(2, args=(2,), kwargs={"dtype": torch.int32})
    assert shrink(sample, lambda s: True, keeps=lambda s: carries(s, torch.int32)).sample.kwargs == {"dtype": torch.int32}
    assert shrink(sample, lambda s: True).sample.kwargs == {}


def test_value_classes_reach_the_tensors() -> None:
    bases = bases_of("add")
    points = switch_points(lookup("add"), [s for _, s in bases])
    values = torch.cat([explored("opinfo/add/float32/explore", i, bases, points).sample.input.reshape(-1)
                        for i in range(40)])
    assert bool(((values == 0) & torch.signbit(values)).any())  # -0.0
    assert bool(torch.isnan(values).any()) and bool(torch.isinf(values).any())
    tiny = torch.finfo(torch.float32).smallest_normal
    assert bool(((values.abs() < tiny) & (values != 0)).any())  # subnormals
    assert bool((values == torch.finfo(torch.float32).max).any())


def test_the_budget_follows_the_level_and_covers_the_switch_points() -> None:
    assert default_depth(1) == 0 and default_depth(2) < default_depth(8)
    assert samples_for(0, 50) == 0
    assert samples_for(8, 3) == 8 and samples_for(8, 12) == 12 and samples_for(8, 100) == 24


def test_a_case_explores_its_budget_and_drops_what_cpu_rejects() -> None:
    ctx = context(explore_case("sum"), explore=5)
    explore_run(ctx, op="sum", dtype=torch.float32)
    stats = ctx.info["explored"]
    points = switch_points(lookup("sum"), [s for _, s in bases_of("sum")])
    assert stats["samples"] == samples_for(5, len(points) + 1)
    assert stats["dropped"] > 0  # dim=[0, 0] and out-of-range dims: CPU raises, so they are dropped
    assert stats["checks"] > 0
    assert "sample" not in ctx.info  # a pass names no sample


def test_explore_zero_is_off_and_one_sample_can_be_rerun() -> None:
    with pytest.raises(NotApplicable, match="off"):
        explore_run(context(explore_case("abs"), explore=0), op="abs", dtype=torch.float32)
    ctx = context(explore_case("abs"), explore=0, sample=7)
    explore_run(ctx, op="abs", dtype=torch.float32)
    assert ctx.info["explored"]["samples"] == 1


# --- shrinking ----------------------------------------------------------------------------------

def test_the_shrinker_reduces_a_planted_failure_to_one_element_within_its_bound() -> None:
    from torch.testing._internal.opinfo.core import SampleInput

    x = torch.randn(6, 7, 5, generator=torch.Generator().manual_seed(0))
    x[3, 4, 2] = -0.0
    sample = SampleInput(x, args=(torch.randn(7, 5),), kwargs={"alpha": 2.0, "flag": True})
    calls = []

    def fails(s) -> bool:  # the planted bug: any -0.0 in the input
        calls.append(1)
        return bool(((s.input == 0) & torch.signbit(s.input)).any())

    result = shrink(sample, fails)
    assert result.calls == len(calls) <= MAX_CALLS
    assert fails(result.sample)
    assert result.sample.kwargs == {}  # non-default arguments dropped
    assert result.sample.input.numel() == 1 and result.sample.input.dim() <= 1
    assert result.sample.args[0].numel() < 35


def test_the_shrinker_stops_at_its_call_bound() -> None:
    from torch.testing._internal.opinfo.core import SampleInput

    result = shrink(SampleInput(torch.ones(64, 64)), lambda s: True, max_calls=5)
    assert result.calls == 5 and result.sample.input.numel() < 64 * 64


# --- codec and corpus ---------------------------------------------------------------------------

def test_the_codec_keeps_every_value_exactly() -> None:
    from torch.testing._internal.opinfo.core import SampleInput

    tiny = torch.finfo(torch.float32).smallest_normal / 4
    x = torch.tensor([-0.0, 0.0, math.nan, math.inf, -math.inf, tiny, 1 + 2 ** -23])
    sample = SampleInput(x, args=(torch.tensor([1 + 2j]), -1, [0, 0], None), kwargs={"dtype": torch.float64, "p": 0.5})
    back = codec.decode_sample(json.loads(json.dumps(codec.encode_sample(sample))))
    assert torch.equal(torch.signbit(back.input), torch.signbit(x))
    torch.testing.assert_close(back.input, x, equal_nan=True, atol=0, rtol=0)
    assert back.args[1:] == (-1, [0, 0], None) and back.kwargs == {"dtype": torch.float64, "p": 0.5}
    for bad in ({"tensor": {"dtype": "os.system", "shape": [1], "values": [1]}}, {"eval": "1"},
                {"tensor": {"dtype": "float32", "shape": [2], "values": ["0x1p0"]}}):
        with pytest.raises(codec.CodecError):
            codec.decode(bad)


def entry(case: str, value: float) -> corpus.Entry:
    from torch.testing._internal.opinfo.core import SampleInput

    return corpus.Entry(case, "forward", codec.encode_sample(SampleInput(torch.tensor([value]))), recipe="r")


def test_corpus_merges_by_file_and_reads_untrusted_files(tmp_path: Path) -> None:
    case = "opinfo/abs/float32/explore"
    threads = [threading.Thread(target=corpus.save, args=(tmp_path, entry(case, v))) for v in (1.0, 2.0, 3.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    corpus.save(tmp_path, entry(case, 1.0))  # the same find again: the same file
    corpus.save(tmp_path, entry("opinfo/abs/float64/explore", 1.0))
    entries, bad = corpus.load(tmp_path, case)
    assert len(entries) == 3 and bad == 0
    assert not list(tmp_path.rglob(".*.tmp"))  # whole files only
    folder = tmp_path / "abs"
    (folder / (entries[0].name[:13] + "garbage.json")).write_text("{not json")
    entries, bad = corpus.load(tmp_path, case)
    assert len(entries) == 3 and bad == 1


# --- end to end on the sim with test-only faults -------------------------------------------------

def sim_manifest(tmp_path: Path) -> Path:
    import torchcts  # not torchcts.sim: importing it registers the sim device in this test process

    text = (Path(torchcts.__file__).parent / "sim" / "manifest.py").read_text().replace('"torchcts.sim"', '"explore_faulty_sim"')
    path = tmp_path / "manifest.py"
    path.write_text(text)
    return path


@pytest.mark.main_only
def test_a_planted_fault_is_found_shrunk_saved_replayed_and_reproduced(tmp_path: Path) -> None:
    manifest = sim_manifest(tmp_path)
    import torchcts

    env = {"PYTHONPATH": os.pathsep.join([str(HELPERS), str(Path(torchcts.__file__).parents[1])]), "TORCHCTS_WARM": "0"}
    args = ("run", "--device", "sim", "--manifest", str(manifest), "--case", "opinfo/sum/float32/explore",
            "--case", "opinfo/clamp/float32/explore", "--corpus", "corpus", "--", "-n", "0")
    first = run_cli(*args, cwd=tmp_path, env=env)
    assert first.returncode == 1, first.stdout + first.stderr
    run_dir = latest_run(tmp_path)
    by_id = {r["id"]: r for r in records(run_dir)}
    for case_id in ("opinfo/sum/float32/explore", "opinfo/clamp/float32/explore"):
        record = by_id[case_id]
        assert record["status"] == "failed", record
        found = record["info"]["explore"]
        assert found["shrunk"] is not None and found["shrink_calls"] <= MAX_CALLS
        assert record["info"]["original_sample"] and record["info"]["sample"]
        shrunk = codec.decode_sample(found["shrunk"])
        original = codec.decode_sample(found["original"])
        assert shrunk.input.numel() <= original.input.numel()
    sum_found = codec.decode_sample(by_id["opinfo/sum/float32/explore"]["info"]["explore"]["shrunk"])
    assert [] in [*sum_found.args, *sum_found.kwargs.values()]  # the switch point the fault needs
    assert sum_found.input.numel() == 1
    clamp_found = codec.decode_sample(by_id["opinfo/clamp/float32/explore"]["info"]["explore"]["shrunk"])
    assert clamp_found.args[0] is None and bool(torch.signbit(clamp_found.input).any())
    assert "found as:" in (run_dir / "summary.md").read_text()
    assert len(list((tmp_path / "corpus").rglob("*.json"))) == 2
    assert len(list((run_dir / "corpus").rglob("*.json"))) == 2

    # repro: the standalone script runs the shrunk input and the original, and both fail
    repro = run_cli("repro", "opinfo/sum/float32/explore", "--run", str(run_dir), "--import", "explore_faulty_sim",
                    cwd=tmp_path, env=env)
    assert repro.returncode == 0, repro.stderr
    script = run_dir / "repro" / "opinfo_sum_float32_explore" / "repro.py"
    scripts = list((run_dir / "repro").rglob("repro.py"))
    script = script if script.exists() else scripts[0]
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path,
                         env={**env, "PATH": "/usr/bin:/bin"}, timeout=300)
    assert out.returncode == 1 and "2 of 2 sample(s) failed" in out.stdout, out.stdout + out.stderr
    assert "shrunk" in out.stdout and "original" in out.stdout

    # the next run replays the corpus first: the same failure, marked replayed
    second = run_cli(*args[:7], "--corpus", "corpus", "--explore", "0", "--", "-n", "0", cwd=tmp_path, env=env)
    assert second.returncode == 1, second.stdout + second.stderr
    again = {r["id"]: r for r in records(latest_run(tmp_path))}["opinfo/sum/float32/explore"]
    assert again["status"] == "failed" and again["info"]["explore"]["replayed"].endswith(".json")


def test_explore_and_corpus_flag_errors_are_one_line_usage_errors(tmp_path: Path) -> None:
    bad = run_cli("run", "--validation", "--op", "abs", "--explore", "-1", cwd=tmp_path)
    assert bad.returncode == 2 and "--explore must be" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    (tmp_path / "afile").write_text("x")
    bad = run_cli("run", "--validation", "--op", "abs", "--corpus", "afile", cwd=tmp_path)
    assert bad.returncode == 2 and "not a folder" in bad.stderr


def test_placement_moves_operands_only_where_pytorch_allows_a_host_scalar() -> None:
    """meshgrid (and linear_cross_entropy's chunked path) check that every tensor is on one device,
    on CUDA too: a 0-dim operand moved to the host there made the clean sim fail; add keeps the axis."""
    from torchcts.cases.explore.values import policy

    def placed(name: str, variant: str = "") -> int:
        bases = bases_of(name, variant=variant)
        points = switch_points(lookup(name, variant), [s for _, s in bases])
        rules = policy(name, variant=variant)
        return sum("CPU scalar tensor" in (w := explored(f"opinfo/{name}/float32/explore", i, bases, points,
                                                        rules=rules).placed or "") or "Python number" in w
                   for i in range(40))

    assert placed("meshgrid", "variadic_tensors") == 0
    assert placed("add") > 0


def test_layout_never_expands_running_statistics() -> None:
    """batch_norm writes running_mean/var (args 0 and 1) without a schema mark: expanded (stride 0),
    the updates race and CPU's own result changed from run to run (a false failure)."""
    bases = bases_of("nn.functional.batch_norm")
    points = switch_points(lookup("nn.functional.batch_norm"), [s for _, s in bases])
    samples = [explored("opinfo/nn.functional.batch_norm/float32/explore", i, bases, points).sample for i in range(60)]
    for i, s in enumerate(samples):
        assert all(0 not in a.stride() for a in s.args[:2] if isinstance(a, torch.Tensor) and a.numel() > 1), i
    assert any(0 in s.input.stride() for s in samples)  # the axis still expands what the op only reads
