"""The opinfo suite: PyTorch's OpInfo database turned into conformance cases (docs/opinfo.md).

    build.py    case list from op_db (no op runs at collection)
    run.py      the runner: samples on the device and on CPU, compared
    samples.py  sample lookup, selection, device copies and descriptions
    repro.py    `materialize`: the exact CPU call of one case and sample, for repro scripts
"""

from __future__ import annotations

from torchcts.cases.opinfo.repro import materialize
from torchcts.model.case import Case


def cases() -> list[Case]:
    """Every opinfo case; importing op_db dominates the cost (seconds)."""
    from torchcts.cases.opinfo.build import build_cases
    from torchcts.cases.opinfo.samples import load_op_db

    return build_cases(load_op_db())


__all__ = ["cases", "materialize"]
