"""Runs of the suites on cpu under --validation, or with a planted fault importable from tests/helpers."""

from __future__ import annotations

import os
from pathlib import Path

from helpers.paths import HELPERS, TESTS
from helpers.runs import latest_run, records, run_cli
from torchcts.manifest.templates import validation_manifest


def write_manifest(root: Path, backend_import: str | None = None, **extra_caps: bool) -> None:
    """A cpu manifest with the validation claims (plus extra_caps) importing a planted fault."""
    m = validation_manifest()
    caps = {**m.capabilities, **extra_caps}
    text = (
        "manifest = {\n"
        "    'manifest_version': 1, 'device_name': 'cpu', 'semantic_level': 8,\n"
        f"    'backend_import': {backend_import!r},\n"
        f"    'supported_dtypes': {m.supported_dtypes!r},\n"
        f"    'capabilities': {caps!r},\n"
        f"    'resource_limits': {m.resource_limits!r},\n"
        "}\n"
    )
    (root / "manifest.py").write_text(text)


def helper_env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(HELPERS), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, **extra}


def by_id(run_dir: Path) -> dict[str, dict]:
    return {r["id"]: r for r in records(run_dir)}


def run_clean(root: Path, cases: tuple[str, ...]) -> dict[str, dict]:
    """Run exactly these cases under --validation in-process: the run exits 0 and each one passed.
    Their records by id."""
    args = [a for case in cases for a in ("--case", case)]
    r = run_cli("run", "--validation", *args, "--no-isolation", "--", "-q", "-p", "no:cacheprovider", cwd=root)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    recs = by_id(latest_run(root))
    assert {i: rec["status"] for i, rec in recs.items()} == dict.fromkeys(cases, "passed")
    return recs


PLANTED_ENV = {
    "TORCHCTS_EXTRA_SUITES": "planted=helpers.planted",
    "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]),
}
