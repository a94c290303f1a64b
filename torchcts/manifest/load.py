"""Finding and reading a manifest: manifest.py, torchcts.toml or [tool.torchcts] in pyproject.toml."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from torchcts.errors import ManifestError, UsageError
from torchcts.manifest.literal import DtypeTypo, literal_manifest
from torchcts.manifest.validate import validate
from torchcts.model.manifest import Manifest
from torchcts.untrusted import NotRegular, Unreadable, loads_toml, read_bounded, tomllib

SEARCH_ORDER = ("manifest.py", "torchcts.toml", "pyproject.toml")
# `--manifest torchcts:sim/manifest.py` names a manifest shipped inside the package (the sim's), so a
# printed command runs on any machine without naming where TorchCTS is installed (no absolute path).
PACKAGE_PREFIX = "torchcts:"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
_SCRUBBED_PACKAGE = "<torchcts>/torchcts/"  # results/records/scrub.py's label of the checkout, as an old run.json holds it


def manifest_file(value: str | Path) -> Path:
    """The file a `--manifest` value names: a path, or `torchcts:REL` inside the package."""
    text = str(value)
    if not text.startswith(PACKAGE_PREFIX):
        return Path(value)
    rel = Path(text[len(PACKAGE_PREFIX):])
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise UsageError(f"--manifest {text}: `{PACKAGE_PREFIX}` names a file inside the torchcts package, "
                         f"e.g. {PACKAGE_PREFIX}sim/manifest.py")
    return PACKAGE_DIR / rel


def portable_manifest(value: str | None) -> str | None:
    """`value` as a command can repeat it anywhere: a file inside the package (also as an old run.json
    wrote it, `<torchcts>/torchcts/...`) becomes `torchcts:REL`; anything else is returned unchanged."""
    if not value or value.startswith(PACKAGE_PREFIX):
        return value
    if value.startswith(_SCRUBBED_PACKAGE):
        return PACKAGE_PREFIX + value[len(_SCRUBBED_PACKAGE):]
    try:
        path = Path(os.path.abspath(value))
        inside = path.is_relative_to(PACKAGE_DIR) or path.resolve().is_relative_to(PACKAGE_DIR)
        rel = path.resolve().relative_to(PACKAGE_DIR) if inside else None
    except (OSError, ValueError):
        return value
    return PACKAGE_PREFIX + rel.as_posix() if rel is not None and rel.parts else value


def find_manifest(start: Path | None = None) -> Path | None:
    """The first manifest file in the working directory, in SEARCH_ORDER."""
    base = start or Path.cwd()
    for name in SEARCH_ORDER:
        path = base / name
        if not path.is_file():
            continue
        if name == "pyproject.toml" and "torchcts" not in _read_toml(path).get("tool", {}):
            continue
        return path
    return None


def display_path(path: Path) -> str:
    """A path as shown to users and written to results: relative when under the cwd, else its name."""
    try:
        return (os.path.relpath(path.resolve(), Path.cwd().resolve()) if path.resolve().is_relative_to(Path.cwd().resolve())
                else path.name)
    except (OSError, ValueError):
        return path.name


def _read_text(path: Path) -> str:
    """The manifest's text: a regular file of at most untrusted.MAX_FILE bytes (a FIFO is refused
    before it blocks, a crafted 10 GB file before it is read)."""
    try:
        return read_bounded(path).decode("utf-8")
    except NotRegular:
        raise ManifestError(["not a regular file (a FIFO, a device or a folder): pass the manifest file itself"],
                            display_path(path)) from None
    except Unreadable as exc:
        raise ManifestError([f"{exc.msg.split(' is ')[-1]}: a manifest is a short text file"], display_path(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError([f"cannot read the file ({type(exc).__name__}): save it as UTF-8 text"],
                            display_path(path)) from None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return loads_toml(_read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError([f"TOML syntax error: {exc}; fix the file's syntax"], display_path(path)) from None
    except Unreadable as exc:
        raise ManifestError([f"{exc.msg}: a manifest is a flat table of claims"], display_path(path)) from None


def _read_python(path: Path) -> Any:
    source = _read_text(path)
    try:
        plain, value = literal_manifest(source)
    except DtypeTypo as typo:
        raise ManifestError([_dtype_problem(typo.name, f" at line {typo.lineno}")], display_path(path)) from None
    if plain:  # literals and torch dtypes only: the same value without importing torch
        return value
    namespace: dict[str, Any] = {"__file__": str(path), "__name__": "torchcts_manifest"}
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise ManifestError(
            [f"Python syntax error at line {exc.lineno}: {exc.msg}; fix the syntax"], display_path(path)
        ) from None
    try:
        with _no_process_exit():
            exec(code, namespace)  # noqa: S102 - the manifest is the user's own Python file
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any error in user code is a usage error
        raise ManifestError([_exec_problem(exc, str(path))], display_path(path)) from None
    if "manifest" not in namespace:
        raise ManifestError(["no variable named 'manifest': define manifest = {...}"], display_path(path))
    return namespace["manifest"]


class _ManifestExit(SystemExit):
    """os._exit() called by a manifest: it would end TorchCTS silently with the manifest's status."""


@contextlib.contextmanager
def _no_process_exit() -> Iterator[None]:
    """While a manifest runs, os._exit raises instead of ending the process (check-manifest and run
    must not exit 0 with no output because a manifest said so)."""
    real = os._exit

    def refuse(status: int) -> None:
        raise _ManifestExit(f"os._exit({status}) was called")

    os._exit = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


def _exec_problem(exc: BaseException, filename: str) -> str:
    """One line for an exception raised by a manifest's code: where, what, and the fix."""
    import traceback

    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    where = f" at line {lines[-1]}" if lines else ""
    if isinstance(exc, AttributeError) and type(getattr(exc, "obj", None)).__name__ == "module" and (
        getattr(exc.obj, "__name__", "") == "torch"
    ):
        return _dtype_problem(str(exc.name), where)
    return f"running the manifest raised {type(exc).__name__}{where}: {exc}; fix the manifest code"


def _dtype_problem(name: str, where: str) -> str:
    """`torch.<name>` is no dtype: the problem with the closest dtype."""
    from torchcts.manifest.schema import DTYPES
    from torchcts.manifest.validate import suggest

    return f"unknown dtype 'torch.{name}'{where}" + suggest(name, DTYPES, prefix="torch.")


def read_raw(path: Path) -> Any:
    """The raw manifest mapping from a .py or .toml file."""
    if not path.is_file():
        raise UsageError(f"manifest not found: {path.name}; pass --manifest PATH or run 'torchcts init'")
    if path.suffix == ".py":
        return _read_python(path)
    if path.suffix == ".toml":
        data = _read_toml(path)
        if path.name == "pyproject.toml":
            tool = data.get("tool", {})
            if "torchcts" not in tool:
                raise ManifestError(["no [tool.torchcts] table: add one or use torchcts.toml"], display_path(path))
            return tool["torchcts"]
        return data
    raise UsageError(f"unsupported manifest file '{path.name}': use a .py or .toml file")


def load_manifest(path: Path | str | None = None) -> Manifest:
    """Load and validate; raise ManifestError listing every problem."""
    if path is None:
        found = find_manifest()
        if found is None:
            raise UsageError(
                "no manifest found (manifest.py, torchcts.toml or [tool.torchcts] in pyproject.toml): "
                "run 'torchcts init' or pass --manifest PATH"
            )
        path = found
    path = manifest_file(path)
    raw = read_raw(path)
    manifest, problems = validate(raw, source=display_path(path))
    if problems:
        raise ManifestError(problems, display_path(path))
    assert manifest is not None
    return manifest
