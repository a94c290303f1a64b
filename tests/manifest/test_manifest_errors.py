"""Manifests: every kind of malformed manifest gives its clear message with the key path and exit 2."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers.manifests import GOOD_CAPS, good_py, py_manifest

from torchcts.manifest.load import load_manifest
from torchcts.manifest.schema import claimed_dtypes
from torchcts.manifest.templates import TEMPLATES

# (file name, content, substrings every one of which must appear in stderr)
MALFORMED = {
    "python_syntax_error": ("manifest.py", "manifest = {\n  'device_name': 'cpu',,\n}\n",
                            ["manifest.py", "Python syntax error at line 2", "fix the syntax"]),
    "not_a_dict": ("manifest.py", "manifest = ['cpu']\n", ["the manifest must be a dict, got list"]),
    "no_manifest_variable": ("manifest.py", "claims = {}\n", ["no variable named 'manifest'"]),
    "missing_required_key": ("manifest.py", good_py(supported_dtypes=None),
                             ["missing required key 'supported_dtypes'"]),
    "unknown_key": ("manifest.py", good_py(semantic_levle="2"),
                    ["unknown key 'semantic_levle'", "did you mean 'semantic_level'?"]),
    "unknown_capability": ("manifest.py", good_py(capabilities=GOOD_CAPS[:-1] + ', "trainig": True}'),
                           ["unknown capability 'trainig' under capabilities: did you mean 'training'?"]),
    "dtype_typo_python": ("manifest.py", good_py(supported_dtypes="{torch.flaot32: True}"),
                          ["unknown dtype 'torch.flaot32' at line", "did you mean 'torch.float32'?"]),
    "dtype_typo_string": ("manifest.py", good_py(supported_dtypes='{"flot16": True}'),
                          ["unknown dtype 'flot16' under supported_dtypes: did you mean 'float16'?"]),
    "wrong_value_types": ("manifest.py", good_py(device_count='"two"', supported_dtypes='{torch.float32: "yes"}'),
                          ["expected a positive integer, got 'two' under device_count",
                           "expected True or False, got 'yes' under supported_dtypes.float32"]),
    "bad_semantic_level": ("manifest.py", good_py(semantic_level="9"),
                           ["expected an integer 1..8, got 9 under semantic_level"]),
    "manifest_code_raises": ("manifest.py", py_manifest("manifest = {}\nraise RuntimeError('boom')\n"),
                             ["running the manifest raised RuntimeError at line 4: boom"]),
    "manifest_code_exits": ("manifest.py", "import sys\nsys.exit(4)\n",
                            ["running the manifest raised SystemExit at line 2: 4"]),
    "not_utf8": ("manifest.py", "manifest = {'device_name': '\udcff'}\n", ["cannot read the file", "UTF-8"]),
    "toml_syntax_error": ("torchcts.toml", "manifest_version = 1\ndevice_name = 'cpu\n", ["TOML syntax error"]),
    "toml_bad_dtype": ("torchcts.toml", textwrap.dedent("""\
        manifest_version = 1
        device_name = "cpu"
        [supported_dtypes]
        float33 = true
        [capabilities]
        inference = true
        training = false
        rng = false
        device_api = false
        """), ["unknown dtype 'float33'", "missing capabilities ['multi_device']"]),
    "pyproject_unknown_key": ("pyproject.toml", textwrap.dedent("""\
        [project]
        name = "mybackend"
        [tool.torchcts]
        manifest_version = 1
        device_name = "cpu"
        supported_dtypes = {float32 = true}
        capabilities = {inference = true, training = false, rng = false, device_api = false, multi_device = false}
        seeds = 3
        """), ["pyproject.toml", "unknown key 'seeds': did you mean 'seed'?"]),
    "bad_expectation": ("manifest.py", good_py(expectations='[{"match": "x/*", "status": "skip"}]'),
                        ["status must be one of", "under expectations[0]", "missing 'reason'"]),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_manifest_is_usage_error(kind, workdir, cli, capsys):
    name, content, expected = MALFORMED[kind]
    (workdir / name).write_bytes(content.encode("utf-8", "surrogateescape"))
    assert cli(["check-manifest"]) == 2
    err = capsys.readouterr().err
    for text in expected:
        assert text in err, f"{text!r} not in {err!r}"
    assert "Traceback" not in err
    assert all(line.startswith("torchcts: error: ") for line in err.splitlines())


def test_check_manifest_lists_every_problem(workdir, cli, capsys):
    (workdir / "manifest.py").write_text(good_py(
        semantic_level="0", seed="-1", max_samples="0", colour='"red"',
        capabilities='{"inference": True, "trainig": True}',
    ))
    assert cli(["check-manifest", "manifest.py"]) == 2
    err = capsys.readouterr().err.splitlines()
    joined = "\n".join(err)
    for text in ("under semantic_level", "under seed", "under max_samples", "unknown key 'colour'",
                 "unknown capability 'trainig'", "missing capabilities"):
        assert text in joined
    assert len(err) >= 6


def test_backend_import_that_raises_is_one_line(workdir, cli, capsys, monkeypatch):
    (workdir / "broken_backend_mod.py").write_text("raise ImportError('libfoo.so: cannot open shared object')\n")
    monkeypatch.syspath_prepend(str(workdir))
    (workdir / "manifest.py").write_text(good_py(backend_import='"broken_backend_mod"'))
    assert cli(["check-manifest"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "backend_import 'broken_backend_mod' failed to import: ImportError: libfoo.so" in err[0]
    # --no-import checks the file alone
    assert cli(["check-manifest", "--no-import"]) == 0


def test_missing_backend_module_names_it(workdir, cli, capsys):
    (workdir / "manifest.py").write_text(good_py(backend_import='"no_such_backend_pkg"'))
    assert cli(["check-manifest"]) == 2
    err = capsys.readouterr().err
    assert "backend_import 'no_such_backend_pkg' failed to import: ModuleNotFoundError" in err


def test_no_manifest_and_missing_file(workdir, cli, capsys):
    assert cli(["check-manifest"]) == 2
    assert "no manifest found" in capsys.readouterr().err
    assert cli(["check-manifest", "nope.py"]) == 2
    assert "manifest not found: nope.py" in capsys.readouterr().err


def test_toml_manifest_loads_dtypes_as_strings(workdir):
    (workdir / "torchcts.toml").write_text(textwrap.dedent("""\
        manifest_version = 1
        device_name = "openreg"
        backend_import = "torch_openreg"
        semantic_level = 3
        [supported_dtypes]
        float32 = true
        half = true
        "torch.int64" = true
        bfloat16 = false
        [capabilities]
        inference = true
        training = false
        rng = true
        device_api = true
        multi_device = false
        [tolerance_overrides.elementwise]
        float16 = {atol = 0.01, rtol = 0.01}
        [resource_limits]
        max_tensor_mb = 64
        """))
    m = load_manifest()
    assert m.source == "torchcts.toml"
    assert m.supported_dtypes == {"float32": True, "float16": True, "int64": True, "bfloat16": False}
    assert claimed_dtypes(m) == ["int64", "float16", "float32"]
    assert m.backend_import == "torch_openreg" and m.semantic_level == 3
    assert m.tolerance_overrides == {"elementwise": {"float16": {"atol": 0.01, "rtol": 0.01}}}


def test_pyproject_tool_table_and_search_order(workdir):
    (workdir / "pyproject.toml").write_text(textwrap.dedent("""\
        [project]
        name = "x"
        [tool.torchcts]
        manifest_version = 1
        device_name = "cpu"
        supported_dtypes = {float64 = true}
        capabilities = {inference = true, training = false, rng = false, device_api = false, multi_device = false}
        """))
    assert load_manifest().supported_dtypes == {"float64": True}
    (workdir / "manifest.py").write_text(good_py())
    assert load_manifest().source == "manifest.py"  # manifest.py comes first


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_init_templates_pass_check_manifest(template, workdir, cli, capsys):
    assert cli(["init", "--template", template, "-o", f"{template}.py"]) == 0
    assert cli(["check-manifest", f"{template}.py"]) == 0
    m = load_manifest(Path(f"{template}.py"))
    assert m.device_name == "cpu" and m.semantic_level == TEMPLATES[template][0]
    assert set(claimed_dtypes(m)) == set(TEMPLATES[template][1])


def test_init_refuses_to_overwrite_without_force(workdir, cli, capsys):
    assert cli(["init"]) == 0
    (workdir / "manifest.py").write_text("# my edits\n" + (workdir / "manifest.py").read_text())
    assert cli(["init", "--template", "smoke"]) == 2
    assert "already exists: pass --force" in capsys.readouterr().err
    assert (workdir / "manifest.py").read_text().startswith("# my edits")
    assert cli(["init", "--template", "smoke", "--force"]) == 0
    assert "smoke template" in (workdir / "manifest.py").read_text()
