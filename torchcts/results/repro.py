"""`torchcts repro`: a standalone script (plus its inputs, saved with torch.save) for one case.

The script needs only torch and the backend's import: it loads the exact CPU samples, runs the op
on CPU and on the device, and compares with the run's tolerance using a small inline comparison
(the same rule as the oracle: torch.testing.assert_close with NaN == NaN, then the metrics).
It exits 0 when every sample matches, 1 when one differs or the device raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts.cases.model import Case
from torchcts.cases.repro_builders import ReproSpec, builder_for
from torchcts.errors import UsageError
from torchcts.manifest.schema import Manifest

SCRIPT = "repro.py"
INPUTS = "inputs.pt"

_TEMPLATE = '''\
"""Standalone repro of TorchCTS case {case_id}{run_note}.

{message}
Needs only torch and the backend's import; the inputs are in {inputs} beside this file.
Run: python {script}   (exit 0: every sample matches; 1: a mismatch or the device raised)
"""

import importlib
import os
import sys
import traceback

import torch

CASE = {case_id_lit}
DEVICE = {device_lit}
BACKEND_IMPORT = {backend_lit}
ATOL, RTOL = {atol!r}, {rtol!r}

if BACKEND_IMPORT:
    importlib.import_module(BACKEND_IMPORT)
OP = {call}  # bound after the backend import, which may register or replace it


def to(obj, device):
    """A copy of obj with every tensor on device (cloned, so in-place ops see fresh inputs)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone().to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to(o, device) for o in obj)
    if isinstance(obj, dict):
        return {{k: to(v, device) for k, v in obj.items()}}
    return obj


def leaves(obj, path=""):
    if isinstance(obj, (list, tuple)):
        for i, o in enumerate(obj):
            yield from leaves(o, f"{{path}}[{{i}}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, f"{{path}}[{{k!r}}]")
    else:
        yield path, obj


def compare(actual, expected):
    """None when equal within ATOL/RTOL (NaN equal to NaN), else a description with metrics."""
    pairs = list(zip(leaves(actual), leaves(expected)))
    if len(pairs) != len(list(leaves(expected))) or len(list(leaves(actual))) != len(pairs):
        return "outputs have a different structure"
    for (path, a), (_, e) in pairs:
        if not isinstance(e, torch.Tensor):
            if a != e:
                return f"{{path or 'output'}}: got {{a!r}}, expected {{e!r}}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"{{path or 'output'}}: expected a tensor, got {{type(a).__name__}}"
        a = a.detach().cpu()
        if a.shape != e.shape or a.dtype != e.dtype:
            return f"{{path or 'output'}}: got {{a.dtype}} {{tuple(a.shape)}}, expected {{e.dtype}} {{tuple(e.shape)}}"
        try:
            torch.testing.assert_close(a, e, atol=ATOL, rtol=RTOL, equal_nan=True, check_device=False, check_stride=False)
            continue
        except AssertionError:
            pass
        wide = torch.complex128 if a.dtype.is_complex else torch.float64
        a64, e64 = a.to(wide), e.to(wide)
        diff = (a64 - e64).abs()
        ok = (a64 == e64) | (torch.isnan(a64) & torch.isnan(e64)) | (diff <= ATOL + RTOL * e64.abs())
        bad = ~ok
        diff = diff.real if diff.is_complex() else diff
        rel = diff / e64.abs().clamp_min(torch.finfo(torch.float64).tiny)
        first = bad.nonzero()[0].tolist() if bad.any() else []
        return (f"{{path or 'output'}}: values differ: {{int(bad.sum())}}/{{a.numel()}} elements differ, "
                f"max abs error {{float(torch.where(bad, diff, 0).max()):.3g}}, "
                f"max rel error {{float(torch.where(bad, rel, 0).max()):.3g}} (atol {{ATOL:.3g}}, rtol {{RTOL:.3g}}); "
                f"first at index {{first}}: got {{a[tuple(first)].item()}}, expected {{e[tuple(first)].item()}}")
    return None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    samples = torch.load(os.path.join(here, {inputs_lit}), weights_only=False)
    print(f"case {{CASE}}: {call} on {{DEVICE}} vs cpu, {{len(samples)}} sample(s), atol {{ATOL}}, rtol {{RTOL}}")
    failed = 0
    for s in samples:
        args, kwargs = s["args"], s["kwargs"]
        expected = OP(*to(args, "cpu"), **to(kwargs, "cpu"))
        try:
            actual = OP(*to(args, DEVICE), **to(kwargs, DEVICE))
        except Exception as exc:
            failed += 1
            print(f"sample {{s['describe']}}: DEVICE RAISED {{type(exc).__name__}}: {{exc}}")
            traceback.print_exc()
            continue
        problem = compare(actual, expected)
        print(f"sample {{s['describe']}}: " + ("MISMATCH " + problem if problem else "ok"))
        failed += problem is not None
    print(f"{{failed}} of {{len(samples)}} sample(s) failed" if failed else "all samples match")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
'''


@dataclass
class ReproTarget:
    case: Case
    device: str
    manifest: Manifest
    record: dict[str, Any] | None
    run_name: str | None
    default_dir: Path


def safe_name(case_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in case_id.replace("/", "__"))


def _docstring_safe(text: str) -> str:
    return text.replace("\\", "/").replace('"""', "'''")


def render_script(target: ReproTarget, spec: ReproSpec) -> str:
    message = (target.record or {}).get("message")
    status = (target.record or {}).get("status")
    lit = repr  # Python literals (None, not null)
    return _TEMPLATE.format(
        case_id=target.case.id,
        run_note=f" (run {target.run_name})" if target.run_name else "",
        message=_docstring_safe(f"In that run it was {status}: {message}"[:500]) if status else "",
        inputs=INPUTS,
        script=SCRIPT,
        case_id_lit=lit(target.case.id),
        device_lit=lit(target.device),
        backend_lit=lit(target.manifest.backend_import),
        atol=spec.atol,
        rtol=spec.rtol,
        call=spec.call,
        inputs_lit=lit(INPUTS),
    )


def write_repro(target: ReproTarget, out_dir: Path | None = None) -> Path:
    """Write repro.py and inputs.pt for the target; returns the folder."""
    import torch

    spec = builder_for(target.case)(target.case, target.manifest, target.record)
    if not spec.samples:
        raise UsageError(f"case '{target.case.id}' produced no samples to reproduce")
    folder = out_dir or target.default_dir
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(spec.samples, folder / INPUTS)
    (folder / SCRIPT).write_text(render_script(target, spec), encoding="utf-8")
    return folder


def _find_in_registry(case_id: str) -> Case:
    from torchcts.cases.registry import SUITES, suite_cases

    suite = case_id.split("/", 1)[0]
    for name in [suite] if suite in SUITES else list(SUITES):
        for case in suite_cases(name):
            if case.id == case_id:
                return case
    raise UsageError(f"no case '{case_id}': pass an exact case id (see the run's cases.jsonl or "
                     "`torchcts show-skips --all`)")


def target_from_run(case_id: str, run_dir: Path) -> ReproTarget:
    from torchcts.results import rundir
    from torchcts.results.plan import read_plan

    run = rundir.read_run(run_dir)
    plan = {c.id: c for c in read_plan(run_dir)} if (run_dir / "plan.jsonl").is_file() else {}
    case = plan.get(case_id) or _find_in_registry(case_id)
    record = next((r for r in reversed(list(rundir.read_records(run_dir))) if r.get("id") == case_id), None)
    manifest = Manifest.from_json(run["manifest"])
    device = "cpu" if run.get("validation") else run["device"]["type"]
    return ReproTarget(case, device, manifest, record, run_dir.name, run_dir / "repro" / safe_name(case_id))


def target_from_registry(case_id: str, device: str, manifest: Manifest) -> ReproTarget:
    return ReproTarget(_find_in_registry(case_id), device, manifest, None, None, Path("repro") / safe_name(case_id))
