"""Benchmark (not a test): opinfo case-list build time and per-case harness overhead.

    PYTHONPATH=. python3 bench/opinfo_overhead.py [OP] [DTYPE]
"""

from __future__ import annotations

import sys
import time

import torch


def main(op_name: str = "add", dtype_name: str = "float32") -> None:
    t0 = time.perf_counter()
    from torchcts.cases.opinfo.samples import generate, load_op_db, lookup

    db = load_op_db()
    t1 = time.perf_counter()
    from torchcts.cases.opinfo.build import build_cases

    cases = build_cases(db)
    t2 = time.perf_counter()
    print(f"op_db import {t1 - t0:.2f}s; build {len(cases)} cases {t2 - t1:.2f}s")

    from torchcts.cases.context import CaseContext
    from torchcts.engine.runner import run_case as run
    from torchcts.manifest.templates import validation_manifest
    from torchcts.model.case import Case

    op = lookup(op_name)
    dtype = getattr(torch, dtype_name)
    (case,) = [c for c in cases if c.id == f"opinfo/{op_name}/{dtype_name}/forward"]
    samples = list(op.sample_inputs("cpu", dtype))
    reps = 20
    t3 = time.perf_counter()
    for _ in range(reps):
        for s in generate(op, dtype):
            op.op(s.input, *s.args, **s.kwargs)
            op.op(s.input, *s.args, **s.kwargs)  # device + reference
    t4 = time.perf_counter()
    for _ in range(reps):
        run(Case.from_json(case.to_json()), CaseContext(torch.device("cpu"), validation_manifest()))
    t5 = time.perf_counter()
    gen_and_ops = (t4 - t3) / reps
    harness = (t5 - t4) / reps
    print(f"{case.id}: {len(samples)} samples; sample generation + 2x op {gen_and_ops * 1e3:.2f} ms; "
          f"whole case {harness * 1e3:.2f} ms; harness overhead {(harness - gen_and_ops) * 1e3 / len(samples):.3f} ms/sample")


if __name__ == "__main__":
    main(*sys.argv[1:])
