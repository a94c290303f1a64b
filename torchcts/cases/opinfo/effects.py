"""What a call does besides returning (issue 39 item 2): the arguments it leaves behind, and
results that must stay what they were while later calls run.

A kernel can return the right value and still be wrong: it writes its scratch into an input, it
forgets the running statistics CPU updates, it hands out a buffer that the next call of the same
shape overwrites. The OpInfo suite's value checks (cases/opinfo/run.py: check_call) judge two more
things on every sample of its functional kinds, explored samples included:

- `check_arguments`: every tensor argument after the device's call equals CPU's same argument after
  CPU's call (within the case's tolerance): a mutation CPU makes must be made alike, one CPU does
  not make is a failure ("an argument after the call").
- `Retained`: each sample's device result is kept alive, with a CPU snapshot of what it held when
  it was checked; after the case's last sample every result must still hold it, bit for bit.

Not with a property oracle (random ops draw differently on each side). PyTorch's
`SchemaCheckMode` (torch._subclasses.schema_check_mode) checks each aten call against its schema's
`(a!)` annotations; it clones every argument of every aten op a call makes (composites included),
which costs more than the call, so the comparison with CPU's arguments stands in for it: whatever
CPU's kernel (the reference) mutates is what the schema allows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torchcts.cases.opinfo.samples import tensors_of
from torchcts.oracle.compare import OracleMismatch, TolSpec, find_mismatch
from torchcts.oracle.tolerances import Tolerance


def arguments(sample: Any) -> list[torch.Tensor]:
    """The sample's tensor arguments, in order (input, positional, keyword)."""
    return tensors_of((sample.input, sample.args, sample.kwargs))


def check_arguments(device_sample: Any, cpu_sample: Any, tol: TolSpec) -> None:
    """OracleMismatch when a tensor argument after the device's call differs from CPU's after CPU's."""
    mismatch = find_mismatch(arguments(device_sample), arguments(cpu_sample), tol, "argument")
    if mismatch is not None:
        mismatch.what = f"an argument after the call differs from CPU's after CPU's call: {mismatch.what}"
        raise OracleMismatch(mismatch)


def _snapshot(out: Any) -> Any:
    return pytree.tree_map(lambda t: t.detach().cpu().clone() if isinstance(t, torch.Tensor) else t, out)


@dataclass
class Retained:
    """A case's device results, alive until its last sample, each with what it held when checked."""

    kept: list[tuple[dict[str, Any], Any, Any]] = field(default_factory=list)

    def keep(self, described: dict[str, Any], actual: Any) -> None:
        """`described`: the sample as the case describes it (its index, text), named if it fails."""
        self.kept.append((described, actual, _snapshot(actual)))

    def check(self, describe: Callable[..., None]) -> None:
        """OracleMismatch, the sample described, for the first result that changed since it was checked."""
        for described, actual, held in self.kept:
            mismatch = find_mismatch(actual, held, Tolerance(0.0, 0.0, signed_zero=True))
            if mismatch is not None:
                # the sample is named, but not as `sample_index`: one sample alone does not reproduce
                # it, so the repro line reruns the whole case and no one-sample script is offered
                describe(retained_sample=described.get("sample_index"), sample=described.get("sample"))
                mismatch.what = ("the result changed after later calls of the op (a buffer the device reused, "
                                 f"or a write not finished when it returned): {mismatch.what}")
                raise OracleMismatch(mismatch)
