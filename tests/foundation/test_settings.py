"""torchcts/settings.py: the one reader of TorchCTS's environment variables (docs/settings.md)."""

from __future__ import annotations

import ast
import functools
import io
import os
import re
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

import pytest

import torchcts
from torchcts import settings
from torchcts.errors import ExitCode, UsageError
from torchcts.settings import Settings

PACKAGE = Path(torchcts.__file__).parent
DOC = PACKAGE.parent / "docs" / "settings.md"
ENV_NAMES = {f.metadata["env"] for f in fields(Settings)}

# Literal variable names outside settings.py, each with why it is not a read of a setting.
ALLOWED_LITERALS = {
    ("workers/zygote/keys.py", "CI"): "the warm server's key names the variables imports read (PyTorch's testing "
    "modules read CI); the server cannot import torchcts",
}


def test_the_table_lists_exactly_the_fields() -> None:
    rows = re.findall(r"^\| `([A-Z_]+)` \| `([a-z_]+)` \|", DOC.read_text(encoding="utf-8"), re.M)
    assert sorted(rows) == sorted((f.metadata["env"], f.name) for f in fields(Settings))


def test_every_field_has_a_meaning_and_a_parser() -> None:
    for f in fields(Settings):
        assert f.metadata["meaning"] and callable(f.metadata["parse"]), f.name
        assert f.metadata["env"] == "CI" or f.metadata["env"] == f"TORCHCTS_{f.name.upper()}", f.name


def test_an_empty_environment_gives_the_defaults() -> None:
    s = Settings.from_env({})
    assert s == Settings()
    assert (s.ci, s.warm, s.workers, s.no_cache, s.observe_dispatch, s.sim_decomp) == (
        False,
        None,
        None,
        False,
        True,
        "table",
    )
    assert Settings.from_env({"TORCHCTS_WORKERS": "  ", "CI": ""}) == Settings()  # blank is unset


def test_values_are_parsed_into_their_types() -> None:
    s = Settings.from_env(
        {
            "CI": "true",
            "TORCHCTS_WARM": "off",
            "TORCHCTS_WARM_DIR": "/w",
            "TORCHCTS_WORKERS": "3",
            "TORCHCTS_THREADS": "2",
            "TORCHCTS_CACHE_DIR": "/c",
            "TORCHCTS_NO_CACHE": "1",
            "TORCHCTS_EXTRA_SUITES": "planted=helpers.planted, x = m.y",
            "TORCHCTS_OBSERVE_DISPATCH": "0",
            "TORCHCTS_COMPILE_BACKEND": "aot_eager",
            "TORCHCTS_SHARD_COUNT": "4",
            "TORCHCTS_SIM_FAULT": "a, b,",
            "TORCHCTS_SIM_DECOMP": "composite",
        }
    )
    assert s == Settings(
        ci=True,
        warm=False,
        warm_dir=Path("/w"),
        workers=3,
        threads=2,
        cache_dir=Path("/c"),
        no_cache=True,
        extra_suites={"planted": "helpers.planted", "x": "m.y"},
        observe_dispatch=False,
        compile_backend="aot_eager",
        shard_count=4,
        sim_fault=("a", "b"),
        sim_decomp="composite",
    )
    assert Settings.from_env({"TORCHCTS_WORKERS": "AUTO"}).workers == "auto"  # xdist's own word
    assert Settings.from_env({"TORCHCTS_WARM": "Yes"}).warm is True


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TORCHCTS_WORKERS", "abc"),
        ("TORCHCTS_WORKERS", "-1"),
        ("TORCHCTS_WARM", "maybe"),
        ("TORCHCTS_NO_CACHE", "please"),
        ("TORCHCTS_THREADS", "0"),
        ("TORCHCTS_SHARD_COUNT", "x"),
        ("TORCHCTS_EXTRA_SUITES", "planted"),
        ("TORCHCTS_SIM_DECOMP", "fast"),
        ("TORCHCTS_OBSERVE_DISPATCH", "2"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable_and_the_fix(name: str, value: str) -> None:
    with pytest.raises(UsageError) as info:
        Settings.from_env({name: value})
    text = str(info.value)
    assert name in text and "\n" not in text
    assert re.search(r"set it|use one of|write e\.g\.", text), text


def test_the_cli_stops_on_a_bad_value_with_exit_2(monkeypatch, capsys, cli) -> None:
    monkeypatch.setenv("TORCHCTS_WORKERS", "abc")
    assert cli(["backends"]) == ExitCode.USAGE
    err = capsys.readouterr().err.strip()
    assert err.startswith("torchcts: error: TORCHCTS_WORKERS='abc'") and "\n" not in err


def test_a_process_reads_once_until_reload(monkeypatch) -> None:
    monkeypatch.setitem(os.environ, "TORCHCTS_WORKERS", "3")  # os.environ itself: no reload
    settings.reload()
    assert settings.current().workers == 3
    monkeypatch.setitem(os.environ, "TORCHCTS_WORKERS", "5")
    assert settings.current().workers == 3  # kept: one configuration for the whole process
    assert settings.current() is settings.current()
    settings.reload()
    assert settings.current().workers == 5


def test_of_parses_another_environment_and_keeps_this_ones(monkeypatch) -> None:
    monkeypatch.setitem(os.environ, "TORCHCTS_THREADS", "2")
    settings.reload()
    assert settings.current().threads == 2
    assert settings.of({"TORCHCTS_THREADS": "7"}).threads == 7  # e.g. the environment a worker gets
    monkeypatch.setitem(os.environ, "TORCHCTS_THREADS", "9")
    assert settings.of(None).threads == settings.of(os.environ).threads == 2


class _Stdin(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_one_ci_decision_for_prompts_device_and_warm_workers(monkeypatch) -> None:
    from torchcts.cli.common import non_interactive
    from torchcts.workers.warm import wanted

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TORCHCTS_WARM", raising=False)
    monkeypatch.setattr(sys, "stdin", _Stdin(True))
    assert settings.interactive() and not non_interactive() and wanted(None)
    monkeypatch.setenv("CI", "1")
    assert not settings.interactive() and non_interactive() and not wanted(None)
    monkeypatch.setenv("TORCHCTS_WARM", "1")
    assert wanted(None) and not wanted(False)  # the variable forces, the flag wins
    monkeypatch.delenv("CI")
    monkeypatch.setattr(sys, "stdin", _Stdin(False))
    assert not settings.interactive() and non_interactive()
    monkeypatch.setattr(sys, "stdin", None)  # no stdin at all: not a person at a terminal
    assert not settings.interactive()


def test_sim_decomp_modes_are_the_sims() -> None:
    """settings.py (layer 1) cannot import the sim; its mode names are sim/decomp.py's MODES keys."""
    tree = ast.parse((PACKAGE / "sim" / "decomp.py").read_text(encoding="utf-8"))
    modes = next(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "MODES"
    )
    assert tuple(k.value for k in modes.keys) == settings.SIM_DECOMP_MODES


# --- no other module reads the environment's settings ---


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Module-level NAME = "TORCHCTS_X" or NAME = settings.env_name("x"): NAME -> the variable; and the
    names it imports from the package's modules that are such aliases there (`from m import ENV`,
    `m.ENV` after `from torchcts.engine import m`)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = _variable(node.value, {})
            if name:
                out[node.targets[0].id] = name
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torchcts"):
            for a in node.names:
                there = _module_aliases(node.module)
                if a.name in there:
                    out[a.asname or a.name] = there[a.name]
                for attr, name in _module_aliases(f"{node.module}.{a.name}").items():
                    out[f"{a.asname or a.name}.{attr}"] = name
    return out


@functools.cache
def _module_aliases(module: str) -> dict[str, str]:
    rel = Path(*module.split(".")[1:])
    path = next(
        (p for p in ((PACKAGE / rel).with_suffix(".py"), PACKAGE / rel / "__init__.py") if p.is_file()), None
    )
    if path is None or path.name == "settings.py":
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        t.id: name
        for node in tree.body
        if isinstance(node, ast.Assign) and len(node.targets) == 1
        for t in node.targets
        if isinstance(t, ast.Name) and (name := _variable(node.value, {}))
    }


def _variable(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The settings variable an expression names, or None."""
    if isinstance(node, ast.Constant) and node.value in ENV_NAMES:
        return node.value
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return aliases.get(f"{node.value.id}.{node.attr}")
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "env_name":
        arg = node.args[0] if node.args else None
        return settings.env_name(arg.value) if isinstance(arg, ast.Constant) else "?"
    return None


def environment_reads(source: str, rel: str) -> list[str]:
    """Reads of a setting's variable (os.environ.get/[...], os.getenv, any mapping's .get) and literal
    TORCHCTS_* or CI names in one module's source; writes (exporting to a child) are not reads."""
    tree = ast.parse(source)
    skip, aliases, found = _docstrings(tree), _aliases(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if (
                re.fullmatch(r"TORCHCTS_[A-Z0-9_]+|CI", node.value)
                and (rel, node.value) not in ALLOWED_LITERALS
            ):
                found.append(f"{rel}:{node.lineno}: the name {node.value!r} (declare it in settings.py)")
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "get",
            "getenv",
        ):
            name = _variable(node.args[0], aliases) if node.args else None
            if name:
                found.append(f"{rel}:{node.lineno}: reads {name} (use settings.current())")
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            name = _variable(node.slice, aliases)
            if name:
                found.append(f"{rel}:{node.lineno}: reads {name} (use settings.current())")
    return found


def test_no_module_but_settings_reads_a_setting() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel != "settings.py":
            found += environment_reads(path.read_text(encoding="utf-8"), rel)
    assert found == []


def test_the_allowed_literals_still_exist() -> None:
    for rel, name in ALLOWED_LITERALS:
        assert repr(name) in (PACKAGE / rel).read_text(encoding="utf-8").replace('"', "'"), (
            f"drop {rel}: {name}"
        )


def test_the_grep_sees_every_kind_of_read() -> None:
    reads = [
        'import os\nx = os.environ.get("TORCHCTS_WORKERS")',
        'import os\nx = os.getenv("CI")',
        'import os\nx = os.environ["TORCHCTS_NO_CACHE"]',
        'import os\nENV = "TORCHCTS_WARM"\ndef f(env):\n    return env.get(ENV, "")',
        'import os\nfrom torchcts import settings\nV = settings.env_name("threads")\nx = os.environ.get(V)',
        'import os\nx = os.environ.get("TORCHCTS_SOMETHING_NEW")',
        "import os\nfrom torchcts.workers.warm import ENV\nx = os.environ.get(ENV)",
        "import os\nfrom torchcts.workers import warm\nx = os.environ[warm.ENV]",
    ]
    for source in reads:
        assert environment_reads(source, "m.py") != [], source
    writes = [
        'import os\nfrom torchcts import settings\nV = settings.env_name("threads")\nos.environ[V] = "2"',
        '"""Reads TORCHCTS_WARM."""\nimport os\nx = os.environ.get("HOME")',
        "from torchcts import settings\nx = settings.current().workers",
    ]
    for source in writes:
        assert environment_reads(source, "m.py") == [], source


# --- default folders: computed in settings.py only ---

# What names a default folder's ingredient outside settings.py, each with why it is not one.
FOLDER_EXCEPTIONS = {
    ("results/records/scrub.py", "gettempdir"): "the scrubber redacts the temporary folder from what it writes",
    ("results/records/scrub.py", "expanduser"): "the scrubber redacts the home folder's name",
    ("workers/zygote/keys.py", "XDG_CACHE_HOME"): "the warm server's key names the variables imports read; the "
    "server cannot import torchcts",
}
FOLDER_VARIABLES = re.compile(r"XDG_[A-Z_]+|TMPDIR|TORCH_EXTENSIONS_DIR")
FOLDER_CALLS = ("expanduser", "home", "gettempdir", "gettempdirb")
FOLDER_DEFAULTS = ("results", "repro")


def default_folders(source: str, rel: str) -> list[str]:
    """Where one module computes a default folder: an XDG (or temporary, or extensions) variable's
    name, the home or temporary folder, or the results/repro default as a Path or a flag's default."""
    tree = ast.parse(source)
    skip, found = _docstrings(tree), []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            what = node.value if FOLDER_VARIABLES.fullmatch(node.value) else None
        elif isinstance(node, ast.Attribute) and node.attr in FOLDER_CALLS:
            what = node.attr
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Path" and node.args:
            arg = node.args[0]
            what = f"Path({arg.value!r})" if isinstance(arg, ast.Constant) and arg.value in FOLDER_DEFAULTS else None
        elif isinstance(node, ast.keyword) and node.arg == "default" and isinstance(node.value, ast.Constant):
            what = f"default={node.value.value!r}" if node.value.value in FOLDER_DEFAULTS else None
        if what and (rel, what) not in FOLDER_EXCEPTIONS:
            found.append(f"{rel}:{node.lineno}: {what} (compute the folder in settings.py and ask there)")
    return found


def test_no_module_but_settings_computes_a_default_folder() -> None:
    modules = {path.relative_to(PACKAGE).as_posix(): path for path in sorted(PACKAGE.rglob("*.py"))}
    modules.pop("settings.py")
    assert [f for rel, path in modules.items() for f in default_folders(path.read_text(encoding="utf-8"), rel)] == []


@pytest.mark.parametrize("source", [
    'import os\nx = os.environ.get("XDG_CACHE_HOME")',
    'import os\nx = os.path.join(os.path.expanduser("~"), ".cache")',
    "import tempfile\nx = tempfile.gettempdir()",
    'from pathlib import Path\ndef f(root: Path = Path("results")): ...',
    'def configure(p):\n    p.add_argument("--results-dir", default="results")',
])
def test_the_folder_check_sees_each_kind(source: str) -> None:
    assert default_folders(source, "m.py") != []


def test_the_folder_check_passes_a_docstring_and_its_exceptions_still_exist() -> None:
    assert default_folders('"""Under $XDG_CACHE_HOME."""\nfrom torchcts import settings\nx = settings.cache_folder()',
                           "m.py") == []
    for (rel, what), why in FOLDER_EXCEPTIONS.items():
        assert any(f.split(": ", 1)[1].startswith(what) for f in default_folders((PACKAGE / rel).read_text(), "x")), why


def test_default_folders(monkeypatch, tmp_path) -> None:
    for name in ("TORCHCTS_CACHE_DIR", "TORCHCTS_WARM_DIR", "TORCHCTS_VENV_ROOT", "XDG_CACHE_HOME", "TORCH_EXTENSIONS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    settings.reload()
    tmp = Path(tempfile.gettempdir())
    assert settings.cache_folder() == tmp_path / "home" / ".cache" / "torchcts"
    assert settings.torch_extensions_folder() == tmp_path / "home" / ".cache" / "torch_extensions"
    assert settings.venv_folder() == tmp / "torchcts-venvs"
    assert (settings.RESULTS_DIR, settings.REPRO_DIR) == ("results", "repro")
    runtime = tmp_path / "run"
    assert settings.warm_folder({"XDG_RUNTIME_DIR": str(runtime)}) == tmp / f"torchcts-warm-{os.getuid()}"  # absent
    runtime.mkdir()
    assert settings.warm_folder({"XDG_RUNTIME_DIR": str(runtime)}) == runtime / "torchcts-warm"
    assert settings.warm_folder({"XDG_RUNTIME_DIR": str(runtime), "TORCHCTS_WARM_DIR": "/w"}) == Path("/w")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    monkeypatch.setenv("TORCHCTS_VENV_ROOT", str(tmp_path / "venvs"))
    settings.reload()
    assert settings.cache_folder() == tmp_path / "xdg" / "torchcts"
    assert settings.torch_extensions_folder() == tmp_path / "ext"
    assert settings.venv_folder() == tmp_path / "venvs"
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path / "c"))
    settings.reload()
    assert settings.cache_folder() == tmp_path / "c"
    settings.reload()
