"""Run folders crafted by hand (run.json, plan.jsonl, cases.jsonl), as a downloaded CI artifact could be."""

from __future__ import annotations

import json
from pathlib import Path

from torchcts.manifest.templates import validation_manifest
from torchcts.results.records import rundir

# Quotes, a triple quote and a newline that would end a docstring or comment, shell and HTML
# injection, a terminal escape sequence (title change + red) and a backslash escape.
PWN = "PWNED"


HOSTILE = (f'q\'"""\nimport pathlib; pathlib.Path("{PWN}").write_text("1")\n"""$(touch {PWN}2)`id`'
           '<script>alert(1)</script>\x1b]0;title\x07\x1b[31mred\\x41\\')


HOSTILE_NAME = HOSTILE.replace("/", "_")  # a folder name cannot hold "/"


def case_json(case_id: str, runner: str = "torchcts.cases.suites.operators:elementwise_add") -> dict:
    return {"id": case_id, "suite": "operators", "level": 1, "runner": runner, "params": {}, "ops": ["aten::add.Tensor"],
            "dtype": "float32", "dtypes": [], "requires": [], "oracle": "cpu", "kind": "", "not_applicable": None}


def fake_run(root: Path, name: str, records: list[dict], plan: list[dict] | None = (), status: str = "complete",
             device: str = "cpu", expectations: list | None = None) -> Path:
    """A run folder as `torchcts run` leaves it (or as someone could craft it); `plan=None`: no plan.jsonl."""
    run_dir = root / "results" / name
    run_dir.mkdir(parents=True)
    manifest = validation_manifest().to_json()
    manifest["expectations"] = expectations or []
    spec = {"name": name, "torchcts": "0", "torch": {"torch": "2.x"}, "device": {"type": device, "gate": device},
            "gate": device, "validation": False, "manifest": manifest, "manifest_hash": "h", "selection": {},
            "started": "2026-01-01T00:00:00Z", "ended": None, "status": status, "filtered": 0, "planned": len(plan or [])}
    (run_dir / "run.json").write_text(json.dumps(spec))
    (run_dir / "cases.jsonl").write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    if plan is not None:
        (run_dir / "plan.jsonl").write_text("".join(json.dumps(c) + "\n" for c in plan))
    rundir.point_latest(root / "results", run_dir)
    return run_dir


def failed(case_id: str, message: str = HOSTILE, **extra) -> dict:
    return {"id": case_id, "suite": "operators", "level": 1, "dtype": "float32", "status": "failed",
            "message": message, "repro": f"torchcts run --device cpu --case '{case_id}'", **extra}


def assert_nothing_ran(folder: Path) -> None:
    assert not list(folder.rglob(f"{PWN}*")), "data from a record was executed"


def tiny_coverage_run(root: Path) -> Path:
    run = root / "results" / "20260101T000000Z-abcdef"
    run.mkdir(parents=True)
    spec = {"name": run.name, "status": "complete", "device": {"type": "cpu"}, "manifest": {}, "selection": {},
            "validation": True}
    (run / "run.json").write_text(json.dumps(spec))
    recs = [
        {"id": "a/1", "suite": "a", "status": "passed", "dispatched": ["aten::add.Tensor", "aten::native_layer_norm_backward"]},
        {"id": "a/2", "suite": "a", "status": "failed", "dispatched": ["aten::add.Tensor", "aten::_foreach_add.List"]},
        {"id": "a/3", "suite": "a", "status": "not_applicable", "dispatched": ["aten::mul.Tensor"]},  # not counted
        {"id": "a/4", "suite": "compiler", "status": "passed", "dispatch_unobserved": "torch.compile traces ..."},
        {"id": "g/1", "suite": "generated", "status": "pending", "message": "CPU rejects every input profile",
         "ops": ["aten::nll_loss_forward"]},
        {"id": "g/2", "suite": "generated", "status": "not_applicable", "message": "pending kernel: not a pending case"},
        {"id": "a/5", "suite": "a", "status": "passed", "dispatched": "aten::mul.Tensor"},  # malformed: not a list
    ]
    (run / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (root / "results" / "latest").write_text(run.name + "\n")
    return run
