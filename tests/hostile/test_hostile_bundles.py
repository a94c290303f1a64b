"""Issue 31, class 1: a repro bundle built from a crafted run folder runs nothing but torch and the
reader's backend: no module named by run.json, nothing placed in the bundle's folder, no pickled code.

Each bundle here is written by `torchcts repro` from a crafted folder and then executed as a reader
would (`python repro.py`), so the test shows what actually runs.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

from helpers.crafted import PWN, assert_nothing_ran, case_json, failed, fake_run

ADD = "operators/elementwise/add/float32"
# A module that, imported, leaves a mark: planted in the bundle and named by the crafted run.json.
PLANTED = f'import pathlib\npathlib.Path({PWN!r} + "-imported").write_text("1")\n'


def _crafted_run(workdir: Path, backend: str | None = None) -> Path:
    run_dir = fake_run(workdir, "r", [failed(ADD, message="m")], plan=[case_json(ADD)])
    if backend:
        spec = json.loads((run_dir / "run.json").read_text())
        spec["manifest"]["backend_import"] = backend
        (run_dir / "run.json").write_text(json.dumps(spec))
    return run_dir


def _run(script: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_module_named_by_run_json_and_planted_in_the_bundle_is_never_imported(workdir, cli):
    _crafted_run(workdir, backend="evil_backend")
    assert cli(["repro", ADD, "-o", "bundle"]) == 0
    bundle = workdir / "bundle"
    for name in ("evil_backend", "traceback", "faulthandler", "importlib"):  # what the script imports by name
        (bundle / f"{name}.py").write_text(PLANTED)
    proc = _run(bundle / "repro.py", workdir)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # cpu against cpu: the sample matches
    assert_nothing_ran(workdir)
    # it says what the run used and that it imports none unless told
    assert "the run imported the backend module 'evil_backend'" in proc.stdout


def test_the_reader_chooses_the_backend_and_is_told_before_the_import(workdir, cli):
    _crafted_run(workdir, backend="evil_backend")
    helpers = workdir / "mine"
    helpers.mkdir()
    (helpers / "my_backend.py").write_text('print("my_backend imported", flush=True)\n')
    assert cli(["repro", ADD, "-o", "bundle", "--import", "my_backend"]) == 0
    script = workdir / "bundle" / "repro.py"
    proc = subprocess.run([sys.executable, str(script)], cwd=workdir, capture_output=True, text=True, timeout=300,
                          env={"PATH": "", "PYTHONPATH": str(helpers)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert out.index("importing the backend module 'my_backend'") < out.index("my_backend imported")
    assert "evil_backend" not in script.read_text().split("READER_BACKEND", 1)[1].split("\n", 1)[0]


class _Payload:
    def __reduce__(self):  # noqa: ANN204 - what a crafted inputs.pt carries: code run at load time
        return (exec, (f"import pathlib; pathlib.Path({PWN!r} + '-unpickled').write_text('1')",))


def test_inputs_are_loaded_as_tensors_only(workdir, cli):
    _crafted_run(workdir)
    assert cli(["repro", ADD, "-o", "bundle"]) == 0
    inputs = workdir / "bundle" / "inputs.pt"
    inputs.write_bytes(pickle.dumps([_Payload()]))  # a plain pickle: torch.load reads it too
    proc = _run(workdir / "bundle" / "repro.py", workdir)
    assert proc.returncode != 0  # refused, not run
    assert "Weights only load failed" in proc.stderr or "weights_only" in proc.stderr, proc.stderr[-2000:]
    assert_nothing_ran(workdir)
