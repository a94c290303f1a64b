"""Exit status per README.md (0 pass, 1 backend failure, 2 usage, 3 internal) and the version check."""

from __future__ import annotations

import os
import re

import pytest
import torch
from helpers.paths import HELPERS, REPO
from helpers.runs import latest_run, records, run_cli

from torchcts import compat
from torchcts.errors import ExitCode, UsageError

FAULTY_MANIFEST = """\
import torch

manifest = {
    "manifest_version": 1,
    "device_name": "cpu",
    "backend_import": "faulty_cpu_backend",
    "supported_dtypes": {torch.float32: True},
    "semantic_level": 1,
    "capabilities": {"inference": True, "training": False, "rng": False, "device_api": False,
                     "multi_device": False},
}
"""


def test_broken_backend_fails_the_run_with_exit_1(tmp_path):
    (tmp_path / "manifest.py").write_text(FAULTY_MANIFEST)
    env = {"PYTHONPATH": os.pathsep.join([str(HELPERS), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--device", "cpu", "--level-exact", "1", "--case", "operators/core/copy_roundtrip/*",
                "--", "-q", cwd=tmp_path, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    (rec,) = [x for x in records(latest_run(tmp_path)) if x["status"] != "not_claimed"]
    assert rec["id"] == "operators/core/copy_roundtrip/float32"
    assert rec["status"] == "failed" and rec["mismatch"]
    assert "torchcts run --device cpu" in rec["repro"]


def test_internal_error_exits_3(workdir, cli, capsys, monkeypatch):
    import torchcts.manifest.load as load

    def boom(*_args, **_kwargs):
        raise RuntimeError("planted bug in torchcts")

    monkeypatch.setattr(load, "load_manifest", boom)
    assert cli(["check-manifest"]) == 3
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: planted bug in torchcts (please report it)" in err


def test_exit_statuses_are_one_int_enum() -> None:
    """README's statuses are the members of one IntEnum, as pytest's ExitCode: each is the int a shell
    sees and prints as that number; no module keeps a constant of its own."""
    assert {c.name: c for c in ExitCode} == {"OK": 0, "FAILURES": 1, "USAGE": 2, "INTERNAL": 3, "INTERRUPTED": 130}
    assert [str(c) for c in ExitCode] == [f"{c}" for c in ExitCode] == ["0", "1", "2", "3", "130"]
    package = REPO / "torchcts"
    constants = re.compile(r"\bEXIT_(OK|FAILURES|USAGE|INTERNAL|INTERRUPTED)\b")
    assert [p.name for p in package.rglob("*.py") if constants.search(p.read_text(encoding="utf-8"))] == []


def test_usage_errors_exit_2(workdir, cli, capsys):
    assert cli(["run", "--device", "cpu", "--level", "9"]) == 2
    assert "--level 9 is out of range" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli(["run", "--no-such-flag"])
    assert exc.value.code == 2


@pytest.mark.parametrize("version", ["2.7.0", "2.7.1+cpu", "2.10.0", "2.13.0", "2.14.1+cu130", "2.15.0+cu132"])
def test_validated_versions_are_silent(version, capsys):
    assert compat.check_torch_version(version) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("version", ["2.6.0", "2.5.1+cu124", "1.13.1"])
def test_older_than_27_is_usage_error(version):
    with pytest.raises(UsageError, match=f"PyTorch {version.replace('+', '.')[:3]}"):
        compat.check_torch_version(version)


@pytest.mark.parametrize("version", ["2.16.0", "2.16.0.dev20270101", "3.0.0"])
def test_newer_than_validated_is_data_never_a_stderr_line(version, capsys):
    """issue 49: a warning on stderr made every one-line error two; the drift is a sentence the run
    records (compat.build_info), and a patch release of the newest validated line is inside the range."""
    assert compat.check_torch_version(version) is None
    assert capsys.readouterr().err == ""
    assert f"PyTorch {version} is newer than the validated range 2.7.0-{compat.fmt(compat.MAX_VALIDATED_TORCH)}" \
        in compat.drift(version)
    assert compat.drift("2.15.1+cu132") is None and compat.drift("2.14.1") is None


def test_newer_torch_is_said_once_in_run_json_summary_and_report_and_errors_stay_one_line(
        workdir, cli, capsys, monkeypatch):
    from torchcts.engine.execute import opening_facts
    from torchcts.model.run import Run
    from torchcts.results.reports.html import render_html
    from torchcts.results.reports.summary import render_markdown

    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(torch, "__version__", "2.16.0")
    assert cli(["run", "--device", "cpu", "--level", "9"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert cli(["show-skips", "--device", "cpu", "--level", "1"]) == 0
    assert "validated range" not in capsys.readouterr().err
    facts = opening_facts([])
    assert "2.16.0 is newer than the validated range" in facts["torch"]["drift"]
    run = Run.from_json({"name": "r", "device": {"type": "cpu"}, **facts})
    assert run.torch_drift == facts["torch"]["drift"]
    summary, html = render_markdown(run, []), render_html(run, [])
    assert summary.count("newer than the validated range") == 1 and html.count("newer than the validated range") == 1
    monkeypatch.setattr(torch, "__version__", "2.15.0")
    inside = Run.from_json({"name": "r", **opening_facts([])})
    assert inside.torch_drift is None and "validated range" not in render_markdown(inside, [])


@pytest.mark.parametrize(("fields", "family"), [
    (("2.13.0+cpu", None, None, None, "Linux"), "cpu"),
    (("2.13.0+cu130", "13.0", None, None, "Linux"), "cu130"),
    (("2.8.0", "12.8", None, None, "Linux"), "cu128"),
    (("2.9.0+rocm6.4", None, "6.4.43482-0", None, "Linux"), "rocm6.4"),
    (("2.8.0+xpu", None, None, "20250101", "Linux"), "xpu"),
    (("2.13.0", None, None, None, "Darwin"), "default"),
])
def test_build_family(fields, family):
    assert compat.build_family(*fields) == family


def test_output_piped_into_head_is_not_an_internal_error(monkeypatch, capsys):
    """`torchcts show-skips --details | head` closes the pipe: exit 0, no traceback (BrokenPipeError
    is an OSError, so its handler must come first)."""
    import sys

    from torchcts.cli import backends
    from torchcts.cli.main import main

    def closed_pipe(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(backends, "main", closed_pipe)
    monkeypatch.setattr(sys, "stderr", sys.stderr)  # main() silences stderr; put it back afterwards
    assert main(["backends"]) == 0
    assert "internal error" not in capsys.readouterr().err
