"""`torchcts repro`: a standalone script (plus its inputs, saved with torch.save) for one case.

The script needs only torch and the backend's import: it loads the CPU samples (the failing one
when the run names it), rebuilds each argument on CPU and on the device with its exact layout
(shape, strides, storage offset, dtype, shared storage; results/repro/body.py), calls the op
the way the case's kind does (call, in-place, out=, backward, errors) and compares with the run's
tolerance: outputs, arguments after the call (in-place and out= writes), and for in-place/out=
that the op returned self/out. It exits 0 when every sample matches, 1 when one differs, the
device raised or the call hung past the run's per-case timeout.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchcts import settings
from torchcts.cases.explore.codec import MEMORY_FORMATS
from torchcts.cases.repro_builders import ReproSpec, builder_for
from torchcts.errors import UsageError, first_line
from torchcts.model.case import Case
from torchcts.model.manifest import Manifest
from torchcts.model.record import CaseRecord
from torchcts.oracle.precision import COND_FACTOR, CPU_ILL_ULPS, RESCUE_FACTOR, WORSE_FACTOR, WORSE_FLOOR_ULPS
from torchcts.results.reports.quoting import one_line, py_docstring, py_literal
from torchcts.results.repro import sim_env
from torchcts.safe_io import make_folder, write_atomic

SCRIPT = "repro.py"
INPUTS = "inputs.pt"

_HEADER = '''\
"""Standalone repro of TorchCTS case {case_id}{run_note}.

{message}
Needs only torch and the backend module you name (--import MODULE or $TORCHCTS_BACKEND_IMPORT);
it never imports from its own folder and loads its inputs with torch.load(weights_only=True). \
The inputs are in {inputs} beside this file, with their
exact layout: each tensor reaches the device as in the run (TorchCTS's own copier): its shape, strides
and dtype, arguments that shared memory sharing it again, an out= destination over its whole storage.
Run: python {script} [--import MODULE]   (exit 0: the sample matches CPU; 1: a mismatch, the device raised, or it
hung for TIMEOUT_S seconds; 2: the device cannot be reached, nothing was reproduced; a crash kills the process,
printing its Python stack)
"""

import os
import sys

# Never import from this folder (a bundle may carry a planted torch.py or traceback.py): Python put
# the script's folder first on sys.path, resolved (a linked folder on the way reads as its target),
# so both sides are compared resolved; it goes before anything else is imported.
_HERE = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != _HERE]

import faulthandler  # noqa: E402
import importlib  # noqa: E402
import traceback  # noqa: E402

faulthandler.enable()  # a crash (SIGSEGV, SIGABRT) prints the Python stack it died in, not just exit 139

import torch  # noqa: E402

CASE = {case_id_lit}
DEVICE = {device_lit}
RUN_BACKEND = {run_backend_lit}  # what the run imported: shown, never imported from this file's data
READER_BACKEND = {backend_lit}  # what the repro command was told to import (--import, or the reader's manifest)
KIND = {kind_lit}  # call | inplace | out | backward | errors
ATOL, RTOL = {atol!r}, {rtol!r}
TRUTH = {truth_lit}  # None | "rescue" | "strict": also judge by the float64 truth as the run did (forward cases)
TRUTH_EPS = {truth_eps!r}  # the case dtype's eps: how far the sensitivity moves each input
RESCUE_FACTOR, WORSE_FACTOR, WORSE_FLOOR_ULPS, COND_FACTOR, CPU_ILL_ULPS = {truth_constants!r}
TIMEOUT_S = {timeout!r}
INPUTS = {inputs_lit}
HOST = {host_lit}  # {{HOST: tensor}} marks an argument that stays on the host (CPU)
FORMAT = {format_lit}  # {{FORMAT: "channels_last"}} is torch.channels_last (torch.save cannot pickle one)
MEMORY_FORMATS = {formats_lit}  # the names FORMAT may hold
STRICT_FORMATS = {strict_lit}  # the formats whose result's strides are judged (TorchCTS: check_memory_format)
OP_NAME = {call_lit}
IMPORT_ENV = "TORCHCTS_BACKEND_IMPORT"


def backend_module():
    """The backend to import: `--import MODULE` on this script's command line, else $TORCHCTS_BACKEND_IMPORT,
    else what the repro command was told; never a name from the run folder."""
    argv = sys.argv[1:]
    for i, arg in enumerate(argv):
        if arg == "--import" and i + 1 < len(argv):
            return argv[i + 1] or None
        if arg.startswith("--import="):
            return arg.split("=", 1)[1] or None
    return os.environ.get(IMPORT_ENV) or READER_BACKEND

{sim_env_block}
BACKEND_IMPORT = backend_module()
if BACKEND_IMPORT:
    print(f"importing the backend module {{BACKEND_IMPORT!r}} (from --import, ${{IMPORT_ENV}} or the repro command)",
          flush=True)
    importlib.import_module(BACKEND_IMPORT)
elif RUN_BACKEND:
    print(f"note: the run imported the backend module {{RUN_BACKEND!r}}; this script imports none unless told: "
          f"pass --import MODULE or set ${{IMPORT_ENV}}", flush=True)
try:  # a device this process cannot reach reproduces nothing: never report its error as the case's
    torch.empty(1, device=DEVICE)
except Exception as _exc:  # noqa: BLE001
    _hint = f"--import {{RUN_BACKEND}}" if RUN_BACKEND and not BACKEND_IMPORT else "--import MODULE"
    print(f"cannot reach device {{DEVICE!r}} ({{type(_exc).__name__}}: {{str(_exc).strip()[:200]}}): nothing was "
          f"reproduced; import the backend that registers it: python {{sys.argv[0]}} {{_hint}}", flush=True)
    sys.exit(2)
OP = {call}  # bound after the backend import, which may register or replace it
'''
# A sim run's variables (results/repro/sim_env.py: a planted fault), set before the backend is imported so
# the script reproduces what the run saw; a variable the reader sets (even empty) wins.
_SIM_ENV_BLOCK = """
SIM_ENV = {sim_env_lit}  # the sim's variables the run had
for _name, _value in SIM_ENV.items():
    if _name in os.environ:
        print(f"note: the run had {{_name}}={{_value}}; using this environment's {{_name}}={{os.environ[_name]!r}}", flush=True)
    else:
        os.environ[_name] = _value
        print(f"setting {{_name}}={{_value}} as the run had it (set {{_name}}= to run without it)", flush=True)
"""
HOST_KEY = "__host__"
FORMAT_KEY = "__memory_format__"
DEFAULT_TIMEOUT_S = 300
MIN_TIMEOUT_S = 30  # a script starts cold (no warmed worker): never below this


@dataclass
class ReproTarget:
    case: Case
    device: str
    manifest: Manifest
    record: CaseRecord | None  # the run's last record of the case, None without a run
    run_name: str | None
    default_dir: Path
    run_dir: Path | None = None  # the run folder the default folder lies in (writes stay inside it)
    timeout_s: float | None = None  # the run's per-case limit: the script's hang detector
    backend_import: str | None = None  # the reader's backend module (never the run folder's): --import, its manifest
    sim_env: dict[str, str] = field(default_factory=dict)  # the sim's variables the run had (results/repro/sim_env.py)


# A folder name's longest form: file systems refuse names past 255 bytes (ENAMETOOLONG), and a
# crafted 300-character case id must not read as a full disk.
MAX_NAME = 120


def safe_name(case_id: str) -> str:
    """A folder name for a case: no separators, never '.', '..' or a hidden name, at most MAX_NAME
    characters (a longer id keeps its start and a hash of the whole, so two long ids never share one)."""
    name = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_" for ch in case_id.replace("/", "__"))
    name = "_" + name if not name or name.startswith(".") else name
    if len(name) > MAX_NAME:
        name = f"{name[:MAX_NAME - 17]}-{hashlib.sha256(case_id.encode('utf-8', 'backslashreplace')).hexdigest()[:16]}"
    return name


_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _script_timeout(value: Any) -> float:
    """The run's per-case limit as a finite literal (run.json is untrusted: nan, inf, text)."""
    try:
        seconds = float(value or DEFAULT_TIMEOUT_S)
    except (TypeError, ValueError):
        seconds = DEFAULT_TIMEOUT_S
    return max(seconds, MIN_TIMEOUT_S) if math.isfinite(seconds) else DEFAULT_TIMEOUT_S


def render_script(target: ReproTarget, spec: ReproSpec) -> str:
    """The script text: data enters only as literals or docstring text (results/reports/quoting.py)."""
    from torchcts.cases.opinfo.run import STRICT_FORMATS
    from torchcts.results.repro.body import BODY

    message = target.record.message if target.record else None
    status = target.record.status if target.record else None
    lit = py_literal  # Python literals (None, not null)
    if not _CALL.fullmatch(spec.call):
        raise UsageError(f"case '{one_line(target.case.id)}': the op {spec.call!r} is not a dotted name, "
                         "so no standalone script can call it: use the case's `torchcts run --case` command")
    return _HEADER.format(
        case_id=py_docstring(target.case.id),
        run_note=py_docstring(f" (run {target.run_name})") if target.run_name else "",
        message=py_docstring(f"In that run it was {status}: {message}"[:500]) if status else "",
        inputs=INPUTS,
        script=SCRIPT,
        case_id_lit=lit(target.case.id),
        device_lit=lit(target.device),
        run_backend_lit=lit(target.manifest.backend_import if isinstance(target.manifest.backend_import, str) else None),
        backend_lit=lit(target.backend_import),
        kind_lit=lit(spec.kind),
        atol=spec.atol,
        rtol=spec.rtol,
        truth_lit=lit(spec.truth),
        truth_eps=float(spec.truth_eps),
        truth_constants=(RESCUE_FACTOR, WORSE_FACTOR, WORSE_FLOOR_ULPS, COND_FACTOR, CPU_ILL_ULPS),
        timeout=_script_timeout(target.timeout_s),
        inputs_lit=lit(INPUTS),
        host_lit=lit(HOST_KEY), format_lit=lit(FORMAT_KEY), formats_lit=lit(MEMORY_FORMATS),
        strict_lit=lit(tuple(str(f).removeprefix("torch.") for f in STRICT_FORMATS)),
        call_lit=lit(spec.call),
        call=spec.call,
        sim_env_block=_SIM_ENV_BLOCK.format(sim_env_lit=lit(target.sim_env)) if target.sim_env else "",
    ) + shared_source() + BODY


def shared_source() -> str:
    """The torch-only modules a script runs as they are, without their docstrings: it judges and
    measures a difference with the oracle's own lines and copies its inputs with the OpInfo suite's
    own copier (it cannot import TorchCTS), never copies of them that drift."""
    from torchcts.cases.opinfo import copier
    from torchcts.oracle import metrics

    parts = []
    for module, what in ((metrics, "the tolerance rule, the record's metrics, the truth's ulps"),
                         (copier, "how the run copied a sample to the device")):
        text = inspect.getsource(module)
        docstring = ast.parse(text).body[0]
        body = "".join(text.splitlines(keepends=True)[docstring.end_lineno:]).strip("\n")
        parts.append(f"# The run's own lines ({module.__name__.rsplit('.', 1)[-1]}, copied whole): {what}\n{body}\n")
    return "\n\n" + "\n\n".join(parts) + "\n\n"


def _saved_sample(sample: dict[str, Any]) -> dict[str, Any]:
    """The sample as inputs.pt stores it: host arguments marked, the layout of each tensor described."""
    args = list(sample["args"])
    for i in sample.get("host", ()):
        args[i] = {HOST_KEY: args[i]}
    describe = dict(sample.get("describe") or {})
    describe.setdefault("args", [describe_value(a) for a in sample["args"]])
    if sample.get("kwargs"):
        describe.setdefault("kwargs", {k: describe_value(v) for k, v in sample["kwargs"].items()})
    kwargs = {k: _saved_format(v) for k, v in (sample.get("kwargs") or {}).items()}
    return {"args": [_saved_format(a) for a in args], "kwargs": kwargs, "describe": describe}


def _saved_format(value: Any) -> Any:
    """A torch.memory_format as {FORMAT_KEY: its name} (torch.save cannot pickle one); anything else as is."""
    import torch

    if isinstance(value, torch.memory_format):
        name = str(value).removeprefix("torch.")
        return {FORMAT_KEY: name} if name in MEMORY_FORMATS else value
    return value


def describe_value(value: Any) -> Any:
    """Shape, strides, storage offset and dtype of a tensor (lists and tuples element-wise)."""
    import torch

    if isinstance(value, torch.Tensor):
        text = f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
        if value.layout != torch.strided:
            return f"{text} {str(value.layout).removeprefix('torch.')}"
        if not value.is_contiguous():
            text += f" strides={list(value.stride())}"
        if value.storage_offset():
            text += f" offset={value.storage_offset()}"
        return text + (" conj" if value.is_conj() else " neg" if value.is_neg() else "")
    if isinstance(value, (list, tuple)):
        return [describe_value(v) for v in value]
    return repr(value)[:80]


def write_repro(target: ReproTarget, out_dir: Path | None = None, sample: int | None = None) -> Path:
    """Write repro.py and inputs.pt for the target (sample: this index, else the record's failing
    one); returns the folder."""
    import torch

    try:
        spec = builder_for(target.case)(target.case, target.manifest,
                                        target.record.info if target.record else None, sample)
    except (AttributeError, LookupError, TypeError, ValueError) as exc:  # a plan line naming what does not exist
        where = f"{target.run_dir.name}/plan.jsonl: " if target.run_dir is not None else ""
        raise UsageError(f"{where}case '{target.case.id}' cannot be rebuilt ({type(exc).__name__}: {first_line(exc, 120)}): "
                         "its plan entry was edited, or the case is not in this TorchCTS; rerun it") from None
    if not spec.samples:
        raise UsageError(f"case '{target.case.id}' produced no samples to reproduce")
    folder = out_dir or target.default_dir
    root = target.run_dir if out_dir is None and target.run_dir is not None else folder
    make_folder(root, folder)  # inside the run folder: a planted `repro -> /elsewhere` link is refused
    buffer = io.BytesIO()
    torch.save([_saved_sample(s) for s in spec.samples], buffer)
    write_atomic(folder, INPUTS, buffer.getvalue(), root=root)
    write_atomic(folder, SCRIPT, render_script(target, spec), root=root)
    return folder


def _find_in_registry(case_id: str) -> Case:
    from torchcts.cases.registry import SUITES, suite_cases

    suite = case_id.split("/", 1)[0]
    for name in [suite] if suite in SUITES else list(SUITES):
        for case in suite_cases(name):
            if case.id == case_id:
                return case
    raise UsageError(f"no case '{case_id}': pass an exact case id (see the run's cases.jsonl or "
                     "`torchcts show-skips --details`)")


def target_from_run(case_id: str, run_dir: Path) -> ReproTarget:
    from torchcts.results.records import rundir
    from torchcts.results.records.plan import iter_plan

    run = rundir.read_run(run_dir)
    planned = None
    for c in iter_plan(run_dir) if (run_dir / "plan.jsonl").is_file() else ():  # streamed, every line checked
        if c.id == case_id:
            planned = c
    case = planned or _find_in_registry(case_id)
    record = None
    for r in rundir.read_records(run_dir):  # streamed: the last record of the case wins
        if r.id == case_id:
            record = r
    manifest = run.manifest
    if manifest is None or run.missing_keys("manifest") or run.unread_keys("manifest"):  # as Manifest(**claims) refused
        raise UsageError(f"{run_dir.name}/run.json holds no valid manifest: the run folder was edited or "
                         "damaged; rerun, or pass --device and --manifest without --run")
    device = "cpu" if run.validation else str(run.device_type)
    return ReproTarget(case, device, manifest, record, run_dir.name, run_dir / "repro" / safe_name(case_id),
                       run_dir, run.timeout_s, sim_env=sim_env.of_run(run))


def target_from_registry(case_id: str, device: str, manifest: Manifest) -> ReproTarget:
    return ReproTarget(_find_in_registry(case_id), device, manifest, None, None, Path(settings.REPRO_DIR) / safe_name(case_id))
