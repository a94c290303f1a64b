"""`torchcts coverage inventory|report` through the CLI (in-process: torch is already imported)."""

from __future__ import annotations

import json


def test_inventory_json_lists_kernels_and_cases(cli, workdir, capsys):
    assert cli(["coverage", "inventory", "--suite", "operators", "--json", "--op", "aten::add*"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in data["surfaces"]}
    assert data["dispatch_key"] == "CPU" and data["build"]["torch"]
    add = rows["aten::add.Tensor"]
    assert add["kind"] == "functional" and add["kernel"] == "native" and "CPU" in add["keys"]
    assert "operators/elementwise/add/float32" in add["cases"]
    assert rows["aten::add.out"]["kind"] == "out"
    # aten::add covers add's non-out overloads only: add.out is covered by the out= cases alone
    assert all("/out/" in c for c in rows["aten::add.out"]["cases"])
    assert all(name.startswith("aten::add") for name in rows)


def test_inventory_text_filters_and_device_key(cli, workdir, capsys):
    assert cli(["coverage", "inventory", "--suite", "operators", "--device", "cuda", "--kind", "factory",
                "--uncovered"]) == 0
    out = capsys.readouterr().out
    assert "key CUDA" in out.splitlines()[0]
    body = out.splitlines()[1:]
    assert body and all(" factory " in line and " 0 cases" in line for line in body)
    assert not any(line.startswith("aten::zeros ") for line in body)  # covered by operators/core/zeros


def test_inventory_bad_kind_and_device_are_usage_errors(cli, workdir, capsys):
    assert cli(["coverage", "inventory", "--suite", "operators", "--kind", "nonsense"]) == 2
    for name in ("rocm", "hip"):
        assert cli(["coverage", "inventory", "--suite", "operators", "--device", name]) == 2
        assert f"'{name}' is not a device" in capsys.readouterr().err


def test_report_markdown_and_json(cli, workdir, capsys):
    assert cli(["coverage", "report", "--suite", "operators", "--top", "5", "--output", "cov.md"]) == 0
    md = (workdir / "cov.md").read_text()
    assert "## By surface kind" in md and "| functional |" in md and "| foreach |" in md
    assert cli(["coverage", "report", "--suite", "operators", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["covered"] >= 10
    assert data["by_kind"]["factory"]["covered"] >= 3
    fams = [f["family"] for f in data["largest_uncovered_families"]]
    assert "foreach" in fams and "add" not in fams[:3]
    counts = [f["uncovered"] for f in data["largest_uncovered_families"]]
    assert counts == sorted(counts, reverse=True)


def test_manifest_backend_is_imported_before_counting_with_and_without_a_run(cli, workdir, capsys):
    """--manifest imports its backend_import first (PrivateUse1 kernels register on import): a module
    that does not import is the user's error, for the static report, the inventory and `report RUN`."""
    from helpers.crafted import tiny_coverage_run
    from helpers.manifests import good_py

    (workdir / "m.py").write_text(good_py(backend_import='"no_such_backend_module"'))
    run = tiny_coverage_run(workdir)
    for argv in (["report", "--suite", "operators"], ["inventory", "--suite", "operators"], ["report", str(run)]):
        assert cli(["coverage", *argv, "--manifest", "m.py"]) == 2, argv
        assert "backend_import 'no_such_backend_module' failed to import" in capsys.readouterr().err, argv


def test_observed_by_kind_table_names_each_column_once():
    """issue 30: the by-kind table of `coverage report RUN` listed "observed" twice."""
    from torchcts.coverage.observed import render_markdown

    summary = {
        "device": "cpu", "dispatch_key": "CPU", "device_registered": True,
        "headline": {"implementable": 4, "observed": 1, "percent": 25.0, "excluded": 0, "composite_implicit": 0,
                     "missing": 0, "pending": 0, "surfaces": 10, "observed_all": 3},
        "cases": {"observed": 2, "unobserved": {}, "malformed": 0},
        "by_kind": {"functional": {"surfaces": 10, "observed": 3, "implementable": 4, "implementable_observed": 1,
                                   "percent": 25.0}},
        "by_kernel": {}, "exclusions": [], "largest_unobserved_families": [], "unobserved": [],
    }
    lines = render_markdown(summary, "r").splitlines()
    header = lines[lines.index("## By surface kind") + 2]
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert len(columns) == len(set(columns)) == 6
    assert columns == ["kind", "surfaces", "surfaces observed", "implementable", "implementable observed",
                       "% of implementable"]
    assert lines[lines.index("## By surface kind") + 4] == "| functional | 10 | 3 | 4 | 1 | 25.0 |"
