"""The suite registry: a new suite is one entry here and one module that defines `cases()`."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

from torchcts.manifest.schema import KNOWN_SUITE_NAMES, extra_suites
from torchcts.model.case import Case

__all__ = ["KNOWN_SUITE_NAMES", "SUITES", "Suite", "iter_cases", "suite_cases"]


@dataclass(frozen=True)
class Suite:
    name: str
    module: str
    description: str
    # further modules whose cases() belong to this suite, after the module's own: a suite split in
    # several files composes here, since a suite module imports no other (docs/architecture.md)
    parts: tuple[str, ...] = ()


SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        Suite("operators", "torchcts.cases.suites.operators",
              "hand-written operator checks: core primitives (level 1), aliasing and mutation (level 3)",
              parts=("torchcts.cases.suites.core", "torchcts.cases.suites.reductions", "torchcts.cases.suites.aliasing")),
        Suite("opinfo", "torchcts.cases.opinfo", "every OpInfo op, dtype and variant against the CPU oracle"),
        Suite("dtypes", "torchcts.cases.suites.dtypes", "type promotion, casts, result_type, scalar, bool and complex rules"),
        Suite("errors", "torchcts.cases.suites.errors", "device mismatch, out-of-range indices, shape and dtype mismatches"),
        Suite("rng", "torchcts.cases.suites.rng", "seeded reproducibility, ranges and distributions of random ops"),
        Suite("serialization", "torchcts.cases.suites.serialization", "torch.save/torch.load round trips of device tensors"),
        Suite("autograd", "torchcts.cases.suites.autograd", "gradients vs CPU, gradcheck, hooks, version counters"),
        Suite("strides", "torchcts.cases.suites.strides", "non-contiguous inputs, as_strided, memory formats"),
        Suite("training", "torchcts.cases.suites.training", "optimizer steps of small models vs the same steps on CPU"),
        Suite("device_api", "torchcts.cases.suites.device_api", "torch.<device> module, guards, streams, events, accelerator"),
        Suite("memory", "torchcts.cases.suites.memory", "allocator stats, empty_cache, stale data, recoverable OOM"),
        Suite("compiler", "torchcts.cases.suites.compiler", "torch.compile vs eager on the device and on CPU"),
        Suite("compiler_ops", "torchcts.cases.suites.compiler_ops",
              "torch.compile of representative OpInfo ops: static, dynamic shapes, graph breaks, in-place"),
        Suite("workloads", "torchcts.cases.suites.workloads", "small transformer, conv net, embedding+LSTM vs CPU"),
        Suite("multi_device", "torchcts.cases.suites.multi_device", "copies and ops across device indices, device guards"),
        Suite("stress", "torchcts.cases.suites.stress", "large tensors, many allocations, long op chains, edge shapes"),
        Suite("inplace_views", "torchcts.cases.suites.inplace_views",
              "every in-place op applied to views of a larger base (offset, select, transposed, strided)"),
        Suite("limits", "torchcts.cases.suites.limits",
              "reductions and scans of integer, bool and half dtypes near the dtype's limits, 10^4+ elements"),
        Suite("tiling", "torchcts.cases.suites.tiling",
              "matmul, conv, attention at p-1/p/p+1 for p = 64..8192; reductions over 10^5-10^6 elements"),
        Suite("mixed_dtypes", "torchcts.cases.suites.mixed_dtypes",
              "binary, ternary, index and cat/stack ops with inputs of different dtypes (and index dtypes)"),
        Suite("random_ops", "torchcts.cases.suites.random_ops",
              "random ops' deterministic parts (dropout scaling, eval mode, permutations, ranges) and moments"),
        # dispatcher surfaces nobody else reaches (issue 20; docs/coverage.md: Surface suites)
        Suite("foreach", "torchcts.cases.suites.foreach",
              "every _foreach_* overload and fused optimizer step on lists of mixed shapes, strides and dtypes"),
        Suite("out_variants", "torchcts.cases.suites.out_variants",
              "every out= overload of one/two-tensor ops: sized, empty, wrong size, dtype and device, aliased"),
        Suite("query_mutation", "torchcts.cases.suites.query_mutation",
              "is_*/_has_* queries, set_ (every overload), resize_, item(), copies, in-place view mutations"),
        Suite("transfers", "torchcts.cases.suites.transfers",
              "host <-> device copies of offset, step and transposed slices with non_blocking and copy flags (level 3)"),
        Suite("magnitude", "torchcts.cases.suites.magnitude",
              "index_select, gather, embedding, take, indexing, index_add and one_hot on tables past 2^16 "
              "rows, at the indices that cross it (level 5)"),
        Suite("subnormals", "torchcts.cases.suites.subnormals",
              "subnormal results and inputs of products, differences, sums and casts, judged by the "
              "manifest's `subnormals` claim (preserve or flush), bit for bit (level 5)"),
        Suite("special_values", "torchcts.cases.suites.special_values",
              "every special_* overload (and its out=) at its domain's edges: poles, ±1, huge, subnormal, inf, nan"),
        # issue 32: automatic mixed precision (docs/semantic-suites.md)
        Suite("amp", "torchcts.cases.suites.amp",
              "autocast's lower/float32/promote op classes per claimed low dtype (level 4), GradScaler (level 6)"),
        Suite("data_loading", "torchcts.cases.suites.data_loading",
              "pin_memory, DataLoader workers (and pinned batches), non_blocking copies before compute, "
              "tensors shared between processes (level 6)"),
        Suite("profiler", "torchcts.cases.suites.profiler",
              "torch.profiler: the device's op events by name, order and shapes, device kernels, memory events (level 6)"),
        Suite("distributed", "torchcts.cases.suites.distributed",
              "c10d collectives, send/recv, barrier, async handles, object collectives and DDP on 2 local ranks (level 7)"),
        # issue 50: the bugs real backends shipped, one case per report (docs/bug-classes.md)
        Suite("field", "torchcts.cases.suites.field",
              "one case per real report of a backend bug (MPS, XPU, ROCm, Ascend, XLA, DirectML...), id "
              "field/<class>/<owner>-<repo>-<number>, the report linked (levels 2-7 by area)"),
        Suite("capabilities", "torchcts.cases.suites.capabilities",
              "what the backend reports (torch.accelerator, the device module) and which dtypes basically work"),
        Suite("generated", "torchcts.cases.schema",
              "one case per dispatcher surface no other suite names, inputs made from its schema (level 8)"),
    )
}

# Testing hook for suite developers: TORCHCTS_EXTRA_SUITES adds suites (manifest/schema.py).
for _name, _module in extra_suites().items():
    SUITES[_name] = Suite(_name, _module, "extra suite from TORCHCTS_EXTRA_SUITES")


def suite_cases(name: str) -> list[Case]:
    """Every case of one suite, in a stable order (from the on-disk cache when valid)."""
    from torchcts.cases.cache import cached_cases

    def build() -> list[Case]:
        suite = SUITES[name]
        return [c for module in (suite.module, *suite.parts) for c in _suite_module(name, module).cases()]

    # The cache key covers TorchCTS's own source only: suites from elsewhere are always rebuilt.
    return cached_cases(name, build) if SUITES[name].module.startswith("torchcts.") else build()


def _suite_module(name: str, module: str) -> ModuleType:
    """The suite's module; one named by TORCHCTS_EXTRA_SUITES that does not import is the user's
    setting (one line, exit 2), not TorchCTS's failure."""
    from torchcts.errors import UsageError, first_line

    try:
        found = importlib.import_module(module)
    except ImportError as exc:
        if extra_suites().get(name) != module:
            raise
        raise UsageError(f"TORCHCTS_EXTRA_SUITES: suite '{name}' names module '{module}', which cannot be imported "
                         f"({type(exc).__name__}: {first_line(exc, 160)}): fix the variable or unset it") from None
    if extra_suites().get(name) == module and not callable(getattr(found, "cases", None)):
        raise UsageError(f"TORCHCTS_EXTRA_SUITES: suite '{name}' names module '{module}', which is not a suite (it has "
                         "no cases() function): name a suite module or unset the variable")
    return found


def iter_cases(suites: list[str] | None = None) -> Iterator[Case]:
    for name in SUITES:
        if suites is None or name in suites:
            yield from suite_cases(name)
