"""What a new PyTorch release changed (issue 49): the stored snapshot of the newest validated release,
`coverage release-diff`, and a new dtype claimable and run the day it ships."""

from __future__ import annotations

import json

import pytest
import torch

from torchcts.cases.opinfo.build import op_cases, op_key
from torchcts.compat import MAX_VALIDATED_TORCH, fmt, op_db
from torchcts.coverage.release import diff, installed_snapshot, render_markdown, summarize
from torchcts.manifest.literal import literal_manifest
from torchcts.manifest.schema import DTYPES, claimed_dtypes, release_dtypes
from torchcts.manifest.validate import validate
from torchcts.releases import ReleaseSnapshot, load_snapshot, write_snapshot


def test_stored_snapshot_is_the_newest_validated_release_and_names_its_news():
    snap = load_snapshot()
    assert snap.torch == fmt(MAX_VALIDATED_TORCH) == "2.15.0"
    assert "bcomplex32" in snap.dtypes and {"linalg.polar", "linalg.matrix_sqrth"} <= set(snap.opinfos)
    assert {"aten::_scaled_addmm", "aten::_philox_randint"} <= set(snap.aten) and "aten::cholesky" not in snap.aten
    assert len(snap.aten) > 2000 and len(snap.opinfos) > 600


@pytest.fixture(scope="module")
def installed() -> ReleaseSnapshot:
    return installed_snapshot()


def test_diff_lists_every_change_and_what_covers_each_addition(installed):
    """An older snapshot lacking abs (aten and OpInfo), an overload no case names and a dtype, and
    naming one op the installed torch lacks: each addition is listed with its coverage, the uncovered
    one included (listed, never silently absent), the removal too."""
    ops = {op_key(op): op for op in op_db()}
    cases = op_cases(ops["abs"])
    uncovered = next(n for n in installed.aten if n.startswith("aten::_") and n.endswith(".out"))
    new_dtype = next(d for d in installed.dtypes if d not in DTYPES)
    old = ReleaseSnapshot("2.0.0", tuple(sorted({*installed.aten, "aten::gone_op"} - {"aten::abs", uncovered})),
                          tuple(o for o in installed.opinfos if o != "abs"),
                          tuple(d for d in installed.dtypes if d not in ("float32", new_dtype)))
    changes = {(c.kind, c.name): c for c in diff(old, installed, cases)}
    assert set(changes) == {("aten", "aten::abs"), ("aten", uncovered), ("opinfo", "abs"), ("dtype", "float32"),
                            ("dtype", new_dtype), ("aten", "aten::gone_op")}
    assert changes["aten", "aten::abs"].covered and "opinfo/abs/" in changes["aten", "aten::abs"].how
    assert not changes["aten", uncovered].covered and changes["aten", uncovered].how == "no case names it"
    assert changes["opinfo", "abs"].covered and "opinfo cases run it" in changes["opinfo", "abs"].how
    assert changes["dtype", "float32"].covered
    assert changes["dtype", new_dtype].how.startswith("claimable in a manifest")  # the torch has it
    assert changes["aten", "aten::gone_op"].change == "removed"
    summary = summarize(old, installed, list(changes.values()))
    assert summary["counts"]["aten"] == {"added": 2, "added_covered": 1, "removed": 1}
    page = render_markdown(summary)
    assert "## Added, not covered (2)" in page and f"`{uncovered}`: no case names it" in page


def test_opinfo_whose_cases_are_all_not_applicable_is_not_covered(installed):
    ops = {op_key(op): op for op in op_db()}
    cases = [c for c in op_cases(ops["abs"]) if c.not_applicable]
    old = ReleaseSnapshot("2.0.0", installed.aten, tuple(o for o in installed.opinfos if o != "abs"), installed.dtypes)
    (change,) = [c for c in diff(old, installed, cases) if c.kind == "opinfo"]
    assert not change.covered and change.how.startswith("every case not_applicable: abs is not supported")


def test_snapshot_round_trips_byte_identically(tmp_path):
    snap = ReleaseSnapshot("9.9.0", ("aten::a", "aten::b"), ("a",), ("float32",))
    path = write_snapshot(snap, tmp_path)
    first = path.read_bytes()
    assert load_snapshot(path) == snap and write_snapshot(snap, tmp_path).read_bytes() == first


def test_cli_release_diff(tmp_path, cli, capsys, installed):
    old = ReleaseSnapshot("2.0.0", tuple(n for n in installed.aten if n != "aten::zeros"), installed.opinfos,
                          installed.dtypes)
    path = write_snapshot(old, tmp_path)
    assert cli(["coverage", "release-diff", "--snapshot", str(path), "--suite", "core"]) == 2
    assert "unknown suite 'core' for --suite" in capsys.readouterr().err
    assert cli(["coverage", "release-diff", "--snapshot", str(path), "--suite", "operators", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["installed"] == torch.__version__.split("+")[0] and summary["validated"] == "2.0.0"
    assert [c["name"] for c in summary["changes"]] == ["aten::zeros"] and summary["changes"][0]["covered"]
    (tmp_path / "bad.json.gz").write_bytes(b"not gzip")
    assert cli(["coverage", "release-diff", "--snapshot", str(tmp_path / "bad.json.gz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read the release snapshot" in err[0]


def test_a_dtype_the_installed_torch_has_is_claimable_and_unknown_names_are_not():
    """issue 49: torch.bcomplex32 (2.14) must be claimable the day it ships: the dtypes of the newest
    validated release (its snapshot, read without torch so a typo is reported before torch's import)
    and the loaded torch's own are claimable; a name neither has stays a usage error."""
    extra = sorted(release_dtypes())
    assert extra and not set(extra) & set(DTYPES)
    if hasattr(torch, "bcomplex32"):
        assert "bcomplex32" in extra
    name = "bcomplex32" if "bcomplex32" in extra else extra[0]
    raw = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True, name: True},
           "capabilities": dict.fromkeys(("inference", "training", "rng", "device_api", "multi_device"), False)}
    manifest, problems = validate(raw)
    assert not problems and claimed_dtypes(manifest) == ["float32", name]
    ok, value = literal_manifest(f"import torch\nmanifest = {{'supported_dtypes': {{torch.{name}: True}}}}\n")
    assert ok and str(next(iter(value["supported_dtypes"]))) == f"torch.{name}"
    _, problems = validate({**raw, "supported_dtypes": {"bcomplex64": True}})
    assert problems and "unknown dtype 'bcomplex64'" in problems[0]


def test_opinfo_declaring_a_dtype_newer_than_dtypes_gets_its_cases():
    """A dtype an OpInfo declares beyond DTYPES is run, not silently absent (2.15's `to` declares bcomplex32)."""
    declaring = [(op, str(d).removeprefix("torch.")) for op in op_db() for d in op.supported_dtypes("cpu")
                 if str(d).removeprefix("torch.") not in DTYPES]
    if not declaring:
        pytest.skip(f"no OpInfo of torch {torch.__version__} declares a dtype beyond DTYPES (2.15's `to` does)")
    op, dtype = declaring[0]
    ids = [c.id for c in op_cases(op)]
    assert f"opinfo/{op_key(op)}/{dtype}/forward" in ids


def test_every_complex_dtype_narrower_than_complex64_is_compared_not_an_error():
    """2.14's bcomplex32 has no CPU `equal`: the comparison widens it as it does chalf, and still tells
    a wrong value from a right one (a claimed bcomplex32 was an error on a correct backend)."""
    from torchcts.oracle.compare import find_mismatch
    from torchcts.oracle.tolerances import Tolerance

    dtypes = [d for d in (torch.complex32, getattr(torch, "bcomplex32", None)) if d is not None]
    for dt in dtypes:
        right = torch.tensor([1 + 2j, -0.5j], dtype=torch.complex64).to(dt)
        wrong = torch.tensor([1 + 3j, -0.5j], dtype=torch.complex64).to(dt)
        assert find_mismatch(right.clone(), right, Tolerance(1e-3, 1e-3)) is None
        m = find_mismatch(wrong, right, Tolerance(1e-3, 1e-3))
        assert m is not None and m.first_index == [0]
